package storage

import (
	"path/filepath"
	"testing"
	"time"

	"mailbolt/storage/pgtest"
)

// nodeOpener makes a fresh PostgreSQL database and its key file, and
// returns a function that opens one more handle on it (closed when t
// ends): one more node. (The packages above storage have
// storagetest.Nodes; storage's own tests cannot import it.)
func nodeOpener(t *testing.T) func() *DB {
	t.Helper()
	url := pgtest.Shared(t).NewDatabase(t)
	key := filepath.Join(t.TempDir(), "secret.key")
	if err := WriteNewSecretKey(key); err != nil {
		t.Fatal(err)
	}
	return func() *DB {
		t.Helper()
		o := DefaultOptions()
		o.Database, o.SecretKeyFile = url, key
		db, err := Open(t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
}

// openNodes opens n handles on one fresh PostgreSQL database: n nodes.
func openNodes(t *testing.T, n int) []*DB {
	t.Helper()
	open := nodeOpener(t)
	var out []*DB
	for range n {
		out = append(out, open())
	}
	return out
}

// Two nodes over one database: only the lease holder runs a round; when
// it stops renewing, the other takes the job over once the lease has
// ended, and a released lease is free at once.
func TestJobLeaseAcrossNodes(t *testing.T) {
	nodes := openNodes(t, 2)
	a, b := nodes[0], nodes[1]
	if a.Node() == b.Node() || a.Node() == "" {
		t.Fatalf("node tokens %q and %q", a.Node(), b.Node())
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lease := 2 * time.Minute
	take := func(db *DB, at time.Time) bool {
		t.Helper()
		ok, err := db.LeaseJob("sweep", at, lease)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !take(a, t0) {
		t.Fatal("a could not take a free lease")
	}
	if take(b, t0.Add(time.Second)) {
		t.Fatal("b took the lease a holds")
	}
	// a renews each round (every minute): b never gets it.
	for i := 1; i <= 3; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		if !take(a, at) {
			t.Fatalf("a could not renew its own lease at round %d", i)
		}
		if take(b, at.Add(time.Second)) {
			t.Fatalf("b took a's renewed lease at round %d", i)
		}
	}
	// a stops renewing (it died after its round at t0+3m): its lease runs
	// until t0+5m.
	if take(b, t0.Add(5*time.Minute-time.Nanosecond)) {
		t.Fatal("b took the lease before it ended")
	}
	if !take(b, t0.Add(5*time.Minute)) {
		t.Fatal("b could not take the lease once it ended")
	}
	if take(a, t0.Add(5*time.Minute+time.Second)) {
		t.Fatal("a came back and took the lease b holds")
	}
	a.View(func(tx *Tx) error {
		if h := tx.JobHolder("sweep", t0.Add(5*time.Minute)); h != b.Node() {
			t.Errorf("holder %q, want b %q", h, b.Node())
		}
		return nil
	})
	// Another job is leased on its own.
	if ok, _ := a.LeaseJob("tls_reports", t0.Add(5*time.Minute), lease); !ok {
		t.Fatal("a could not take another job's lease")
	}
	// a release by a node that does not hold it changes nothing; b's
	// release frees the job at once.
	if err := a.ReleaseJob("sweep"); err != nil {
		t.Fatal(err)
	}
	if take(a, t0.Add(6*time.Minute)) {
		t.Fatal("a's release freed b's lease")
	}
	if err := b.ReleaseJob("sweep"); err != nil {
		t.Fatal(err)
	}
	if !take(a, t0.Add(6*time.Minute)) {
		t.Fatal("a could not take a released lease")
	}
}

// On the embedded engine a lease left by an earlier process is dropped
// at open: only one process holds the file.
func TestJobLeaseVoidedAtOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if ok, err := db.LeaseJob("sweep", now, time.Hour); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := db.LeaseJob("domain_checks", now, time.Hour); !ok || err != nil {
		t.Fatal(ok, err)
	}
	db.Close()
	db, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *Tx) error {
		for _, job := range []string{"sweep", "domain_checks"} {
			if h := tx.JobHolder(job, now); h != "" {
				t.Errorf("%s still held by %q after reopening", job, h)
			}
		}
		return nil
	})
	if ok, err := db.LeaseJob("sweep", now, time.Hour); !ok || err != nil {
		t.Fatal("the reopened file's node could not take the job:", ok, err)
	}
}

// The in-flight marker of an idempotent request is dropped only by the
// request that wrote it, and never once an answer replaced it.
func TestDropIdempotencyMarker(t *testing.T) {
	db := openTest(t)
	now := time.Now()
	put := func(pending string, status int) {
		t.Helper()
		err := db.Update(func(tx *Tx) error {
			return tx.PutIdempotencyRecord("k", "x", IdempotencyRecord{Fingerprint: []byte("A"), Status: status,
				Pending: pending, CreatedAt: now, ExpiresAt: now.Add(time.Minute)})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	drop := func(pending string) bool {
		t.Helper()
		if err := db.Update(func(tx *Tx) error { return tx.DropIdempotencyMarker("k", "x", pending) }); err != nil {
			t.Fatal(err)
		}
		var err error
		db.View(func(tx *Tx) error { _, err = tx.IdempotencyRecord("k", "x"); return nil })
		return err != nil
	}
	put("req-1", 0)
	if drop("req-2") {
		t.Fatal("another request's marker was dropped")
	}
	if !drop("req-1") {
		t.Fatal("the request's own marker was kept")
	}
	put("", 201)
	if drop("") || drop("req-1") {
		t.Fatal("a stored answer was dropped")
	}
}
