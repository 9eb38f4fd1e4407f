package app

import (
	"fmt"
	"time"

	"mailbolt/storage"
)

// Quota is where one caller stands against a limit in the current window.
type Quota struct {
	Limit     int
	Remaining int
	Reset     int64 // Unix seconds when the window ends
	Allowed   bool
	// Wait, when not allowed, is how long until a request would be
	// (SlidingLimiter only; 0 elsewhere: wait until Reset).
	Wait time.Duration
}

// windowOf is the number of the fixed window of span that holds now, and
// the Unix second it ends.
func windowOf(now time.Time, span time.Duration) (id, reset int64) {
	id = now.UnixNano() / int64(span)
	return id, time.Unix(0, (id+1)*int64(span)).Unix()
}

// Attempt counts one attempt of name (a dashboard login from one address,
// for one email, a second-factor code…) against limit per fixed window of
// span, and says whether it may go ahead. The count is in the database,
// added before the answer: several nodes allow exactly the attempts one
// would. Attempts over the limit count too, and are refused.
func (a *App) Attempt(name string, limit int, span time.Duration) (Quota, error) {
	id, reset := windowOf(a.Now(), span)
	total, err := a.db.AddCount("attempt:"+name, id, span, 1)
	if err != nil {
		return Quota{}, Internal(fmt.Errorf("count an attempt: %w", err))
	}
	q := Quota{Limit: limit, Reset: reset}
	if total <= int64(limit) {
		q.Allowed, q.Remaining = true, limit-int(total)
	}
	return q, nil
}

// Limiter counts requests per caller in fixed windows (a key or a source
// IP may make limit requests per span) without a database round trip on
// the request's path. Each node counts what it admits; when the database
// is shared by several nodes, it also sends its counts to the shared
// counters at most every LimitSync, in one batch for every caller, and
// reads back each caller's total across nodes. A node decides with that
// total as last read plus what it has admitted since: so a window admits
// at most limit + 2×(nodes−1)×r requests, where r is the most one node
// admits for that caller between two of its syncs (LimitSync plus a round
// trip). A node never refuses before the total it knows of reaches limit.
// On the embedded engine it only counts in memory.
type Limiter struct {
	syncer // sends the counts across nodes; its mu guards all below

	prefix  string
	windows map[string]*limitWindow
	left    []storage.Count // counts not sent of windows that ended
	swept   int64           // the window of the last sweep
}

// limitWindow is one caller's current window on this node.
type limitWindow struct {
	id     int64
	span   time.Duration
	count  int   // requests this node admitted in the window
	pushed int   // of count, sent to the database
	synced int   // of count, included in shared
	shared int64 // the caller's total across nodes at the last sync
}

// maxLeft bounds the counts of ended windows kept for a database that
// does not answer.
const maxLeft = 4096

// NewLimiter returns a Limiter whose shared counters are named after name
// ("api-key", "api-ip"…).
func (a *App) NewLimiter(name string) *Limiter {
	l := &Limiter{prefix: "rate:" + name + ":", windows: map[string]*limitWindow{}}
	l.syncer.init(a, l.collect)
	return l
}

// Take counts one request for caller at now, in fixed windows of span,
// unless the caller is at limit.
func (l *Limiter) Take(caller string, limit int, span time.Duration, now time.Time) Quota {
	id, reset := windowOf(now, span)
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != l.swept && len(l.windows) > 4096 {
		for k, w := range l.windows {
			if w.id < id {
				l.retire(k, w)
				delete(l.windows, k)
			}
		}
		l.swept = id
	}
	w := l.windows[caller]
	if w == nil {
		w = &limitWindow{id: id, span: span}
		l.windows[caller] = w
	}
	if w.id != id || w.span != span {
		l.retire(caller, w)
		*w = limitWindow{id: id, span: span}
	}
	q := Quota{Limit: limit, Reset: reset}
	used := w.shared + int64(w.count-w.synced)
	if used >= int64(limit) {
		return q
	}
	w.count++
	q.Remaining, q.Allowed = limit-int(used)-1, true
	if l.add != nil {
		l.mark(caller)
	}
	return q
}

// retire keeps the counts of w not sent yet, for the next sync.
func (l *Limiter) retire(caller string, w *limitWindow) {
	delete(l.dirty, caller)
	if l.add == nil || w.count <= w.pushed {
		return
	}
	if len(l.left) >= maxLeft {
		l.left = l.left[1:]
	}
	l.left = append(l.left, storage.Count{Name: l.prefix + caller, Window: w.id, Life: w.span, N: w.count - w.pushed})
}

// collect takes the counts not sent yet: those of windows that ended,
// then each caller's current window. Those a failed sync could not send
// are sent by the next; the totals of current windows are read back.
func (l *Limiter) collect() ([]storage.Count, func([]int64, error) bool) {
	adds := l.left
	l.left = nil
	ended := len(adds)
	refs := make([]sentCount, 0, len(l.dirty))
	for caller := range l.dirty {
		w := l.windows[caller]
		if w == nil {
			continue
		}
		if d := w.count - w.pushed; d > 0 {
			adds = append(adds, storage.Count{Name: l.prefix + caller, Window: w.id, Life: w.span, N: d})
			w.pushed = w.count
			refs = append(refs, sentCount{caller, w.id, d})
		}
	}
	return adds, func(totals []int64, err error) bool {
		if err != nil {
			// Send them again next time; meanwhile each node decides alone.
			for _, c := range adds[:ended] {
				if len(l.left) < maxLeft {
					l.left = append(l.left, c)
				}
			}
			for i, r := range refs {
				if w := l.windows[r.caller]; w != nil && w.id == r.id {
					w.pushed -= r.n
					l.dirty[r.caller] = struct{}{}
				} else if len(l.left) < maxLeft {
					l.left = append(l.left, adds[ended+i])
				}
			}
		} else {
			for i, r := range refs {
				if w := l.windows[r.caller]; w != nil && w.id == r.id {
					// One sync runs at a time, so the total includes all
					// this node has pushed for the window.
					w.shared, w.synced = totals[ended+i], w.pushed
				}
			}
		}
		return len(l.left) > 0
	}
}
