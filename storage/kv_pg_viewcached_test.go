package storage

import (
	"errors"
	"testing"
	"time"
)

// viewTeam reads k of the team bucket through ViewCached, counting how
// often fn ran.
func viewTeam(t *testing.T, db *DB, k string) (v string, runs int) {
	t.Helper()
	_, err := db.ViewCached(0, func(tx *Tx) error {
		runs++
		v = string(tx.bucket(bucketTeam).Get([]byte(k)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, runs
}

// TestPostgresViewCachedFromTheCache: once a record is cached, a cached
// view reads it without asking the server for it, and fn runs once.
func TestPostgresViewCachedFromTheCache(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "k", "1") // cached by the write
	reads, views := db.pg.serverReads.Load(), db.pg.cachedViews.Load()
	v, runs := viewTeam(t, db, "k")
	if v != "1" || runs != 1 {
		t.Fatalf("read %q in %d runs, want 1 in 1", v, runs)
	}
	if n := db.pg.serverReads.Load() - reads; n != 0 {
		t.Errorf("the view read the server %d times, want 0", n)
	}
	if n := db.pg.cachedViews.Load() - views; n != 1 {
		t.Errorf("%d views answered from the cache, want 1", n)
	}
}

// TestPostgresViewCachedMissWarms: a record the cache lacks is read from
// the server (fn runs again), and the next view finds it cached, absent
// records included.
func TestPostgresViewCachedMissWarms(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "k", "1") // the cache starts again from this write
	db.pg.cache.mu.Lock()
	delete(db.pg.cache.entries, pgCacheKey(string(bucketTeam), []byte("k")))
	db.pg.cache.mu.Unlock()
	for _, tc := range []struct{ k, want string }{{"k", "1"}, {"absent", ""}} {
		reads := db.pg.serverReads.Load()
		v, runs := viewTeam(t, db, tc.k)
		if v != tc.want || runs != 2 {
			t.Errorf("%s: read %q in %d runs, want %q in 2 (the cache, then the server)", tc.k, v, runs, tc.want)
		}
		if n := db.pg.serverReads.Load() - reads; n != 1 {
			t.Errorf("%s: the first view read the server %d times, want 1", tc.k, n)
		}
		reads = db.pg.serverReads.Load()
		if v, runs = viewTeam(t, db, tc.k); v != tc.want || runs != 1 {
			t.Errorf("%s: again, read %q in %d runs, want %q in 1", tc.k, v, runs, tc.want)
		}
		if n := db.pg.serverReads.Load() - reads; n != 0 {
			t.Errorf("%s: the second view read the server %d times, want 0", tc.k, n)
		}
	}
}

// TestPostgresViewCachedSeesOtherNodes: what another node committed
// before the view began is seen, though this node's cache held the old
// value.
func TestPostgresViewCachedSeesOtherNodes(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	kvPut(t, a, bucketTeam, "k", "1")
	if v, _ := viewTeam(t, a, "k"); v != "1" {
		t.Fatalf("a read %q, want 1", v)
	}
	kvPut(t, b, bucketTeam, "k", "2")
	if v, _ := viewTeam(t, a, "k"); v != "2" {
		t.Errorf("after b's write a read %q, want 2", v)
	}
	// And a's cache takes the new generation up again with its next write.
	kvPut(t, a, bucketTeam, "j", "3")
	views := a.pg.cachedViews.Load()
	if v, _ := viewTeam(t, a, "j"); v != "3" {
		t.Errorf("a read j as %q, want 3", v)
	}
	if a.pg.cachedViews.Load() == views {
		t.Error("after its own write a's view was not answered from the cache")
	}
}

// TestPostgresViewCachedRanges: a range read the cache holds is served
// from it; KeyN, never cached, sends the view to the server. fn's error
// is the view's error either way.
func TestPostgresViewCachedRanges(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "a", "1")
	kvPut(t, db, bucketTeam, "b", "2")
	var keys []string
	list := func(tx *Tx) error {
		keys = nil
		return tx.bucket(bucketTeam).ForEach(func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	}
	for range 2 {
		if _, err := db.ViewCached(0, list); err != nil || len(keys) != 2 {
			t.Fatalf("listed %v (%v), want [a b]", keys, err)
		}
	}
	reads := db.pg.serverReads.Load()
	if _, err := db.ViewCached(0, list); err != nil || len(keys) != 2 {
		t.Fatalf("listed %v (%v), want [a b]", keys, err)
	}
	if n := db.pg.serverReads.Load() - reads; n != 0 {
		t.Errorf("a cached range read the server %d times, want 0", n)
	}
	var n int
	if _, err := db.ViewCached(0, func(tx *Tx) error { n = tx.bucket(bucketTeam).KeyN(); return nil }); err != nil || n != 2 {
		t.Errorf("KeyN %d (%v), want 2", n, err)
	}
	boom := errors.New("boom")
	if _, err := db.ViewCached(0, func(tx *Tx) error { tx.bucket(bucketTeam).Get([]byte("a")); return boom }); !errors.Is(err, boom) {
		t.Errorf("fn's error came back as %v", err)
	}
}

// TestPostgresViewCachedDoesNotWaitForTheLock: while another node holds
// the write lock, and this node's own commit waits for it, a cached view
// on this node answers from the server without waiting for either.
func TestPostgresViewCachedDoesNotWaitForTheLock(t *testing.T) {
	dbs := openNodes(t, 2)
	a, b := dbs[0], dbs[1]
	kvPut(t, a, bucketTeam, "k", "1")
	kvPut(t, b, bucketTeam, "k", "2") // a's cache is a generation behind now
	locked, viewed := make(chan struct{}), make(chan struct{})
	viewFirst := make(chan bool, 1)
	go func() {
		b.kv.Update(func(tx kvTx) error {
			tx.Bucket(bucketTeam).Get([]byte("uncached")) // takes the lock
			close(locked)
			select {
			case <-viewed:
				viewFirst <- true
			case <-time.After(10 * time.Second):
				viewFirst <- false
			}
			return nil
		})
	}()
	<-locked
	committed := make(chan error, 1)
	go func() {
		committed <- a.kv.Update(func(tx kvTx) error { return tx.Bucket(bucketTeam).Put([]byte("j"), []byte("x")) })
	}()
	time.Sleep(50 * time.Millisecond) // let a's commit reach the lock
	v, _ := viewTeam(t, a, "k")
	close(viewed)
	if !<-viewFirst {
		t.Error("the view waited for the write lock another node held")
	}
	if v != "2" {
		t.Errorf("read %q, want 2", v)
	}
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
}

// TestPostgresViewCachedSince: a view given the point an earlier view of
// its request found reads no generation, and takes the cache only when it
// holds that point or a later one.
func TestPostgresViewCachedSince(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "k", "1")
	read := func(since ReadPoint) (ReadPoint, string) {
		t.Helper()
		var v string
		at, err := db.ViewCached(since, func(tx *Tx) error { v = string(tx.bucket(bucketTeam).Get([]byte("k"))); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return at, v
	}
	at, v := read(0)
	if at == 0 || v != "1" {
		t.Fatalf("first view: point %d, read %q", at, v)
	}
	rounds := func() int64 {
		db.pg.gens.mu.Lock()
		defer db.pg.gens.mu.Unlock()
		return db.pg.gens.rounds
	}
	before, views := rounds(), db.pg.cachedViews.Load()
	if at2, v := read(at); at2 != at || v != "1" {
		t.Errorf("second view: point %d, read %q, want %d and 1", at2, v, at)
	}
	if n := rounds() - before; n != 0 {
		t.Errorf("the second view read the generation %d times, want 0", n)
	}
	if db.pg.cachedViews.Load() == views {
		t.Error("the second view was not answered from the cache")
	}
	// A point the cache has not reached (another node's commit, say):
	// the server answers.
	reads := db.pg.serverReads.Load()
	if _, v := read(at + 5); v != "1" {
		t.Errorf("read %q, want 1", v)
	}
	if db.pg.serverReads.Load() == reads {
		t.Error("a view from a point ahead of the cache was answered from the cache")
	}
}
