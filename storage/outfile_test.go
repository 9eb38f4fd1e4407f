package storage

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// unwritableDir is a directory this process cannot create files in; the
// test is skipped where permissions do not bind it (root).
func unwritableDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		t.Skip("this process writes to a directory of mode 0555 (root): permissions cannot fail here")
	}
	return dir
}

// WriteOutFile's errors name the file asked for, never the temporary file
// beside it (which is gone by then), and leave no temporary file: when
// the rename fails (the name is a directory), when the directory cannot
// be written, and when write fails.
func TestWriteOutFileNamesTheFileAskedFor(t *testing.T) {
	parent := t.TempDir()
	isDir := filepath.Join(parent, "out.csv")
	if err := os.Mkdir(isDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ok := func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }
	err := WriteOutFile(isDir, ok)
	if err == nil || !strings.Contains(err.Error(), isDir+": ") || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("over a directory: %v", err)
	}
	boom := errors.New("boom")
	if err := WriteOutFile(filepath.Join(parent, "x.csv"), func(io.Writer) error { return boom }); err != boom {
		t.Errorf("a failed write: %v", err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
	t.Run("read-only directory", func(t *testing.T) {
		dest := filepath.Join(unwritableDir(t), "x.csv")
		err := WriteOutFile(dest, ok)
		if want := "create " + dest + ": permission denied"; err == nil || err.Error() != want || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("got %v, want %q", err, want)
		}
	})
}

// namedAfter puts the file asked for in the place of the temporary file
// in errors about that file, and leaves every other error as it is.
func TestNamedAfter(t *testing.T) {
	tmp, dest := "/d/.x.db.tmp-123", "/d/x.db"
	other := &fs.PathError{Op: "open", Path: "/d/key", Err: syscall.EACCES}
	boom := errors.New("boom")
	for _, c := range []struct {
		err  error
		want string
		is   error // what the result still matches
	}{
		{&fs.PathError{Op: "write", Path: tmp, Err: syscall.ENOSPC}, "write /d/x.db: no space left on device", syscall.ENOSPC},
		{&fs.PathError{Op: "sync", Path: tmp, Err: syscall.EIO}, "sync /d/x.db: input/output error", syscall.EIO},
		{&os.LinkError{Op: "rename", Old: tmp, New: dest, Err: syscall.EISDIR}, "rename /d/x.db: is a directory", syscall.EISDIR},
		{other, other.Error(), fs.ErrPermission},
		{boom, "boom", boom},
	} {
		if got := namedAfter(c.err, tmp, dest); got.Error() != c.want || !errors.Is(got, c.is) {
			t.Errorf("%v: got %v, want %q", c.err, got, c.want)
		}
	}
}

// A backup that cannot be renamed into place names the file asked for.
func TestBackupErrorNamesTheBackupFile(t *testing.T) {
	db, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dest := filepath.Join(t.TempDir(), "b.db")
	if err := os.Mkdir(dest, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Backup(dest); err == nil || !strings.Contains(err.Error(), dest+": ") || strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("backup over a directory: %v", err)
	}
}
