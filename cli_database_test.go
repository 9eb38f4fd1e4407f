package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mailbolt/storage"
	"mailbolt/storage/pgtest"
)

// TestCommandsOnPostgres: with --database the management commands reach
// PostgreSQL directly (no server, no socket), doctor checks it, and the
// file-only commands point to pg_dump and pg_restore.
func TestCommandsOnPostgres(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	key := filepath.Join(t.TempDir(), "secret.key")
	if out := mustRun(t, "secrets", "new-key", key); !strings.Contains(out, "wrote a new secret key") {
		t.Fatalf("new-key: %s", out)
	}
	if out, err := run(t, "secrets", "new-key", key); err == nil {
		t.Errorf("new-key over an existing file: %s", out)
	}
	db := []string{"--database", url, "--secret-key-file", key, "--data-dir", t.TempDir()}

	out, err := run(t, append([]string{"accounts", "list"}, db...)...)
	if err == nil || !strings.Contains(err.Error(), "holds no Mailbolt data yet") {
		t.Errorf("accounts list on an empty database: %v %s", err, out)
	}
	z := doctorZone(t)
	out, _ = run(t, doctorArgs(z, t.TempDir(), "127.0.0.1:1", "--database", url, "--secret-key-file", key)...)
	if !strings.Contains(out, "answers and holds no Mailbolt data yet") {
		t.Errorf("doctor on an empty database:\n%s", out)
	}

	id := lastLine(mustRun(t, append([]string{"accounts", "create", "--name", "acme"}, db...)...))
	if out := mustRun(t, append([]string{"accounts", "list"}, db...)...); !strings.Contains(out, id) {
		t.Errorf("accounts list does not show %s:\n%s", id, out)
	}
	out, _ = run(t, doctorArgs(z, t.TempDir(), "127.0.0.1:1", "--database", url, "--secret-key-file", key)...)
	if !strings.Contains(out, "answers, schema version "+strconv.Itoa(storage.LatestSchemaVersion())) {
		t.Errorf("doctor on a database in use:\n%s", out)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	mustRun(t, "secrets", "new-key", other)
	if _, err := run(t, "accounts", "list", "--database", url, "--secret-key-file", other, "--data-dir", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "secret") {
		t.Errorf("another key file: %v", err)
	}

	if _, err := run(t, append([]string{"backup", "--out", filepath.Join(t.TempDir(), "b.db")}, db...)...); err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("backup with --database: %v", err)
	}
	if _, err := run(t, append([]string{"restore", "--from", filepath.Join(t.TempDir(), "b.db")}, db...)...); err == nil || !strings.Contains(err.Error(), "pg_restore") {
		t.Errorf("restore with --database: %v", err)
	}
	if _, err := run(t, "accounts", "list", "--database", "postgres://u:hunter2@db.example.net/mb", "--data-dir", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "verify-full") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("remote host without verify-full: %v", err)
	}
}
