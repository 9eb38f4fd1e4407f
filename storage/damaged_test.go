package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// pageSize is the page size of the databases these tests write.
var pageSize = os.Getpagesize()

// writtenDB writes a database with enough records for a tree of several
// levels, closes it and returns its bytes and how many of them hold pages
// (bbolt grows the file ahead of its pages).
func writtenDB(t *testing.T) ([]byte, int) {
	b, used, _ := writtenDBWithKey(t)
	return b, used
}

// writtenDBWithKey is writtenDB that also gives the file's secret key file.
func writtenDBWithKey(t *testing.T) ([]byte, int, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	err = db.Update(func(tx *Tx) error {
		for i := range 3000 {
			id := fmt.Sprintf("01900000-0000-7000-8000-%012d", i)
			if err := tx.AppendEvent(Event{ID: id, AccountID: "acct", Type: "message.sent", Timestamp: now,
				Envelope: []byte(`{"id":"` + id + `","pad":"` + strings.Repeat("x", 200) + `"}`), ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	bd, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var used int
	bd.View(func(tx *bolt.Tx) error { used = int(tx.Size()); return nil })
	bd.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b, used, filepath.Join(dir, SecretKeyFileName)
}

// damages are ways a database file is found broken: each gives a data dir
// holding it.
func damages(t *testing.T) map[string][]byte {
	good, used := writtenDB(t)
	if used < 8*pageSize {
		t.Fatalf("the database has only %d bytes of pages", used)
	}
	garble := func(from, to int) []byte {
		b := append([]byte(nil), good...)
		for i := from; i < to && i < len(b); i++ {
			b[i] = byte(i*7 + 13)
		}
		return b
	}
	return map[string][]byte{
		"empty":                  {},
		"shorter than two pages": good[:100],
		"truncated":              good[:used/2],
		"garbled meta":           garble(0, 2*pageSize),
		"garbled pages":          garble(2*pageSize, used),
	}
}

func dataDirWith(t *testing.T, b []byte) (string, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// TestDamagedFileIsRefusedWithoutPanic: a file that is empty, truncated or
// garbled is ErrDamaged, naming the file and the remedy, for every way of
// opening it; it is never taken for a fresh database, and bbolt's panics
// on it never reach the caller.
func TestDamagedFileIsRefusedWithoutPanic(t *testing.T) {
	for name, b := range damages(t) {
		for _, mode := range []string{"read-write", "read-only", "must-exist", "check"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				dir, path := dataDirWith(t, b)
				o := DefaultOptions()
				o.ReadOnly, o.MustExist = mode == "read-only", mode == "must-exist"
				var err error
				if mode == "check" {
					err = Check(path)
				} else {
					var db *DB
					if db, err = Open(dir, o); err == nil {
						db.Close()
					}
				}
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) ||
					!strings.Contains(err.Error(), "restore it from a backup") || strings.Contains(err.Error(), "\n") {
					t.Fatalf("got %v", err)
				}
				after, _ := os.ReadFile(path)
				if string(after) != string(b) {
					t.Error("the damaged file was changed")
				}
			})
		}
	}
}

// TestOnlyAMissingFileIsAFirstStart: a data dir without a file gets a new
// database; the same dir with that database reopens.
func TestOnlyAMissingFileIsAFirstStart(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		db, err := Open(dir, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}

// TestRestoreReplacesADamagedDatabase: restore is the remedy, so a damaged
// live file must not stop it (it used to be taken for a file in use).
func TestRestoreReplacesADamagedDatabase(t *testing.T) {
	good, _, keyFile := writtenDBWithKey(t)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(backup, good, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, b := range damages(t) {
		t.Run(name, func(t *testing.T) {
			dir, _ := dataDirWith(t, b)
			kept, err := Restore(backup, dir, keyFile, time.Now())
			if err != nil || kept == "" {
				t.Fatalf("restore: %q %v", kept, err)
			}
			o := DefaultOptions()
			o.SecretKeyFile = keyFile
			db, err := Open(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		})
	}
}

// TestRestoreNamesADamagedBackupAsTheBackup: a backup that is damaged, or
// not a database at all, is refused naming it as the backup file. The
// database's own message ("restore it from a backup") would send the user
// back to the very file that failed. Nothing in the data dir changes.
func TestRestoreNamesADamagedBackupAsTheBackup(t *testing.T) {
	good, _, keyFile := writtenDBWithKey(t)
	cases := damages(t)
	cases["not a database"] = bytes.Repeat([]byte("garbage"), 3000)
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dir, live := dataDirWith(t, good)
			backup := filepath.Join(t.TempDir(), "garbage.db")
			if err := os.WriteFile(backup, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Restore(backup, dir, keyFile, time.Now())
			want := "restore: backup is not usable: the backup file " + backup + " is damaged or not a Mailbolt backup ("
			if !errors.Is(err, ErrDamaged) || !strings.HasPrefix(fmt.Sprint(err), want) ||
				strings.Contains(err.Error(), "restore it from a backup") {
				t.Fatalf("got %v, want %q…", err, want)
			}
			if after, _ := os.ReadFile(live); !bytes.Equal(after, good) {
				t.Error("the live database was changed")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("files in the data dir: %v", entries)
			}
		})
	}
}
