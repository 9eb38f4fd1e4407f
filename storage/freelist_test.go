package storage

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// syncedFreelist reads the file's current meta page (of the two, the one
// with the higher transaction id) and reports whether it points at a
// written free page list. bbolt's meta page: a 16-byte page header, then
// magic, version, page size and flags (4 bytes each), the root bucket
// (16), the free list's page id (8), the high-water page id (8), the
// transaction id (8).
func syncedFreelist(t *testing.T, path string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := int(binary.LittleEndian.Uint32(data[16+8:]))
	var freelist, txid uint64
	for i := range 2 {
		m := data[i*page+16:]
		if id := binary.LittleEndian.Uint64(m[48:]); id >= txid {
			txid, freelist = id, binary.LittleEndian.Uint64(m[32:])
		}
	}
	return freelist != ^uint64(0)
}

// A clean close leaves the free page list written, so the next open reads
// it instead of walking every page; the first commit after that open drops
// it again (NoFreelistSync), so a crash never leaves a stale list.
func TestCloseSavesTheFreelist(t *testing.T) {
	if testOptions(t).Database != "" {
		t.Skip("the embedded file's free page list")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
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
	db, err = Open(dir, DefaultOptions())
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
