package app

import (
	"bytes"
	"cmp"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/storage"
)

// taker is the method both limiters share.
type taker interface {
	Take(caller string, limit int, span time.Duration, now time.Time) Quota
}

// syncHooks reach into one limiter, of either kind, for the sync tests.
type syncHooks struct {
	l     taker
	span  time.Duration
	c     *clock
	after *func(time.Duration, func())
	add   *func([]storage.Count) ([]int64, error)
	log   **slog.Logger
	mu    *sync.Mutex // held by others
	// others is how many of caller's requests in its window this node
	// knows other nodes admitted, as of its last sync.
	others func(caller string) int
	// want is the batch a sync sends when each caller's latest requests
	// not sent yet are n[caller], all at the test's clock.
	want func(n map[string]int) []storage.Count
}

// take counts one request for caller, limit 100, at the test's clock.
func (h syncHooks) take(caller string) Quota { return h.l.Take(caller, 100, h.span, h.c.now()) }

// seen is others, with the limiter's lock.
func (h syncHooks) seen(caller string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.others(caller)
}

// limiterKinds build each limiter on a on the clock c, for the tests both
// must pass.
var limiterKinds = []struct {
	name string
	make func(a *App, c *clock) syncHooks
}{
	{"fixed", func(a *App, c *clock) syncHooks {
		l := a.NewLimiter("sync")
		h := syncHooks{l: l, span: time.Second, c: c, after: &l.after, add: &l.add, log: &l.log, mu: &l.mu}
		h.others = func(caller string) int { w := l.windows[caller]; return int(w.shared) - w.synced }
		h.want = func(n map[string]int) []storage.Count {
			id, _ := windowOf(c.now(), h.span)
			var out []storage.Count
			for caller, k := range n {
				out = append(out, storage.Count{Name: "rate:sync:" + caller, Window: id, Life: h.span, N: k})
			}
			return out
		}
		return h
	}},
	{"sliding", func(a *App, c *clock) syncHooks {
		l := a.NewSlidingLimiter("sync")
		h := syncHooks{l: l, span: 16 * time.Second, c: c, after: &l.after, add: &l.add, log: &l.log, mu: &l.mu}
		h.others = func(caller string) (n int) {
			for _, b := range l.callers[caller].buckets {
				n += b.others()
			}
			return n
		}
		h.want = func(n map[string]int) []storage.Count {
			// Every bucket of the window, those with nothing new too:
			// the other nodes' counts are read there.
			w, t := bucketWidth(h.span), c.now().UnixNano()
			var out []storage.Count
			for caller, k := range n {
				for id := (t - int64(h.span)) / w; id <= t/w; id++ {
					out = append(out, storage.Count{Name: "slide:sync:" + caller, Window: id, Life: h.span + time.Duration(w), N: k * btoi(id == t/w)})
				}
			}
			return out
		}
		return h
	}},
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortCounts orders a batch by counter and window: a sync sends its
// callers in no particular order.
func sortCounts(cs []storage.Count) []storage.Count {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b storage.Count) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Window, b.Window))
	})
	return cs
}

// TestLimitersScheduleSyncs: on a shared database each limiter schedules
// one sync, LimitSync after the first request it admits, and sends
// nothing before it runs; that sync sends the counts of every caller in
// one batch, and none is scheduled while one waits or runs. Requests
// admitted during a sync, and counts a failed sync could not send, are
// sent by one more, scheduled as it ends; a failing database is logged
// once a minute. With nothing left to send, nothing is scheduled.
func TestLimitersScheduleSyncs(t *testing.T) {
	for _, kind := range limiterKinds {
		t.Run(kind.name, func(t *testing.T) {
			apps, c := pgApps(t, 1)
			db := apps[0].db
			h := kind.make(apps[0], c)
			var delays []time.Duration
			var waiting []func()
			*h.after = func(d time.Duration, f func()) {
				delays = append(delays, d)
				waiting = append(waiting, f)
			}
			var logs bytes.Buffer
			*h.log = slog.New(slog.NewJSONHandler(&logs, nil))
			var batches [][]storage.Count
			var during func() // runs in the next sync, between its send and its answer
			down := false
			*h.add = func(adds []storage.Count) ([]int64, error) {
				batches = append(batches, slices.Clone(adds))
				if f := during; f != nil {
					during = nil
					f()
				}
				if down {
					return nil, os.ErrDeadlineExceeded
				}
				return db.AddCounts(adds)
			}
			// run runs the one sync scheduled, as its timer would.
			run := func() {
				t.Helper()
				if len(waiting) != 1 {
					t.Fatalf("%d syncs scheduled, want 1", len(waiting))
				}
				f := waiting[0]
				waiting = nil
				f()
			}
			sent := func(n map[string]int) {
				t.Helper()
				if len(batches) != 1 {
					t.Fatalf("%d batches sent, want 1", len(batches))
				}
				if got, want := sortCounts(batches[0]), sortCounts(h.want(n)); !slices.Equal(got, want) {
					t.Fatalf("sent %+v\nwant %+v", got, want)
				}
				batches = nil
			}

			for range 3 {
				h.take("k")
			}
			h.take("j")
			if !slices.Equal(delays, []time.Duration{LimitSync}) || len(batches) != 0 {
				t.Fatalf("after four requests: syncs scheduled in %v, %d batches sent; want one in %v, none sent", delays, len(batches), LimitSync)
			}
			run()
			sent(map[string]int{"k": 3, "j": 1})
			if len(waiting) != 0 {
				t.Fatal("a sync was scheduled with nothing left to send")
			}

			// A request admitted while a sync runs waits for the next.
			h.take("k")
			during = func() {
				h.take("j")
				if len(waiting) != 0 {
					t.Error("a sync was scheduled while one runs")
				}
			}
			run()
			sent(map[string]int{"k": 1})
			run()
			sent(map[string]int{"j": 1})

			// A failed sync is tried again, logged once.
			down = true
			h.take("k")
			run()
			sent(map[string]int{"k": 1})
			run()
			sent(map[string]int{"k": 1})
			if n := strings.Count(logs.String(), "cannot be read"); n != 1 {
				t.Errorf("two failed syncs logged %d warnings, want 1:\n%s", n, &logs)
			}
			down = false
			run()
			sent(map[string]int{"k": 1})
			if len(waiting) != 0 {
				t.Fatal("a sync was scheduled with nothing left to send")
			}
			if !slices.Equal(delays, slices.Repeat([]time.Duration{LimitSync}, 6)) {
				t.Errorf("syncs scheduled in %v, want each in %v", delays, LimitSync)
			}
			// What reached the shared counters: k 5, j 2.
			for caller, want := range map[string]int64{"k": 5, "j": 2} {
				w := h.want(map[string]int{caller: 1})
				last := w[len(w)-1]
				if n, err := db.AddCount(last.Name, last.Window, last.Life, 0); err != nil || n != want {
					t.Errorf("%s: %d %v, want %d", last.Name, n, err, want)
				}
			}
		})
	}
}

// TestLimitersSyncByThemselves: on a shared database a node's counts
// reach the shared counters without anyone asking (the sync timer), and
// another node, once it has synced, counts them.
func TestLimitersSyncByThemselves(t *testing.T) {
	for _, kind := range limiterKinds {
		t.Run(kind.name, func(t *testing.T) {
			apps, c := pgApps(t, 2)
			a, b := kind.make(apps[0], c), kind.make(apps[1], c)
			for range 5 {
				a.take("k")
			}
			w := a.want(map[string]int{"k": 5})
			last := w[len(w)-1] // the window or bucket of the requests
			eventually(t, "the shared count", 5, func() int {
				n, err := apps[1].db.AddCount(last.Name, last.Window, last.Life, 0)
				if err != nil {
					t.Fatal(err)
				}
				return int(n)
			})
			// b learns the total at its first sync, and from then on
			// counts a's.
			b.take("k")
			eventually(t, "b's count of a's requests", 5, func() int { return b.seen("k") })
			if q := b.take("k"); !q.Allowed || q.Remaining != 100-7 {
				t.Errorf("b's seventh request across nodes: %+v, want %d remaining", q, 100-7)
			}
		})
	}
}

// eventually waits up to 30 s for get to say want.
func eventually(t *testing.T, what string, want int, get func() int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := get()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %d after 30 s, want %d", what, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
