package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// CheckOutFile refuses the names that would replace the live database,
// the secret key file or a key a rotation writes beside it (.new) or
// keeps (.old-<time>): directly, through a relative path and through a
// symbolic link to the directory. Other names are allowed, a symbolic
// link to the key file among them (renaming over it replaces the link).
func TestCheckOutFile(t *testing.T) {
	dir := t.TempDir()
	db, key := filepath.Join(dir, FileName), filepath.Join(dir, SecretKeyFileName)
	old := key + ".old-20261122T032031Z-2"
	for _, f := range []string{db, key, old} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	linked := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(dir, linked); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relKey, err := filepath.Rel(wd, key)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "key-link")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dest string
		want error // nil: allowed
	}{
		{db, ErrBackupOverLive},
		{filepath.Join(linked, FileName), ErrBackupOverLive},
		{key, ErrOverSecretKey},
		{relKey, ErrOverSecretKey},
		{filepath.Join(linked, SecretKeyFileName), ErrOverSecretKey},
		{key + ".new", ErrOverSecretKey},
		{old, ErrOverSecretKey},
		{filepath.Join(linked, filepath.Base(old)), ErrOverSecretKey},
		{key + ".old-20270101T000000Z", ErrOverSecretKey}, // not there yet: a rotation may write it
		{filepath.Join(dir, "backup.db"), nil},
		{key + ".older", nil},
		{filepath.Join(t.TempDir(), SecretKeyFileName), nil},
		{link, nil},
	} {
		err := CheckOutFile(c.dest, db, key)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.dest, err, c.want)
		}
	}
	if err := CheckOutFile(key, "", ""); err != nil {
		t.Errorf("nothing to protect: %v", err)
	}
}

// A backup named as the secret key file is refused before anything is
// written, and the key still opens the database.
func TestBackupRefusesTheSecretKey(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	key := db.SecretKeyFile()
	before, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Backup(key)
	var protected *ProtectedFileError
	if !errors.Is(err, ErrOverSecretKey) || !errors.As(err, &protected) || protected.What != "the secret key file" {
		t.Errorf("backup over the key file: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(key); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the key file changed: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("files in the data dir: %v", entries)
	}
	db, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}
