package app

import (
	"math/rand"
	"os"
	"testing"
	"time"

	"mailbolt/storage"
)

// pgApps opens n nodes over one fresh PostgreSQL database
// (sharedApps), on a clock of their own.
func pgApps(t *testing.T, n int) ([]*App, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	return sharedApps(t, n, c), c
}

// TestLimiterAcrossNodes: three nodes, each counting a key's requests
// locally and syncing with the shared counters after at most r requests
// it admits (the test runs each sync, in place of the timer), admit in
// one window at least the limit and at most the documented limit +
// 2×(nodes−1)×r, well under the three limits they would admit apart; no
// request is refused before the nodes together admitted the limit. The
// schedule is pseudo-random with fixed seeds.
func TestLimiterAcrossNodes(t *testing.T) {
	const nodes, limit, r = 3, 60, 4
	apps, c := pgApps(t, nodes)
	for seed := range int64(4) {
		rng := rand.New(rand.NewSource(seed))
		ls := make([]*Limiter, nodes)
		for i, a := range apps {
			ls[i] = a.NewLimiter("test")
			ls[i].after = func(time.Duration, func()) {} // the test syncs
		}
		caller := "key-" + string(rune('a'+seed))
		since := make([]int, nodes) // admitted since the node's last sync
		admitted, refused := 0, 0
		for range 2000 {
			i := rng.Intn(nodes)
			if since[i] == r || rng.Intn(8) == 0 {
				ls[i].sync()
				since[i] = 0
				continue
			}
			q := ls[i].Take(caller, limit, time.Second, c.now())
			if q.Allowed {
				admitted++
				since[i]++
			} else {
				refused++
				if admitted < limit {
					t.Fatalf("seed %d: refused with %d admitted across nodes, limit %d", seed, admitted, limit)
				}
			}
		}
		t.Logf("seed %d: %d admitted, %d refused", seed, admitted, refused)
		if admitted < limit || admitted > limit+2*(nodes-1)*r {
			t.Errorf("seed %d: %d admitted in one window, want %d to %d", seed, admitted, limit, limit+2*(nodes-1)*r)
		}
		if refused == 0 {
			t.Errorf("seed %d: nothing refused", seed)
		}
	}
	// The next window starts over.
	c.add(time.Second)
	if q := apps[0].NewLimiter("test").Take("key-a", limit, time.Second, c.now()); !q.Allowed || q.Remaining != limit-1 {
		t.Errorf("the next window: %+v", q)
	}
}

// TestLimiterEmbedded: on the embedded engine a Limiter counts in memory
// only, and never schedules a sync. (So it stays on that engine when the
// suite runs on PostgreSQL.)
func TestLimiterEmbedded(t *testing.T) {
	a, c := newTestAppOn(t, storage.DefaultOptions())
	l := a.NewLimiter("solo")
	l.after = func(time.Duration, func()) { t.Error("a sync was scheduled on the embedded engine") }
	for i := range 3 {
		q := l.Take("k", 2, time.Second, c.now())
		if q.Allowed != (i < 2) {
			t.Fatalf("request %d: %+v", i+1, q)
		}
	}
	if l.add != nil {
		t.Error("the embedded engine's Limiter shares its counts")
	}
}

// TestAttemptAcrossNodes: attempts counted on two nodes are refused at
// the limit, wherever they arrive.
func TestAttemptAcrossNodes(t *testing.T) {
	apps, c := pgApps(t, 2)
	for i := range 5 {
		q, err := apps[i%2].Attempt("login:email:ann@example.com", 4, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if q.Allowed != (i < 4) || (q.Allowed && q.Remaining != 3-i) {
			t.Fatalf("attempt %d on node %d: %+v", i+1, i%2+1, q)
		}
	}
	c.add(time.Minute)
	if q, err := apps[1].Attempt("login:email:ann@example.com", 4, time.Minute); err != nil || !q.Allowed {
		t.Fatalf("the next window: %+v %v", q, err)
	}
}

// TestLimiterSyncFails: counts a failed sync could not send are sent by
// the next one, those of a window that ended meanwhile included, and the
// node goes on deciding alone in between.
func TestLimiterSyncFails(t *testing.T) {
	apps, c := pgApps(t, 1)
	db := apps[0].db
	l := apps[0].NewLimiter("flaky")
	l.after = func(time.Duration, func()) {}
	down := true
	l.add = func(adds []storage.Count) ([]int64, error) {
		if down {
			return nil, os.ErrDeadlineExceeded
		}
		return db.AddCounts(adds)
	}
	for range 3 {
		l.Take("k", 10, time.Second, c.now())
	}
	l.sync()
	if q := l.Take("k", 10, time.Second, c.now()); !q.Allowed || q.Remaining != 6 {
		t.Fatalf("after a failed sync: %+v", q)
	}
	first, _ := windowOf(c.now(), time.Second)
	c.add(time.Second)
	l.Take("k", 10, time.Second, c.now())
	down = false
	l.sync()
	for w, want := range map[int64]int64{first: 4, first + 1: 1} {
		if n, err := db.AddCount("rate:flaky:k", w, time.Second, 0); err != nil || n != want {
			t.Errorf("window %d: %d %v, want %d", w-first, n, err, want)
		}
	}
}
