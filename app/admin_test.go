package app

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// Where a backup cannot go is the caller's mistake, named in a validation
// error: the missing directory, a file where a directory should be, a
// directory where the file should be, the live database, the secret key
// file. The backup is of the embedded file
// (PostgreSQL's is pg_dump's), so this test stays on it.
func TestLocalAdminBackupChecksWhereItGoes(t *testing.T) {
	a, _ := newTestAppOn(t, storage.DefaultOptions())
	admin := LocalAdmin{App: a}
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing", "dir")
	for _, c := range []struct{ out, want string }{
		{filepath.Join(missing, "x.db"), "out: the directory " + missing + " does not exist"},
		{filepath.Join(file, "x.db"), "out: " + file + " is not a directory"},
		{dir, "out: " + dir + " is a directory: name the file to write"},
		{"", "out: a file to write the backup to is required"},
		{a.DB().Path(), "out: " + a.DB().Path() + " is the live database: write the backup to another file"},
		{a.DB().SecretKeyFile(), "out: " + a.DB().SecretKeyFile() + " is the secret key file: write the backup to another file"},
		{a.DB().SecretKeyFile() + ".new", "out: " + a.DB().SecretKeyFile() + ".new is the new secret key of a rotation"},
	} {
		_, err := admin.Backup(c.out)
		if !HasCode(err, CodeValidation) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("backup to %q: %v, want %q", c.out, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Error("the backup created the missing directory")
	}
	out := filepath.Join(dir, "ok.db")
	if n, err := admin.Backup(out); err != nil || n == 0 {
		t.Fatalf("backup: %d bytes, %v", n, err)
	}
	if err := storage.Check(out); err != nil {
		t.Fatal(err)
	}
}

func TestLocalAdminViews(t *testing.T) {
	a, _ := newTestApp(t)
	admin := LocalAdmin{App: a}
	acct, err := admin.CreateAccount(AccountInput{Name: "Big", Plan: "enterprise", RateLimit: 777})
	if err != nil {
		t.Fatal(err)
	}
	if acct.RateLimit != 777 || acct.BatchSize != Limits(storage.Account{Plan: "enterprise"}).BatchSize {
		t.Errorf("account limits: %+v", acct)
	}
	all, err := admin.ListAccounts()
	if err != nil || len(all) != 1 || all[0] != acct {
		t.Errorf("accounts %+v, %v", all, err)
	}
	k, err := admin.CreateKey(acct.ID, KeyInput{Name: "ci"})
	if err != nil || k.Secret == "" || !strings.HasPrefix(k.Secret, k.Key.Prefix) || k.Key.Scopes[0] != ScopeAll {
		t.Fatalf("key %+v, %v", k, err)
	}
	revoked, err := admin.RevokeKey(k.Key.ID)
	if err != nil || revoked.RevokedAt == nil || revoked.ID != k.Key.ID {
		t.Fatalf("revoked %+v, %v", revoked, err)
	}
	if keys, err := admin.ListKeys(acct.ID); err != nil || len(keys) != 1 || keys[0].RevokedAt == nil {
		t.Errorf("keys %+v, %v", keys, err)
	}
	if _, err := admin.ListKeys("nobody"); !HasCode(err, CodeNotFound) {
		t.Errorf("keys of an unknown account: %v", err)
	}
}

// A backup into a directory the process cannot write is the caller's
// choice of directory, named in a validation error (it was an internal
// error, naming the temporary file). Through the socket the server's
// process writes the file, so the error says so: the user running the
// command may well be able to write there. The read-only file system of
// systemd's ProtectSystem is worded the same way.
func TestLocalAdminBackupIntoAnUnwritableDirectory(t *testing.T) {
	rofs := &fs.PathError{Op: "create", Path: "/var/backups/x.db", Err: syscall.EROFS}
	if got, ok := (LocalAdmin{}).cannotWrite("/var/backups/x.db", rofs); !ok ||
		got != "cannot write to the directory /var/backups (read-only file system)" {
		t.Errorf("offline: %q", got)
	}
	want := "writes the backup, and it cannot write to the directory /var/backups (read-only file system): " +
		"choose a directory the server can write to"
	if got, ok := (LocalAdmin{Server: true}).cannotWrite("/var/backups/x.db", rofs); !ok ||
		!strings.HasPrefix(got, "the server process (") || !strings.Contains(got, want) {
		t.Errorf("through the server: %q, want %q", got, want)
	}
	// Only the file written and its directory: a permission error on
	// another file (the database read for the copy) is not the caller's.
	other := &fs.PathError{Op: "open", Path: "/var/lib/mailbolt/mailbolt.db", Err: syscall.EACCES}
	if _, ok := (LocalAdmin{}).cannotWrite("/var/backups/x.db", other); ok {
		t.Error("a permission error on another file was taken for the backup's directory")
	}

	a, _ := newTestAppOn(t, storage.DefaultOptions())
	dir := storagetest.UnwritableDir(t)
	for _, c := range []struct {
		admin LocalAdmin
		want  string
	}{
		{LocalAdmin{App: a}, "out: cannot write to the directory " + dir + " (permission denied)"},
		{LocalAdmin{App: a, Server: true}, "writes the backup, and it cannot write to the directory " + dir + " (permission denied)"},
	} {
		_, err := c.admin.Backup(filepath.Join(dir, "x.db"))
		if !HasCode(err, CodeValidation) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("server %v: %v, want %q", c.admin.Server, err, c.want)
		}
	}
}
