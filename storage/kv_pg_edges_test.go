package storage

import (
	"context"
	"errors"
	"testing"
	"time"
)

// DeleteBucket (with no Put in the same transaction) does not bump the
// generation, so another node's cache of the bucket stays "current".
func TestPostgresDeleteBucketBumpsGeneration(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	kvPut(t, a, bucketTeam, "k", "1")
	if v, _ := kvRead(t, b, bucketTeam, "k"); v != "1" { // b caches k=1
		t.Fatalf("b read %q", v)
	}
	if err := a.kv.Update(func(tx kvTx) error {
		if err := tx.DeleteBucket(bucketTeam); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketTeam)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := b.kv.Update(func(tx kvTx) error {
		got = string(tx.Bucket(bucketTeam).Get([]byte("k")))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != "" {
		t.Fatalf("b's write transaction read k=%q from its cache after a deleted the bucket", got)
	}
}

// A node ignores notifications sent from any backend PID its write
// connections ever had. The server reuses a PID once its connection is
// closed (pool idle time and lifetime, errors), so another node's later
// connection with it would never be heard: a closed connection's PID must
// stop counting as this node's.
func TestPostgresClosedConnPIDNotOwn(t *testing.T) {
	a := openNodes(t, 1)[0]
	if err := a.Update(func(tx *Tx) error { kvPutTx(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	a.pg.pidMu.Lock()
	var pids []uint32
	for p := range a.pg.pids {
		pids = append(pids, p)
	}
	a.pg.pidMu.Unlock()
	a.stopListen() // its connection may be a former write connection, still open
	<-a.listening
	a.pg.pool.Reset() // closes every connection
	time.Sleep(200 * time.Millisecond)
	for _, p := range pids {
		if a.pg.ownPID(p) {
			t.Errorf("PID %d of a closed connection still counts as the node's own", p)
		}
	}
}

func kvPutTx(tx *Tx) { tx.btx.Bucket(bucketTeam).Put([]byte("x"), []byte("y")) }

// An empty value reads back non-nil (as on bbolt), from the server and the cache.
func TestPostgresEmptyValue(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	kvPut(t, a, bucketTeam, "e", "")
	for i := 0; i < 2; i++ {
		for _, db := range []*DB{a, b} {
			db.kv.Update(func(tx kvTx) error {
				if tx.Bucket(bucketTeam).Get([]byte("e")) == nil {
					t.Errorf("round %d: empty value read as nil", i)
				}
				return nil
			})
			db.kv.View(func(tx kvTx) error {
				if tx.Bucket(bucketTeam).Get([]byte("e")) == nil {
					t.Errorf("view round %d: empty value read as nil", i)
				}
				return nil
			})
		}
	}
}

// A server error in one unit's read (here: its connection dropped) is
// answered to that unit as whatever fn made of the nil read, not as the
// transaction's error.
func TestPostgresReadErrorNotBlamedOnUnit(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "k", "1")
	db.pg.cache.clear() // the reads below go to the server
	err := db.Update(func(tx *Tx) error {
		b := tx.btx.Bucket(bucketTeam)
		b.Get([]byte("other")) // BEGIN, the lock
		pid := tx.btx.(*pgTx).conn.PgConn().PID()
		if _, err := db.pg.pool.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid); err != nil {
			t.Error(err)
		}
		if b.Get([]byte("k")) == nil {
			return ErrNotFound
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		t.Fatalf("Update returned %v for a record that exists (the read failed)", err)
	}
	t.Logf("err: %v", err)
}
