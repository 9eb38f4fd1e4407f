package app

import (
	"log/slog"
	"sync"
	"time"

	"mailbolt/storage"
)

// LimitSync is how often a node sends its rate-limit counts to the
// database and reads the other nodes' (when the database is shared).
const LimitSync = 50 * time.Millisecond

// syncer is what Limiter and SlidingLimiter share of sending their counts
// to the shared counters when the database is shared by several nodes:
// the callers with counts not sent, and the timer. A request that leaves
// counts to send schedules a sync LimitSync later unless one is waiting
// or running; a sync sends every caller's counts in one batch, outside
// the lock, and schedules one more if counts were left or put back
// meanwhile. What a batch holds and what its totals mean are the
// limiter's own (collect).
type syncer struct {
	add      func([]storage.Count) ([]int64, error) // nil: one node, nothing to share
	interval time.Duration
	log      *slog.Logger
	after    func(time.Duration, func()) // time.AfterFunc; tests run syncs themselves
	// collect, with mu held, takes the counts to send and marks them
	// sent. settle, with mu held, takes the answer: a total for each
	// count, or err and the counts are to be sent again. It says whether
	// counts are waiting that dirty does not name.
	collect func() (adds []storage.Count, settle func(totals []int64, err error) (more bool))

	// mu guards the syncer and the limiter's counts alike.
	mu     sync.Mutex
	dirty  map[string]struct{} // callers with counts not sent
	armed  bool                // a sync is waiting or running
	warned time.Time           // when a failed sync was last logged
}

// sentCount is what a sync sent of one caller's window (or bucket, id),
// to match with its total, or to put back when the sync fails.
type sentCount struct {
	caller string
	id     int64
	n      int
}

// init makes s the syncer of a limiter of a's, taking its batches from
// collect; s shares nothing on the embedded engine.
func (s *syncer) init(a *App, collect func() ([]storage.Count, func([]int64, error) bool)) {
	s.interval, s.log, s.collect = LimitSync, a.log, collect
	s.dirty = map[string]struct{}{}
	s.after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	if a.db.Shared() {
		s.add = a.db.AddCounts
	}
}

// mark notes that caller has counts to send, and schedules a sync. With
// mu held.
func (s *syncer) mark(caller string) {
	s.dirty[caller] = struct{}{}
	s.arm()
}

// arm schedules a sync unless one is waiting or running.
func (s *syncer) arm() {
	if !s.armed {
		s.armed = true
		s.after(s.interval, s.sync)
	}
}

// sync sends what collect gives in one batch and hands the answer to the
// limiter; on a failure the node decides with what it last read.
func (s *syncer) sync() {
	s.mu.Lock()
	adds, settle := s.collect()
	clear(s.dirty)
	s.mu.Unlock()

	var totals []int64
	var err error
	if len(adds) > 0 {
		totals, err = s.add(adds)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	more := settle(totals, err)
	if err != nil && time.Since(s.warned) > time.Minute {
		s.warned = time.Now()
		s.log.Warn("rate limits: the counts of the other nodes cannot be read; counting on this node alone meanwhile", "err", err)
	}
	if more || len(s.dirty) > 0 {
		s.arm()
	}
}
