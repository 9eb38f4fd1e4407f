package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A backup over the live database is the user's mistake: the same
// validation error offline and through a running server's socket, never
// an internal error.
func TestBackupOverTheLiveDatabaseIsAValidationError(t *testing.T) {
	dir := t.TempDir()
	live, _ := filepath.Abs(filepath.Join(dir, "mailbolt.db"))
	want := "VALIDATION_ERROR: out: " + live + " is the live database"
	_, _, stop := startServe(t, dir)
	out, err := run(t, "backup", "--data-dir", dir, "--out", live)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("through the server: %v, want %q\n%s", err, want, out)
	}
	stop()
	out, err = run(t, "backup", "--data-dir", dir, "--out", live)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("offline: %v, want %q\n%s", err, want, out)
	}
}

// A backup or a suppressions export named as the secret key file is
// refused before anything is written, offline and through a running
// server alike (it used to replace the key, and with it every secret in
// the database); an export over the live database is refused too. The
// key is the same afterwards and still opens the database.
func TestBackupAndExportRefuseTheSecretKey(t *testing.T) {
	dir := t.TempDir()
	d := []string{"--data-dir", dir}
	args := func(a ...string) []string { return append(a, d...) }
	acct := lastLine(mustRun(t, args("accounts", "create", "--name", "Acme")...))
	key := filepath.Join(dir, "secret.key")
	before := mustRead(t, key)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relKey, err := filepath.Rel(wd, key) // as `--out data/secret.key` names it
	if err != nil {
		t.Fatal(err)
	}
	absKey, _ := filepath.Abs(key)
	check := func(how string) {
		t.Helper()
		runFails(t, "VALIDATION_ERROR: out: "+absKey+" is the secret key file: write the backup to another file",
			args("backup", "--out", relKey)...)
		runFails(t, relKey+" is the secret key file: write the export to another file",
			args("suppressions", "export", "--account", acct, relKey)...)
		runFails(t, key+".new is the new secret key of a rotation",
			args("suppressions", "export", "--account", acct, key+".new")...)
		runFails(t, " is the live database: write the export to another file",
			args("suppressions", "export", "--account", acct, filepath.Join(dir, "mailbolt.db"))...)
		if got := mustRead(t, key); !bytes.Equal(got, before) {
			t.Fatalf("%s: the key file changed", how)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 3 { // mailbolt.db, secret.key and, while serving, mailbolt.sock
			t.Errorf("%s: files in the data dir: %v", how, entries)
		}
		mustRun(t, args("accounts", "list")...)
	}
	check("offline")
	_, _, stop := startServe(t, dir)
	check("through the server")
	stop()
	mustRun(t, args("accounts", "list")...)
}
