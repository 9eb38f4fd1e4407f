package storage

import (
	"crypto/sha256"
	"errors"
	"sort"
	"sync"
	"time"
)

// Count is one addition to a shared counter: N more in the window Window
// of the counter Name. Callers number their windows (a fixed window of
// span d holding t is t.UnixNano()/d); Life is how long a window is kept
// after its first count, at least (a minute more is added for clocks that
// disagree), so it must be no shorter than the window's span.
type Count struct {
	Name   string
	Window int64
	Life   time.Duration
	N      int
}

// counterNameMax is the longest name kept as it is; longer names are
// counted under their SHA-256 (an email typed into a login form can be
// long).
const counterNameMax = 200

// counterGrace is added to every window's life.
const counterGrace = time.Minute

// counterName is the name a counter is stored under.
func counterName(n string) []byte {
	if len(n) <= counterNameMax {
		return []byte(n)
	}
	h := sha256.Sum256([]byte(n))
	return append([]byte("sha256:"), h[:]...)
}

// AddCount adds n to the counter name in window and returns its total:
// on the shared engine, the total across every node. n may be 0 (only the
// total is read).
func (db *DB) AddCount(name string, window int64, life time.Duration, n int) (int64, error) {
	t, err := db.AddCounts([]Count{{Name: name, Window: window, Life: life, N: n}})
	if err != nil {
		return 0, err
	}
	return t[0], nil
}

// AddCounts adds each count and returns the totals after the additions, in
// the order of adds (the same counter named twice gets the same total,
// both additions included). On the embedded engine the counters live in
// memory: one process uses the file, and they are lost with it, as rate
// windows always were. On PostgreSQL they are rows of mailbolt_counters,
// written outside the write lock (counters_pg.go): counting never waits
// for record commits, nor they for it.
func (db *DB) AddCounts(adds []Count) ([]int64, error) {
	if len(adds) == 0 {
		return nil, nil
	}
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return nil, errors.New("storage: add counts: the database is closed")
	}
	// Merge the additions to one counter, and sort them, so that every
	// node locks the rows of a batch in one order (no deadlock).
	type key struct {
		name   string
		window int64
	}
	merged := map[key]*counterAdd{}
	var list []*counterAdd
	for _, a := range adds {
		if a.N < 0 {
			return nil, errors.New("storage: add counts: a negative count")
		}
		k := key{string(counterName(a.Name)), a.Window}
		m := merged[k]
		if m == nil {
			m = &counterAdd{name: []byte(k.name), window: a.Window}
			merged[k] = m
			list = append(list, m)
		}
		m.n += int64(a.N)
		m.life = max(m.life, a.Life+counterGrace)
	}
	sort.Slice(list, func(i, j int) bool {
		if c := string(list[i].name); c != string(list[j].name) {
			return c < string(list[j].name)
		}
		return list[i].window < list[j].window
	})
	if db.pg != nil {
		if err := db.pg.addCounts(list); err != nil {
			return nil, err
		}
		if db.counters.sweepDue(time.Now()) {
			// Once a minute a node drops the windows that have ended
			// (every node's clock is the database's here); a failure
			// leaves them for the next time.
			db.pg.expireCounts()
		}
	} else {
		db.counters.add(list)
	}
	out := make([]int64, len(adds))
	for i, a := range adds {
		out[i] = merged[key{string(counterName(a.Name)), a.Window}].total
	}
	return out, nil
}

// counterAdd is one counter's addition in a batch, and its total after.
type counterAdd struct {
	name   []byte
	window int64
	n      int64
	life   time.Duration
	total  int64
}

// memCounters are the embedded engine's counters.
type memCounters struct {
	mu    sync.Mutex
	m     map[memCounterKey]*memCounter
	swept time.Time
}

type memCounterKey struct {
	name   string
	window int64
}

type memCounter struct {
	n       int64
	expires time.Time
}

func (c *memCounters) add(list []*counterAdd) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[memCounterKey]*memCounter{}
	}
	if c.dueLocked(now) {
		for k, v := range c.m {
			if now.After(v.expires) {
				delete(c.m, k)
			}
		}
	}
	for _, a := range list {
		k := memCounterKey{string(a.name), a.window}
		v := c.m[k]
		if v == nil {
			v = &memCounter{expires: now.Add(a.life)}
			c.m[k] = v
		}
		v.n += a.n
		a.total = v.n
	}
}

// sweepDue reports whether a minute has passed since it last said so.
func (c *memCounters) sweepDue(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dueLocked(now)
}

func (c *memCounters) dueLocked(now time.Time) bool {
	if now.Sub(c.swept) < time.Minute {
		return false
	}
	c.swept = now
	return true
}
