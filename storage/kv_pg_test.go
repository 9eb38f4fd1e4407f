package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func kvPut(t *testing.T, db *DB, bucket []byte, k, v string) {
	t.Helper()
	if err := db.kv.Update(func(tx kvTx) error { return tx.Bucket(bucket).Put([]byte(k), []byte(v)) }); err != nil {
		t.Fatal(err)
	}
}

// kvRead reads k and every key of bucket in a write transaction, the kind
// that reads through the node's cache.
func kvRead(t *testing.T, db *DB, bucket []byte, k string) (v string, keys []string) {
	t.Helper()
	err := db.kv.Update(func(tx kvTx) error {
		keys = nil // fn runs again when the cache was stale
		b := tx.Bucket(bucket)
		v = string(b.Get([]byte(k)))
		return b.ForEach(func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, keys
}

// TestPostgresNodeCacheSeesOtherNodes: a node's write transactions read
// through its cache, and still see what another node committed since.
func TestPostgresNodeCacheSeesOtherNodes(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	kvPut(t, a, bucketTeam, "k", "1")
	if v, keys := kvRead(t, b, bucketTeam, "k"); v != "1" || len(keys) != 1 {
		t.Fatalf("b read %q %v, want 1 [k]", v, keys)
	}
	kvPut(t, a, bucketTeam, "k", "2")
	kvPut(t, a, bucketTeam, "k2", "x")
	if v, keys := kvRead(t, b, bucketTeam, "k"); v != "2" || len(keys) != 2 {
		t.Fatalf("b read %q %v after a's writes, want 2 [k k2]", v, keys)
	}
}

// TestPostgresNodeCacheSavesReads: one node alone reads a record from the
// server once, not in every write transaction, and a range of a bucket
// nobody wrote to likewise.
func TestPostgresNodeCacheSavesReads(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "k", "1")
	kvRead(t, db, bucketTeam, "k")
	before := db.pg.serverReads.Load()
	if v, _ := kvRead(t, db, bucketTeam, "k"); v != "1" {
		t.Fatalf("read %q, want 1", v)
	}
	if n := db.pg.serverReads.Load() - before; n != 0 {
		t.Errorf("a second write transaction read the server %d times, want 0 (from the cache)", n)
	}
	kvPut(t, db, bucketTeam, "k", "2") // its own write updates the cache
	before = db.pg.serverReads.Load()
	if v, keys := kvRead(t, db, bucketTeam, "k"); v != "2" || len(keys) != 1 {
		t.Fatalf("read %q %v, want 2 [k]", v, keys)
	}
	if n := db.pg.serverReads.Load() - before; n != 1 {
		t.Errorf("after its own write the node read the server %d times, want 1 (the bucket's range again)", n)
	}
}

// TestPostgresWritesSerializedAcrossNodes: read-modify-write transactions
// on three nodes at once lose no update.
func TestPostgresWritesSerializedAcrossNodes(t *testing.T) {
	dbs := openNodes(t, 3)
	const each = 60
	var wg sync.WaitGroup
	for _, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := db.Update(func(tx *Tx) error {
					b := tx.bucket(bucketTeam)
					return b.Put([]byte("n"), putU64(getU64(b.Get([]byte("n")))+1))
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var n uint64
	dbs[0].View(func(tx *Tx) error { n = getU64(tx.bucket(bucketTeam).Get([]byte("n"))); return nil })
	if n != 3*each {
		t.Errorf("counter %d after %d increments on three nodes", n, 3*each)
	}
}

// TestPostgresCommitsWakeOtherNodes: a commit that files queue work runs
// the after-commit hooks of the other nodes too.
func TestPostgresCommitsWakeOtherNodes(t *testing.T) {
	dbs := openNodes(t, 2)
	got := make(chan Change, 4)
	dbs[1].AfterCommit(func(c Change) { got <- c })
	time.Sleep(200 * time.Millisecond) // let b's LISTEN start; a late one only delays the wake-up below
	for try := 0; try < 15; try++ {
		err := dbs[0].Update(func(tx *Tx) error { tx.changed |= MessageQueueWritten; return nil })
		if err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-got:
			if c&MessageQueueWritten == 0 {
				t.Fatalf("b heard %v", c)
			}
			return
		case <-time.After(2 * time.Second):
			// Sent before b listened: send again.
		}
	}
	t.Fatal("b never heard a's commits")
}

// TestPostgresURLRules: a host off this machine needs verified TLS unless
// the operator says otherwise, and no message repeats the password.
func TestPostgresURLRules(t *testing.T) {
	_, err := PostgresConfig("postgres://u:hunter2@db.example.net/mb", false)
	if err == nil || !strings.Contains(err.Error(), "sslmode=verify-full") {
		t.Errorf("remote host without verify-full: %v", err)
	}
	if _, err := PostgresConfig("postgres://u:hunter2@db.example.net/mb", true); err != nil {
		t.Errorf("--database-insecure: %v", err)
	}
	if _, err := PostgresConfig("postgres://u:hunter2@db.example.net/mb?sslmode=verify-full", false); err != nil {
		t.Errorf("verify-full: %v", err)
	}
	for _, ok := range []string{"postgres://u@127.0.0.1/mb", "postgres://u@[::1]:5433/mb", "postgresql://u@localhost/mb", "postgres:///mb?host=/run/postgresql"} {
		if _, err := PostgresConfig(ok, false); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	_, err = PostgresConfig("mysql://u:hunter2@127.0.0.1/mb", false)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("not postgres: %v", err)
	}
	for _, u := range []string{"postgres://u:hunter2@h/mb", "postgres://u@h/mb?password=hunter2&sslmode=verify-full",
		"postgres://u:pw@h/mb?sslpassword=hunter2", "postgres://h/mb?PassWord=hunter2&x=1"} {
		r := RedactURL(u)
		if strings.Contains(r, "hunter2") || !strings.Contains(r, "h/mb") {
			t.Errorf("RedactURL(%s) = %s", u, r)
		}
	}
	if r := RedactURL("postgres://u@h/mb?sslmode=verify-full"); r != "postgres://u@h/mb?sslmode=verify-full" {
		t.Errorf("RedactURL changed a URL without a password: %s", r)
	}
}

// TestPostgresNeedsItsKeyFile: the engine never makes the key file, and a
// node given another key is refused.
func TestPostgresNeedsItsKeyFile(t *testing.T) {
	db := openNodes(t, 1)[0]
	// Seal a secret, so the database holds a key check.
	if err := db.Update(func(tx *Tx) error { _, err := tx.ServerSecret(); return err }); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Database = db.opts.Database
	o.SecretKeyFile = filepath.Join(t.TempDir(), "missing.key")
	if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrSecretKey) {
		t.Errorf("missing key file: %v, want ErrSecretKey", err)
	}
	if _, err := os.Stat(o.SecretKeyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the engine made the key file: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	if err := WriteNewSecretKey(other); err != nil {
		t.Fatal(err)
	}
	o.SecretKeyFile = other
	if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrSecretKey) {
		t.Errorf("another node's key: %v, want ErrSecretKey", err)
	}
}

// TestPostgresRefusesNewerSQLSchema: an older binary never writes to a
// database a newer one has migrated.
func TestPostgresRefusesNewerSQLSchema(t *testing.T) {
	db := openNodes(t, 1)[0]
	if _, err := db.pg.pool.Exec(context.Background(), fmt.Sprintf("INSERT INTO mailbolt_sql_schema VALUES (%d)", len(pgSchema)+5)); err != nil {
		t.Fatal(err)
	}
	o := db.opts
	if _, err := Open(t.TempDir(), o); err == nil || !strings.Contains(err.Error(), "newer than this build") {
		t.Errorf("newer SQL schema: %v", err)
	}
}

// TestPostgresErrorsFromAStaleCacheAreRetried: a write transaction that
// fails on what its node's cache said (a record absent there that another
// node has made since) runs again on the server's state, and its error
// stands only when that state gives it too.
func TestPostgresErrorsFromAStaleCacheAreRetried(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	missing := errors.New("not there")
	get := func() error {
		return b.kv.Update(func(tx kvTx) error {
			if tx.Bucket(bucketTeam).Get([]byte("k")) == nil {
				return missing
			}
			return nil
		})
	}
	if err := get(); err != missing {
		t.Fatalf("before a's write: %v", err)
	}
	kvPut(t, a, bucketTeam, "k", "1")
	if err := get(); err != nil {
		t.Errorf("after a's write, b still failed on its cache: %v", err)
	}
}

// TestPostgresGroupCommitRerunStartsAfresh: when a batch is run again on
// the server's state, a unit of work that failed only on the stale cache
// is answered with its second run's outcome.
func TestPostgresGroupCommitRerunStartsAfresh(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	missing := errors.New("not there")
	use := func() error {
		return b.Update(func(tx *Tx) error {
			bk := tx.bucket(bucketTeam)
			if bk.Get([]byte("k")) == nil {
				return missing
			}
			return bk.Put([]byte("used"), []byte("yes"))
		})
	}
	if err := use(); err != missing {
		t.Fatalf("before a's write: %v", err)
	}
	// b caches k as absent, in a transaction that commits.
	if v, _ := kvRead(t, b, bucketTeam, "k"); v != "" {
		t.Fatalf("k is %q", v)
	}
	kvPut(t, b, bucketTeam, "x", "1")
	kvPut(t, a, bucketTeam, "k", "1")
	if err := use(); err != nil {
		t.Fatalf("after a's write: %v", err)
	}
	if v, _ := kvRead(t, a, bucketTeam, "used"); v != "yes" {
		t.Errorf("the unit of work's write is %q", v)
	}
}

// TestPostgresNewKeyTakenOnAnotherNode: a message id another node has
// stored (unknown to this node's cache, so checked only at commit) is
// refused with ErrExists, and only the unit of work that reused it fails:
// the others of its commit are stored, and the first message is intact.
func TestPostgresNewKeyTakenOnAnotherNode(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	first := newMessage("a1", "m1", false, nil)
	first.Subject = "first"
	if err := a.Update(func(tx *Tx) error { return tx.InsertMessage(first, MessageContent{}, nil) }); err != nil {
		t.Fatal(err)
	}
	// b's committer is busy, so both inserts below share one commit.
	release := make(chan struct{})
	go b.Update(func(tx *Tx) error { <-release; return nil })
	time.Sleep(50 * time.Millisecond)
	errs := make(chan error, 2)
	go func() {
		again := newMessage("a1", "m1", false, nil)
		again.Subject = "again"
		errs <- b.Update(func(tx *Tx) error { return tx.InsertMessage(again, MessageContent{}, nil) })
	}()
	go func() {
		errs <- b.Update(func(tx *Tx) error { return tx.InsertMessage(newMessage("a1", "m2", false, nil), MessageContent{}, nil) })
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	var exists, ok int
	for range 2 {
		switch err := <-errs; {
		case errors.Is(err, ErrExists):
			exists++
		case err == nil:
			ok++
		default:
			t.Fatal(err)
		}
	}
	if exists != 1 || ok != 1 {
		t.Fatalf("%d refused, %d stored; want 1 and 1", exists, ok)
	}
	b.View(func(tx *Tx) error {
		if m, err := tx.Message("a1", "m1"); err != nil || m.Subject != "first" {
			t.Errorf("m1 is %+v, %v: want the first message intact", m.Subject, err)
		}
		if _, err := tx.Message("a1", "m2"); err != nil {
			t.Errorf("m2: %v", err)
		}
		return nil
	})
}

// TestPostgresWarmFillsTheCache: reads made beforehand with Warm, of the
// state the node's cache holds, spare the next write transaction its round
// trips; and what they said is checked like any cached read, so another
// node's write in between is still seen.
func TestPostgresWarmFillsTheCache(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	kvPut(t, a, bucketTeam, "x", "1") // the cache now holds a generation
	a.Warm(func(tx *Tx) { tx.bucket(bucketTeam).Get([]byte("k")) })
	before := a.pg.serverReads.Load()
	var v []byte
	if err := a.Update(func(tx *Tx) error { v = tx.bucket(bucketTeam).Get([]byte("k")); return nil }); err != nil {
		t.Fatal(err)
	}
	if v != nil {
		t.Fatalf("k is %q", v)
	}
	if n := a.pg.serverReads.Load() - before; n != 0 {
		t.Errorf("after Warm the write transaction read the server %d times, want 0", n)
	}
	a.Warm(func(tx *Tx) { tx.bucket(bucketTeam).Get([]byte("k")) })
	kvPut(t, b, bucketTeam, "k", "2")
	if err := a.Update(func(tx *Tx) error {
		v = tx.bucket(bucketTeam).Get([]byte("k"))
		return tx.bucket(bucketTeam).Put([]byte("seen"), v)
	}); err != nil {
		t.Fatal(err)
	}
	if string(v) != "2" {
		t.Errorf("after b's write, a's write transaction read k as %q, want 2", v)
	}
}
