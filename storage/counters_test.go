package storage

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// counterEngines runs fn on a fresh database of each engine; nodes opens
// another handle on the same database (another node on PostgreSQL, nil
// on the embedded engine, which one process holds).
func counterEngines(t *testing.T, fn func(t *testing.T, db *DB, node func() *DB)) {
	t.Run("embedded", func(t *testing.T) {
		db, err := Open(t.TempDir(), DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		fn(t, db, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		node := nodeOpener(t)
		fn(t, node(), node)
	})
}

// TestCounters: additions add up per (name, window); a batch merges the
// same counter named twice; names of any bytes and length are counters
// of their own; a negative count is refused.
func TestCounters(t *testing.T) {
	counterEngines(t, func(t *testing.T, db *DB, _ func() *DB) {
		add := func(name string, window int64, n int) int64 {
			t.Helper()
			total, err := db.AddCount(name, window, time.Minute, n)
			if err != nil {
				t.Fatal(err)
			}
			return total
		}
		if got := add("login:ip:192.0.2.1", 7, 1); got != 1 {
			t.Fatalf("first count: %d", got)
		}
		if got := add("login:ip:192.0.2.1", 7, 2); got != 3 {
			t.Fatalf("after adding 2: %d", got)
		}
		if got := add("login:ip:192.0.2.1", 7, 0); got != 3 {
			t.Fatalf("reading: %d", got)
		}
		if got := add("login:ip:192.0.2.1", 8, 1); got != 1 {
			t.Fatalf("the next window starts from nothing: %d", got)
		}
		if got := add("login:ip:192.0.2.2", 0, 0); got != 0 {
			t.Fatalf("an unseen counter: %d", got)
		}
		long := strings.Repeat("x", 5000)
		odd := "email:\x00\xff\xfe<nul and not UTF-8>"
		totals, err := db.AddCounts([]Count{
			{Name: "a", Window: 1, Life: time.Second, N: 1},
			{Name: long, Window: 1, Life: time.Second, N: 4},
			{Name: "a", Window: 1, Life: time.Second, N: 2},
			{Name: odd, Window: -5, Life: time.Second, N: 1},
			{Name: long + "y", Window: 1, Life: time.Second, N: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{3, 4, 3, 1, 1}; fmt.Sprint(totals) != fmt.Sprint(want) {
			t.Fatalf("batch totals %v, want %v", totals, want)
		}
		if got := add(long, 1, 1); got != 5 {
			t.Fatalf("a long name counted again: %d", got)
		}
		if got := add(odd, -5, 0); got != 1 {
			t.Fatalf("a name with NUL and invalid UTF-8: %d", got)
		}
		if _, err := db.AddCounts([]Count{{Name: "a", Window: 1, Life: time.Second, N: -1}}); err == nil {
			t.Error("a negative count was taken")
		}
		if totals, err := db.AddCounts(nil); err != nil || len(totals) != 0 {
			t.Errorf("an empty batch: %v %v", totals, err)
		}
	})
}

// TestCountersAcrossNodes: two nodes adding to the same counters at once,
// in batches naming them in opposite orders, end with every addition
// counted once and no batch failed (no deadlock between them); counting
// goes on while a write transaction holds the write lock.
func TestCountersAcrossNodes(t *testing.T) {
	counterEngines(t, func(t *testing.T, db *DB, node func() *DB) {
		dbs := []*DB{db}
		if node != nil {
			dbs = append(dbs, node())
		}
		names := []string{"k1", "k2", "k3", "k4", "k5"}
		const rounds = 60
		var wg sync.WaitGroup
		errs := make(chan error, 4*rounds)
		for i, d := range dbs {
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := range rounds {
						var adds []Count
						for j := range names {
							n := names[j]
							if (i+g+r)%2 == 1 {
								n = names[len(names)-1-j]
							}
							adds = append(adds, Count{Name: n, Window: 42, Life: time.Minute, N: 1})
						}
						if _, err := d.AddCounts(adds); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, d := range dbs {
			for _, n := range names {
				total, err := d.AddCount(n, 42, time.Minute, 0)
				if err != nil {
					t.Fatal(err)
				}
				if want := int64(len(dbs) * 2 * rounds); total != want {
					t.Errorf("%s: %d, want %d", n, total, want)
				}
			}
		}
		if node == nil {
			return
		}
		// A write transaction on one node holds the write lock; the other
		// node still counts.
		inside, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- dbs[0].Update(func(tx *Tx) error {
				close(inside)
				<-release
				return nil
			})
		}()
		<-inside
		counted := make(chan error, 1)
		go func() { _, err := dbs[1].AddCount("during", 1, time.Minute, 1); counted <- err }()
		select {
		case err := <-counted:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("counting waited for the write lock")
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestCountersExpire: windows whose life has ended are dropped.
func TestCountersExpire(t *testing.T) {
	counterEngines(t, func(t *testing.T, db *DB, _ func() *DB) {
		if _, err := db.AddCount("old", 1, time.Second, 3); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AddCount("young", 1, time.Hour, 3); err != nil {
			t.Fatal(err)
		}
		// Age the first window past its life (a second plus the minute
		// of grace), then let the next addition sweep.
		if db.pg != nil {
			if _, err := db.pg.pool.Exec(context.Background(),
				"UPDATE mailbolt_counters SET expires = now() - interval '1 second' WHERE name = 'old'"); err != nil {
				t.Fatal(err)
			}
		} else {
			db.counters.mu.Lock()
			db.counters.m[memCounterKey{"old", 1}].expires = time.Now().Add(-time.Second)
			db.counters.mu.Unlock()
		}
		db.counters.mu.Lock()
		db.counters.swept = time.Time{}
		db.counters.mu.Unlock()
		if _, err := db.AddCount("other", 1, time.Second, 1); err != nil {
			t.Fatal(err)
		}
		if got, err := db.AddCount("old", 1, time.Second, 0); err != nil || got != 0 {
			t.Errorf("the expired window: %d %v", got, err)
		}
		if got, err := db.AddCount("young", 1, time.Hour, 0); err != nil || got != 3 {
			t.Errorf("the live window: %d %v", got, err)
		}
	})
}
