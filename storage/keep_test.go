package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Five restores in one second keep five copies: each replaced database
// is kept under a name of its own, none over another.
func TestRestoresInOneSecondKeepEveryCopy(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := db.Backup(backup); err != nil {
		t.Fatal(err)
	}
	db.Close()

	at := time.Date(2026, 11, 22, 3, 20, 31, 0, time.UTC)
	live := filepath.Join(dir, FileName)
	for i := 1; i <= 5; i++ {
		// Mark the live database, so each kept copy can be told apart.
		db, err := Open(dir, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *Tx) error {
			_, _, err := tx.PutSuppression(Suppression{AccountID: "a", Recipient: fmt.Sprintf("r%d@x.test", i)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		kept, err := Restore(backup, dir, "", at)
		if err != nil {
			t.Fatalf("restore %d: %v", i, err)
		}
		want := live + ".pre-restore-20261122T032031Z"
		if i > 1 {
			want += fmt.Sprintf("-%d", i)
		}
		if kept != want {
			t.Fatalf("restore %d kept %s, want %s", i, kept, want)
		}
	}
	for i := 1; i <= 5; i++ {
		name := live + ".pre-restore-20261122T032031Z"
		if i > 1 {
			name += fmt.Sprintf("-%d", i)
		}
		if got := keptMarks(t, name); len(got) != 1 || got[0] != fmt.Sprintf("r%d@x.test", i) {
			t.Errorf("%s holds %v, want the mark of restore %d", filepath.Base(name), got, i)
		}
	}
}

// keptMarks are the recipients suppressed in account "a" of the file.
func keptMarks(t *testing.T, path string) []string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, FileName), data); err != nil {
		t.Fatal(err)
	}
	// The key file is the live one's: every copy is sealed under it.
	key, err := os.ReadFile(filepath.Join(filepath.Dir(path), SecretKeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, SecretKeyFileName), key); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	db.View(func(tx *Tx) error {
		list, _, err := tx.Suppressions("a", ListOptions{Limit: 10})
		for _, s := range list {
			out = append(out, s.Recipient)
		}
		return err
	})
	return out
}

func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from"), filepath.Join(dir, "to")
	writeFile(from, []byte("new"))
	writeFile(to, []byte("old"))
	if err := renameNoReplace(from, to); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("rename over an existing file: %v", err)
	}
	if b, _ := os.ReadFile(to); string(b) != "old" {
		t.Fatalf("the existing file was replaced: %q", b)
	}
	if b, _ := os.ReadFile(from); string(b) != "new" {
		t.Fatalf("the source was lost: %q", b)
	}
	os.Remove(to)
	if err := renameNoReplace(from, to); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(from); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the source is still there: %v", err)
	}
	if b, _ := os.ReadFile(to); string(b) != "new" {
		t.Errorf("renamed file holds %q", b)
	}
}

// A backup to the live file is refused, also when it is named through a
// symbolic link to the data dir (renaming over that name would replace the
// file the server writes); a symbolic link as the file name itself is only
// replaced, and is allowed.
func TestBackupRefusesTheLiveFile(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	linkedDir := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(dir, linkedDir); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{db.Path(), filepath.Join(linkedDir, FileName)} {
		if _, err := db.Backup(dest); !errors.Is(err, ErrBackupOverLive) {
			t.Errorf("backup to %s: %v, want ErrBackupOverLive", dest, err)
		}
	}
	if after, err := os.Stat(db.Path()); err != nil || !os.SameFile(before, after) {
		t.Fatalf("the live file was replaced: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(db.Path(), link); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Backup(link); err != nil {
		t.Errorf("backup over a link to the live file: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the link was not replaced by the copy: %v %v", fi, err)
	}
}
