package storage

import (
	"testing"
	"time"
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

// TestPostgresPutNewAfterAStaleSequence: a node whose cached sequence
// another node has moved on writes its next key with PutNew onto the other
// node's; the commit is refused, run again on what the server holds, and
// both keys are kept.
func TestPostgresPutNewAfterAStaleSequence(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	appendOne := func(db *DB, v string) {
		t.Helper()
		err := db.kv.Update(func(tx kvTx) error {
			bk := tx.Bucket(bucketTeam)
			seq, err := bk.NextSequence()
			if err != nil {
				return err
			}
			return bk.PutNew(putU64(seq), []byte(v))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	appendOne(a, "a1") // a caches the sequence at 1
	appendOne(b, "b2")
	appendOne(a, "a3")
	if n := a.pg.upsertRetries.Load(); n != 1 {
		t.Errorf("%d runs again with upserts, want 1 (the stale sequence's PutNew)", n)
	}
	got := map[uint64]string{}
	if err := b.kv.Update(func(tx kvTx) error {
		clear(got)
		return tx.Bucket(bucketTeam).ForEach(func(k, v []byte) error { got[getU64(k)] = string(v); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1] != "a1" || got[2] != "b2" || got[3] != "a3" {
		t.Errorf("the bucket holds %v, want 1:a1 2:b2 3:a3", got)
	}
}

// TestPostgresPutNewWrongInAGroupCommit: when one unit of a group commit
// gives PutNew a taken key and a later unit's DeleteBucket sends it, the
// commit runs again with upserts and every unit succeeds: the later unit
// is not answered with the first one's unique violation.
func TestPostgresPutNewWrongInAGroupCommit(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	kvPut(t, a, bucketTeam, "taken", "a")
	scratch := []byte("scratch_for_test")
	if err := b.kv.Update(func(tx kvTx) error { _, err := tx.CreateBucketIfNotExists(scratch); return err }); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	go b.Update(func(tx *Tx) error { <-release; return nil }) // the committer is busy: both units below share one commit
	time.Sleep(50 * time.Millisecond)
	errs := make(chan error, 2)
	go func() {
		errs <- b.Update(func(tx *Tx) error { return tx.btx.Bucket(bucketTeam).PutNew([]byte("taken"), []byte("b")) })
	}()
	time.Sleep(20 * time.Millisecond)
	go func() { errs <- b.Update(func(tx *Tx) error { return tx.btx.DeleteBucket(scratch) }) }()
	time.Sleep(50 * time.Millisecond)
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a unit failed: %v", err)
		}
	}
	if v, _ := kvRead(t, b, bucketTeam, "taken"); v != "b" {
		t.Errorf("taken is %q, want b (the PutNew, as Put)", v)
	}
}
