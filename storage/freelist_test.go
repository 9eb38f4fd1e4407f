package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// metaFreelist reads the file's current meta page (of the two, the one
// with the higher transaction id) and returns the page size and the page
// id of the written free page list (^0: none). bbolt's meta page: a
// 16-byte page header, then magic, version, page size and flags (4 bytes
// each), the root bucket (16), the free list's page id (8), the
// high-water page id (8), the transaction id (8).
func metaFreelist(t *testing.T, path string) (data []byte, page int, freelist uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page = int(binary.LittleEndian.Uint32(data[16+8:]))
	var txid uint64
	for i := range 2 {
		m := data[i*page+16:]
		if id := binary.LittleEndian.Uint64(m[48:]); id >= txid {
			txid, freelist = id, binary.LittleEndian.Uint64(m[32:])
		}
	}
	return data, page, freelist
}

func syncedFreelist(t *testing.T, path string) bool {
	_, _, freelist := metaFreelist(t, path)
	return freelist != ^uint64(0)
}

// openFileStore opens a new embedded store; the free page list is the
// file's own, so PostgreSQL runs of the suite skip these tests.
func openFileStore(t *testing.T) (dir, path string, db *DB) {
	t.Helper()
	if testOptions(t).Database != "" {
		t.Skip("the embedded file's free page list")
	}
	dir = t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, FileName), db
}

// A clean close leaves the free page list written, so the next open reads
// it instead of walking every page; the first commit after that open drops
// it again (NoFreelistSync), so a crash never leaves a stale list.
func TestCloseSavesTheFreelist(t *testing.T) {
	dir, path, db := openFileStore(t)
	if err := db.Update(func(tx *Tx) error { return tx.bucket(bucketMeta).Put([]byte("test_k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if syncedFreelist(t, path) {
		t.Fatal("while the store runs, commits write no free page list")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if !syncedFreelist(t, path) {
		t.Fatal("a clean close left no free page list in the file")
	}
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *Tx) error { return tx.bucket(bucketMeta).Put([]byte("test_k"), []byte("w")) }); err != nil {
		t.Fatal(err)
	}
	if syncedFreelist(t, path) {
		t.Fatal("a commit after the open left the saved list in place")
	}
	var got []byte
	if err := db.View(func(tx *Tx) error { got = bytes.Clone(tx.bucket(bucketMeta).Get([]byte("test_k"))); return nil }); err != nil || string(got) != "w" {
		t.Fatalf("meta test_k = %q, %v", got, err)
	}
}

// A damaged page where the saved list should be is refused at open as
// ErrDamaged, never a panic: the list is read in Open (PreLoadFreelist).
func TestDamagedSavedFreelistIsRefused(t *testing.T) {
	dir, path, db := openFileStore(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, page, freelist := metaFreelist(t, path)
	if freelist == ^uint64(0) {
		t.Fatal("no saved list to damage")
	}
	clear(data[int(freelist)*page : int(freelist+1)*page])
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, DefaultOptions()); !errors.Is(err, ErrDamaged) {
		t.Fatalf("open with a damaged list page: %v, want ErrDamaged", err)
	}
}
