package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEndToEnd builds the real binary and drives it as a user would: start
// it on an empty data dir, take the printed key, use the HTTP API, manage it
// with the CLI while it runs, stop it with SIGTERM, back up and restore.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mailbolt")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	srv := exec.Command(bin, "serve", "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "MAILBOLT_DATA_DIR="+dir)
	stdout, _ := srv.StdoutPipe()
	var stderr strings.Builder
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()

	var base, liveKey string
	lines := bufio.NewScanner(stdout)
	deadline := time.AfterFunc(15*time.Second, func() { srv.Process.Kill() })
	for lines.Scan() {
		line := lines.Text()
		if m := liveKeyRe.FindStringSubmatch(line); m != nil {
			liveKey = m[1]
		}
		if m := listenRe.FindStringSubmatch(line); m != nil {
			base = m[1]
			break
		}
	}
	deadline.Stop()
	go io.Copy(io.Discard, stdout)
	if base == "" || liveKey == "" {
		t.Fatalf("serve printed no address or key; stderr:\n%s", stderr.String())
	}

	call := func(method, path, key, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if status, m := call("POST", "/v1/suppressions", liveKey, `{"recipient":"gone@example.com","reason":"manual"}`); status != 201 {
		t.Fatalf("add suppression: %d %v", status, m)
	}

	cli := func(args ...string) string {
		cmd := exec.Command(bin, append(args, "--data-dir", dir)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mailbolt %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	acct := lastLine(cli("accounts", "create", "--name", "E2E"))
	key := lastLine(cli("keys", "create", "--account", acct, "--name", "e2e", "--scopes", "suppressions:read,account:read"))
	if status, m := call("GET", "/v1/account", key, ""); status != 200 || m["id"] != acct {
		t.Fatalf("CLI-made key: %d %v", status, m)
	}
	if status, _ := call("POST", "/v1/suppressions", key, `{"recipient":"x@example.com"}`); status != 403 {
		t.Fatalf("scope not enforced: %d", status)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	cli("backup", "--out", backup)

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve did not exit cleanly on SIGTERM: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no orderly shutdown in the log:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "mailbolt.sock")); !os.IsNotExist(err) {
		t.Error("socket left behind")
	}

	// The key file is kept with the backup: a new data dir gets it first.
	restored := t.TempDir()
	if err := os.WriteFile(filepath.Join(restored, "secret.key"), mustRead(t, filepath.Join(dir, "secret.key")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "restore", "--from", backup, "--data-dir", restored)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "accounts", "list", "--data-dir", restored).CombinedOutput()
	if !strings.Contains(string(out), acct) || !strings.Contains(string(out), "default") {
		t.Fatalf("restored accounts:\n%s", out)
	}
}
