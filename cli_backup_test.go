package main

import (
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
