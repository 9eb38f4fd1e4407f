package app

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"mailbolt/storage"
)

// TestSlidingLimiterAcrossTheClocksWindows: 3 per 10 s, three requests
// just before a multiple of 10 s and one just after are not 4 in a
// window: the fourth waits until the first is 10 s old, to the
// nanosecond, and then one more goes through, not three.
func TestSlidingLimiterAcrossTheClocksWindows(t *testing.T) {
	a, _ := newTestAppOn(t, storage.DefaultOptions())
	l := a.NewSlidingLimiter("grader-ip")
	l.after = func(time.Duration, func()) { t.Error("a sync was scheduled on the embedded engine") }
	const span = 10 * time.Second
	t0 := time.Date(2026, 11, 22, 12, 0, 9, 500_000_000, time.UTC) // 0.5 s before a window of the clock ends
	for i := range 3 {
		if q := l.Take("192.0.2.1", 3, span, t0.Add(time.Duration(i)*100*time.Millisecond)); !q.Allowed || q.Remaining != 2-i {
			t.Fatalf("request %d: %+v", i+1, q)
		}
	}
	at := t0.Add(600 * time.Millisecond) // the clock's next window
	q := l.Take("192.0.2.1", 3, span, at)
	if q.Allowed || q.Wait != span-600*time.Millisecond {
		t.Fatalf("the fourth within 10 s: %+v, want refused, wait 9.4s", q)
	}
	if q := l.Take("192.0.2.1", 3, span, t0.Add(span-time.Nanosecond)); q.Allowed {
		t.Fatalf("refused until the first is 10 s old: %+v", q)
	}
	if q := l.Take("192.0.2.1", 3, span, t0.Add(span)); !q.Allowed || q.Remaining != 0 {
		t.Fatalf("when the first leaves: %+v, want one admitted", q)
	}
	if q := l.Take("192.0.2.1", 3, span, t0.Add(span)); q.Allowed || q.Wait != 100*time.Millisecond {
		t.Fatalf("then: %+v, want refused until the second leaves", q)
	}
	// Another caller has its own window.
	if q := l.Take("192.0.2.2", 3, span, at); !q.Allowed {
		t.Fatalf("another address: %+v", q)
	}
	// The defaults: the 11th in an hour waits until an hour after the first.
	t1 := time.Date(2026, 11, 22, 12, 47, 38, 0, time.UTC)
	for i := range 10 {
		l.Take("198.51.100.7", 10, time.Hour, t1.Add(time.Duration(i)*time.Second))
	}
	if q := l.Take("198.51.100.7", 10, time.Hour, t1.Add(20*time.Second)); q.Allowed || q.Wait != time.Hour-20*time.Second {
		t.Fatalf("the 11th at the default: %+v, want a wait of 59m40s", q)
	}
}

// TestSlidingLimiterNeverOverTheLimit: for pseudo-random request times,
// no span ever holds more than limit admitted requests, a request is
// refused only when limit were admitted in the span before it (limits up
// to the log's length are exact), and a refused one's wait is when the
// oldest it needs to leave leaves. Over the log's length the count stays
// within the limit, and the log within its bound.
func TestSlidingLimiterNeverOverTheLimit(t *testing.T) {
	a, _ := newTestAppOn(t, storage.DefaultOptions())
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	const span = time.Minute
	for _, limit := range []int{1, 3, 10, maxSlidingLog, 100} {
		for seed := range int64(3) {
			rng := rand.New(rand.NewSource(seed))
			l := a.NewSlidingLimiter("prop")
			caller := "c" + strconv.Itoa(limit)
			var admitted []time.Time
			at := base
			for range 2000 {
				at = at.Add(time.Duration(rng.Int63n(int64(span) * 3 / int64(limit) / 2)))
				if rng.Intn(10) == 0 {
					at = at.Add(time.Duration(rng.Int63n(int64(span))))
				}
				inWindow := 0
				for _, x := range admitted {
					if x.After(at.Add(-span)) {
						inWindow++
					}
				}
				q := l.Take(caller, limit, span, at)
				if q.Allowed {
					if inWindow >= limit {
						t.Fatalf("limit %d seed %d: admitted at %v with %d in the span before", limit, seed, at.Sub(base), inWindow)
					}
					admitted = append(admitted, at)
					continue
				}
				if limit > maxSlidingLog {
					continue // counted conservatively: may refuse early
				}
				if inWindow < limit {
					t.Fatalf("limit %d seed %d: refused at %v with %d in the span before", limit, seed, at.Sub(base), inWindow)
				}
				oldest := admitted[len(admitted)-inWindow]
				if want := oldest.Add(span).Sub(at); q.Wait != want {
					t.Fatalf("limit %d seed %d: wait %v, want %v", limit, seed, q.Wait, want)
				}
			}
			if n := len(l.callers[caller].log); n > maxSlidingLog {
				t.Errorf("limit %d: the log holds %d entries, bound %d", limit, n, maxSlidingLog)
			}
			if len(admitted) < limit {
				t.Errorf("limit %d seed %d: only %d admitted", limit, seed, len(admitted))
			}
		}
	}
}

// TestSlidingLimiterForgetsCallers: the callers kept are bounded; those
// with nothing in their window go first, then the least recently admitted.
func TestSlidingLimiterForgetsCallers(t *testing.T) {
	a, _ := newTestAppOn(t, storage.DefaultOptions())
	l := a.NewSlidingLimiter("many")
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	l.Take("old", 1, time.Minute, at)
	at = at.Add(2 * time.Minute) // "old" has nothing left in its window
	l.Take("recent", 1, time.Hour, at)
	for i := range maxSlidingCallers {
		at = at.Add(time.Microsecond)
		l.Take("ip-"+strconv.Itoa(i), 1, time.Hour, at)
		if len(l.callers) > maxSlidingCallers {
			t.Fatalf("%d callers kept, bound %d", len(l.callers), maxSlidingCallers)
		}
	}
	if _, ok := l.callers["old"]; ok {
		t.Error("a caller with nothing in its window was kept")
	}
	if _, ok := l.callers["ip-"+strconv.Itoa(maxSlidingCallers-1)]; !ok {
		t.Error("the newest caller was forgotten")
	}
	if _, ok := l.callers["recent"]; ok {
		t.Error("the least recently admitted caller was kept over newer ones")
	}
	// A caller kept still counts.
	if q := l.Take("ip-"+strconv.Itoa(maxSlidingCallers-1), 1, time.Hour, at); q.Allowed {
		t.Errorf("a kept caller's request was forgotten: %+v", q)
	}
}

// TestSlidingLimiterAcrossNodes: three nodes over one PostgreSQL database,
// each syncing after at most r requests it admits, admit in one span at
// least the limit and at most limit + 2×(nodes−1)×r, and refuse nothing
// before the nodes together admitted the limit. Another node's requests
// count until a bucket's length after they leave the span, never less.
func TestSlidingLimiterAcrossNodes(t *testing.T) {
	const nodes, limit, r = 3, 30, 3
	const span = time.Hour
	apps, c := pgApps(t, nodes)
	for seed := range int64(3) {
		rng := rand.New(rand.NewSource(seed))
		ls := make([]*SlidingLimiter, nodes)
		for i, a := range apps {
			ls[i] = a.NewSlidingLimiter("slide-test")
			ls[i].after = func(time.Duration, func()) {} // the test syncs
		}
		caller := "ip-" + strconv.Itoa(int(seed))
		since := make([]int, nodes)
		admitted, refused := 0, 0
		for range 600 {
			c.add(time.Second)
			i := rng.Intn(nodes)
			if since[i] == r || rng.Intn(6) == 0 {
				ls[i].sync()
				since[i] = 0
				continue
			}
			if q := ls[i].Take(caller, limit, span, c.now()); q.Allowed {
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
		if admitted < limit || admitted > limit+2*(nodes-1)*r || refused == 0 {
			t.Errorf("seed %d: %d admitted and %d refused in one span, want %d to %d admitted", seed, admitted, refused, limit, limit+2*(nodes-1)*r)
		}
		for _, l := range ls {
			l.sync()
		}
		// A node that admitted nothing lately still counts the others'
		// once it has synced: node 0 refuses while they are in the span.
		if q := ls[0].Take(caller, limit, span, c.now()); q.Allowed {
			t.Errorf("seed %d: node 0 admitted over the others' requests: %+v", seed, q)
		}
		c.add(span + span/slidingBuckets) // every bucket of the last span has left
		if q := ls[0].Take(caller, limit, span, c.now()); !q.Allowed || q.Remaining != limit-1 {
			t.Errorf("seed %d: a span later: %+v", seed, q)
		}
	}
}
