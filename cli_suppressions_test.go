package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mailbolt/storage/storagetest"
)

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSuppressionsImportExportOfflineAndThroughTheServer: the CLI imports
// a CSV file into one account and exports it back, with the database
// opened by the CLI and through a running server's socket alike; a bad
// row refuses the file by its line; the other account is untouched; what
// the CLI imported is what the API exports.
func TestSuppressionsImportExportOfflineAndThroughTheServer(t *testing.T) {
	dir, files := t.TempDir(), t.TempDir()
	d := []string{"--data-dir", dir}
	args := func(a ...string) []string { return append(a, d...) }

	acme := lastLine(mustRun(t, args("accounts", "create", "--name", "Acme")...))
	other := lastLine(mustRun(t, args("accounts", "create", "--name", "Other")...))

	// Server stopped: the CLI opens the database itself.
	in := writeFile(t, files, "in.csv", "email,reason,stream\nAnn@X.test,complaint,\nann@x.test,,\nbob@x.test,unsubscribe,broadcast\n")
	out := mustRun(t, args("suppressions", "import", "--account", acme, in)...)
	if !strings.Contains(out, "imported 3 rows into account "+acme+": 2 added, 1 already present") {
		t.Errorf("import: %s", out)
	}
	want := "recipient,reason,stream\nann@x.test,complaint,\nbob@x.test,unsubscribe,broadcast\n"
	if got := mustRun(t, args("suppressions", "export", "--account", acme)...); got != want {
		t.Errorf("export to stdout:\n%s\nwant\n%s", got, want)
	}
	bad := writeFile(t, files, "bad.csv", "recipient,reason\ncid@x.test,manual\ndan@x.test,bored\n")
	runFails(t, "line 3: reason", args("suppressions", "import", "--account", acme, bad)...)
	runFails(t, "NOT_FOUND", args("suppressions", "import", "--account", "no-such-account", in)...)
	runFails(t, "no such file", args("suppressions", "import", "--account", acme, filepath.Join(files, "missing.csv"))...)
	if got := mustRun(t, args("suppressions", "export", "--account", other, "-")...); got != "recipient,reason,stream\n" {
		t.Errorf("the other account's export: %q", got)
	}

	// Server running: the same commands go through the socket.
	base, _, stop := startServe(t, dir)
	mustRun(t, args("suppressions", "import", "--account", other, in)...)
	runFails(t, "line 3: reason", args("suppressions", "import", "--account", other, bad)...)
	runFails(t, "stream", args("suppressions", "export", "--account", other, "--stream", "marketing")...)
	exported := filepath.Join(files, "acme.csv")
	mustRun(t, args("suppressions", "export", "--account", acme, exported)...)
	if got := string(mustRead(t, exported)); got != want {
		t.Errorf("export to a file through the server:\n%s", got)
	}
	if got := mustRun(t, args("suppressions", "export", "--account", acme, "--stream", "broadcast")...); got != "recipient,reason,stream\nbob@x.test,unsubscribe,broadcast\n" {
		t.Errorf("broadcast export: %q", got)
	}

	// 9,998 rows go over the socket in one import (10,000 in the account
	// with the two above, the most one import takes back), and the API
	// exports exactly what the CLI imported.
	var big strings.Builder
	big.WriteString("recipient\n")
	for i := range 9998 {
		fmt.Fprintf(&big, "u%05d@x.test\n", i)
	}
	bigFile := writeFile(t, files, "big.csv", big.String())
	if out := mustRun(t, args("suppressions", "import", "--account", acme, bigFile)...); !strings.Contains(out, "9998 added, 0 already present") {
		t.Errorf("big import: %s", out)
	}
	key := lastLine(mustRun(t, args("keys", "create", "--account", acme, "--name", "export", "--scopes", "suppressions:read")...))
	req, _ := http.NewRequest("GET", base+"/v1/suppressions/export", nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	api, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("API export: %d %v", resp.StatusCode, err)
	}
	cli := mustRun(t, args("suppressions", "export", "--account", acme)...)
	if string(api) != cli || strings.Count(cli, "\n") != 1+10000 {
		t.Errorf("API export (%d bytes) and CLI export (%d bytes, %d lines) differ", len(api), len(cli), strings.Count(cli, "\n"))
	}
	stop()

	// Stopped again: the file exported through the server imports back.
	fresh := lastLine(mustRun(t, args("accounts", "create", "--name", "Fresh")...))
	mustRun(t, args("suppressions", "export", "--account", acme, exported)...)
	if out := mustRun(t, args("suppressions", "import", "--account", fresh, exported)...); !strings.Contains(out, "10000 added") {
		t.Errorf("round trip: %s", out)
	}
	if got := mustRun(t, args("suppressions", "export", "--account", fresh)...); got != cli {
		t.Error("the round trip changed the list")
	}
	if entries, _ := os.ReadDir(files); len(entries) != 4 { // in, bad, acme, big: no temporary files left
		t.Errorf("files left: %v", entries)
	}
}

// An export that cannot be written names the file given, never the
// temporary file beside it: over a directory, and into a directory the
// command cannot write (where permissions bind this process).
func TestSuppressionsExportErrorNamesTheFile(t *testing.T) {
	dir, files := t.TempDir(), t.TempDir()
	acct := lastLine(mustRun(t, "accounts", "create", "--name", "Acme", "--data-dir", dir))
	export := func(name string) error {
		_, err := run(t, "suppressions", "export", "--account", acct, "--data-dir", dir, name)
		return err
	}
	isDir := filepath.Join(files, "out.csv")
	if err := os.Mkdir(isDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := export(isDir); err == nil || !strings.HasPrefix(err.Error(), "rename "+isDir+": ") {
		t.Errorf("over a directory: %v", err)
	}
	ro := storagetest.UnwritableDir(t)
	dest := filepath.Join(ro, "x.csv")
	if err := export(dest); err == nil || err.Error() != "create "+dest+": permission denied" {
		t.Errorf("into a read-only directory: %v", err)
	}
}
