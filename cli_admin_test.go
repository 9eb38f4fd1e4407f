package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `mailbolt backup --out` into a directory that does not exist names the
// directory, whether serve runs (the socket answers) or not.
func TestBackupIntoAMissingDirectoryNamesIt(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing", "dir")
	check := func(when string) {
		t.Helper()
		out, err := run(t, "backup", "--out", filepath.Join(missing, "x.db"), "--data-dir", dir)
		if err == nil || !strings.Contains(err.Error(), "the directory "+missing+" does not exist") || strings.Contains(err.Error(), "INTERNAL") {
			t.Errorf("%s: %v\n%s", when, err, out)
		}
	}
	_, _, stop := startServe(t, dir)
	check("while serve runs")
	stop()
	check("with serve stopped")
}

// A management command refuses a value that is not UTF-8 in the same
// words whether serve runs (the socket's JSON cannot carry it) or not,
// and stores nothing: without a server the account was created, the key
// made, the IP added with U+FFFD in place of the bytes, and the backup
// written to a file of that name.
func TestManagementRefusesWhatIsNotTextWhetherServing(t *testing.T) {
	dir := t.TempDir()
	acct := lastLine(mustRun(t, "accounts", "create", "--name", "Acme", "--data-dir", dir))
	backups := t.TempDir()
	csv := filepath.Join(t.TempDir(), "list.csv")
	if err := os.WriteFile(csv, []byte("recipient\na@example.com\nm\xfcller@example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"accounts", "create", "--name", "xy\xffz"}, "VALIDATION_ERROR: name: must be valid UTF-8"},
		{[]string{"accounts", "create", "--name", "Beta", "--email", "ops@exa\xffmple.com"}, "VALIDATION_ERROR: email: must be valid UTF-8"},
		{[]string{"accounts", "update", acct, "--name", "Ac\xc3me"}, "VALIDATION_ERROR: name: must be valid UTF-8"},
		{[]string{"keys", "create", "--account", acct, "--name", "c\xffi"}, "VALIDATION_ERROR: name: must be valid UTF-8"},
		{[]string{"keys", "create", "--account", acct, "--name", "ci", "--scopes", "account:read,x\xe2\x82"}, "VALIDATION_ERROR: scopes[1]: must be valid UTF-8"},
		{[]string{"team", "add", "--account", acct, "--email", "ann@exa\xffmple.com", "--role", "viewer"}, "VALIDATION_ERROR: email: must be valid UTF-8"},
		{[]string{"ips", "add", "192.0.2.1", "--hostname", "mx.exa\xffmple.com"}, "VALIDATION_ERROR: hostname: must be valid UTF-8"},
		{[]string{"backup", "--out", filepath.Join(backups, "snap\xfe.db")}, "VALIDATION_ERROR: out: must be valid UTF-8"},
		{[]string{"suppressions", "import", "--account", acct, csv}, csv + ": VALIDATION_ERROR: line 3: recipient: must be valid UTF-8"},
	}
	state := func() string {
		t.Helper()
		return mustRun(t, "accounts", "list", "--data-dir", dir) + mustRun(t, "keys", "list", "--account", acct, "--data-dir", dir) +
			mustRun(t, "ips", "list", "--data-dir", dir)
	}
	check := func(when string) {
		t.Helper()
		before := state()
		for _, c := range cases {
			out, err := run(t, append(c.args, "--data-dir", dir)...)
			if err == nil || err.Error() != c.want {
				t.Errorf("%s: mailbolt %q: %v, want %s\n%s", when, c.args, err, c.want, out)
			}
		}
		if after := state(); after != before {
			t.Errorf("%s: the refusals changed what is stored:\n%s\nwas\n%s", when, after, before)
		}
		if files, _ := os.ReadDir(backups); len(files) != 0 {
			t.Errorf("%s: a refused backup wrote %v", when, files)
		}
	}
	_, _, stop := startServe(t, dir)
	check("while serve runs")
	stop()
	check("with serve stopped")
}
