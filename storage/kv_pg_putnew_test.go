package storage

import (
	"testing"
)

// TestPostgresPutNew: a new key goes in with a plain INSERT, first time;
// a key that did hold a value (the caller was wrong) ends as Put would,
// the transaction run again with upserts, flushed before the commit or not.
func TestPostgresPutNew(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "old", "1")
	putNew := func(k, v string, flush bool) {
		t.Helper()
		err := db.kv.Update(func(tx kvTx) error {
			b := tx.Bucket(bucketTeam)
			if err := b.PutNew([]byte(k), []byte(v)); err != nil {
				return err
			}
			if flush {
				b.KeyN() // sends the writes so far
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	putNew("new", "a", false)
	if n := db.pg.upsertRetries.Load(); n != 0 {
		t.Errorf("a new key was retried %d times", n)
	}
	for i, flush := range []bool{false, true} {
		v := string(rune('2' + i))
		putNew("old", v, flush)
		if n := db.pg.upsertRetries.Load(); n != int64(i+1) {
			t.Errorf("flush %v: %d retries, want %d", flush, n, i+1)
		}
		if got, keys := kvRead(t, db, bucketTeam, "old"); got != v || len(keys) != 2 {
			t.Errorf("flush %v: old is %q among %v, want %q among [new old]", flush, got, keys, v)
		}
	}
	// Read this transaction as holding a value, or written before in it:
	// Put's upsert, no retry.
	err := db.kv.Update(func(tx kvTx) error {
		b := tx.Bucket(bucketTeam)
		b.Get([]byte("old"))
		if err := b.PutNew([]byte("old"), []byte("4")); err != nil {
			return err
		}
		if err := b.Put([]byte("x"), []byte("1")); err != nil {
			return err
		}
		return b.PutNew([]byte("x"), []byte("2"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := db.pg.upsertRetries.Load(); n != 2 {
		t.Errorf("%d retries after PutNew of keys known to this transaction, want still 2", n)
	}
	if got, _ := kvRead(t, db, bucketTeam, "old"); got != "4" {
		t.Errorf("old is %q, want 4", got)
	}
}
