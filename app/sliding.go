package app

import (
	"cmp"
	"slices"
	"time"

	"mailbolt/storage"
)

// SlidingLimiter admits at most limit requests per caller in any span of
// time, not per window of the clock: a request is counted from when it
// was admitted until span later, so no period of length span ever holds
// more than limit admitted requests (on one node), and a refused caller is
// told how long until its oldest counted request leaves (Quota.Wait). The
// public grader check is limited so (spec §8: 10 per hour per source IP).
//
// Each node keeps an exact log of the requests it admitted for a caller:
// their times, at most maxSlidingLog entries; beyond that (a limit over
// 32) a request is counted with the newest entry and at its time, so the
// older ones it joins are counted a little longer than they were made,
// never shorter. When the database is shared by several nodes, each also
// counts what it admits in buckets of span/slidingBuckets, sends them to
// the shared counters at most every LimitSync, as Limiter does, and reads
// back every bucket of the window: the other nodes' requests are counted
// by bucket, each until span after its bucket ends. Across N nodes a
// window admits at most limit + 2×(N−1)×r (r as for Limiter), and a node
// may refuse up to a bucket's length early because of another's requests.
//
// Memory: per caller, the log (at most maxSlidingLog entries) and, shared,
// at most slidingBuckets+1 buckets; at most maxSlidingCallers callers.
// When a new caller would pass that, the callers with nothing left in
// their window go, then the least recently admitted ones, down to 7/8 of
// it: a caller forgotten so starts afresh, which only someone with more
// addresses than that in one window can bring about.
type SlidingLimiter struct {
	syncer // sends the counts across nodes; its mu guards all below

	prefix  string
	callers map[string]*slidingCaller
}

const (
	// maxSlidingLog bounds one caller's log of admitted requests.
	maxSlidingLog = 32
	// slidingBuckets is how many buckets a window is counted in across
	// nodes.
	slidingBuckets = 16
	// maxSlidingCallers bounds the callers a SlidingLimiter keeps.
	maxSlidingCallers = 1 << 14
)

// slidingCaller is one caller's admitted requests in its window, as this
// node knows them.
type slidingCaller struct {
	span time.Duration
	last int64          // when its newest request was admitted (Unix ns)
	log  []slidingEntry // admitted on this node, oldest first
	// buckets (shared database only) are the window's buckets, oldest
	// first: what this node admitted in each and the total across nodes.
	buckets []slidingBucket
}

// slidingEntry is n requests admitted at at (Unix ns).
type slidingEntry struct {
	at int64
	n  int
}

type slidingBucket struct {
	id     int64 // the bucket's start divided by its width
	count  int   // requests this node admitted in it
	pushed int   // of count, sent to the database
	synced int   // of count, included in shared
	shared int64 // the bucket's total across nodes at the last sync
}

// others are the requests other nodes admitted in b, as last read.
func (b slidingBucket) others() int { return int(b.shared) - b.synced }

// NewSlidingLimiter returns a SlidingLimiter whose shared counters are
// named after name ("grader-ip").
func (a *App) NewSlidingLimiter(name string) *SlidingLimiter {
	l := &SlidingLimiter{prefix: "slide:" + name + ":", callers: map[string]*slidingCaller{}}
	l.syncer.init(a, l.collect)
	return l
}

// bucketWidth is the length of the buckets a window of span is counted in
// across nodes.
func bucketWidth(span time.Duration) int64 { return max(1, int64(span)/slidingBuckets) }

// Take counts one request for caller at now unless limit requests were
// admitted in the span before it (now−span excluded, now included). Quota.Wait
// says, when refused, how long until enough of them leave for one more;
// Reset is when the oldest counted leaves (Unix seconds, rounded up).
func (l *SlidingLimiter) Take(caller string, limit int, span time.Duration, now time.Time) Quota {
	t := now.UnixNano()
	from := t - int64(span) // a request at from or before has left
	width := bucketWidth(span)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.callers[caller]
	if c == nil || c.span != span {
		if c == nil && len(l.callers) >= maxSlidingCallers {
			l.makeRoom(t)
		}
		c = &slidingCaller{span: span}
		l.callers[caller] = c
	}
	c.expire(from, width)
	leaves := c.leaving(span, width)
	used := 0
	for _, lv := range leaves {
		used += lv.n
	}
	q := Quota{Limit: limit}
	if len(leaves) > 0 {
		q.Reset = ceilSeconds(leaves[0].at)
	} else {
		q.Reset = ceilSeconds(t + int64(span))
	}
	if used >= limit {
		// Wait until enough have left for one more.
		need := used - limit + 1
		for _, lv := range leaves {
			if need -= lv.n; need <= 0 {
				q.Wait = time.Duration(lv.at - t)
				break
			}
		}
		return q
	}
	c.admit(t)
	if l.add != nil {
		id := t / width
		if n := len(c.buckets); n == 0 || c.buckets[n-1].id != id {
			c.buckets = append(c.buckets, slidingBucket{id: id})
		}
		c.buckets[len(c.buckets)-1].count++
		l.mark(caller)
	}
	q.Allowed, q.Remaining = true, limit-used-1
	return q
}

// ceilSeconds is the Unix second at or after ns.
func ceilSeconds(ns int64) int64 { return (ns + int64(time.Second) - 1) / int64(time.Second) }

// admit logs one request at t (Unix ns, no earlier than the log's newest).
func (c *slidingCaller) admit(t int64) {
	c.last = t
	if n := len(c.log); n > 0 && (c.log[n-1].at == t || n >= maxSlidingLog) {
		// The log is full: counted with the newest entry, which moves to
		// t, so none is counted shorter than it should be.
		c.log[n-1].at, c.log[n-1].n = t, c.log[n-1].n+1
		return
	}
	c.log = append(c.log, slidingEntry{at: t, n: 1})
}

// expire drops the requests at from or before, and the buckets that end
// by from.
func (c *slidingCaller) expire(from, width int64) {
	i := 0
	for i < len(c.log) && c.log[i].at <= from {
		i++
	}
	c.log = c.log[i:]
	j := 0
	for j < len(c.buckets) && (c.buckets[j].id+1)*width <= from {
		j++
	}
	c.buckets = c.buckets[j:]
}

// leaving lists what the caller's window counts, by when it leaves: this
// node's requests span after they were made, other nodes' span after the
// end of their bucket.
func (c *slidingCaller) leaving(span time.Duration, width int64) []slidingEntry {
	out := make([]slidingEntry, 0, len(c.log)+len(c.buckets))
	for _, e := range c.log {
		out = append(out, slidingEntry{at: e.at + int64(span), n: e.n})
	}
	merged := len(out)
	for _, b := range c.buckets {
		if n := b.others(); n > 0 {
			out = append(out, slidingEntry{at: (b.id+1)*width + int64(span), n: n})
		}
	}
	if len(out) > merged {
		slices.SortStableFunc(out, func(a, b slidingEntry) int { return cmp.Compare(a.at, b.at) })
	}
	return out
}

// makeRoom forgets callers until there is room for a new one: first those
// with nothing left in their window, then the least recently admitted,
// down to 7/8 of maxSlidingCallers.
func (l *SlidingLimiter) makeRoom(t int64) {
	for k, c := range l.callers {
		if c.last+int64(c.span)+bucketWidth(c.span) <= t {
			delete(l.callers, k)
			delete(l.dirty, k)
		}
	}
	keep := maxSlidingCallers * 7 / 8
	if len(l.callers) <= keep {
		return
	}
	type aged struct {
		key  string
		last int64
	}
	all := make([]aged, 0, len(l.callers))
	for k, c := range l.callers {
		all = append(all, aged{k, c.last})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.last, b.last) })
	for _, a := range all[:len(all)-keep] {
		delete(l.callers, a.key)
		delete(l.dirty, a.key)
	}
}

// collect takes, for each caller with counts not sent, every bucket of
// its window: what this node admitted since the last sync, or nothing, to
// read it. Each bucket's total across nodes is read back; what a failed
// sync could not send is sent by the next.
func (l *SlidingLimiter) collect() ([]storage.Count, func([]int64, error) bool) {
	var adds []storage.Count
	var refs []sentCount
	for caller := range l.dirty {
		c := l.callers[caller]
		if c == nil {
			continue
		}
		width := bucketWidth(c.span)
		// Every bucket of the window (as of the caller's newest request,
		// on the App's clock), those this node admitted nothing in too:
		// the others' requests are read there.
		var all []slidingBucket
		i := 0
		for id := (c.last - int64(c.span)) / width; id <= c.last/width; id++ {
			for i < len(c.buckets) && c.buckets[i].id < id {
				i++
			}
			if i < len(c.buckets) && c.buckets[i].id == id {
				all = append(all, c.buckets[i])
			} else {
				all = append(all, slidingBucket{id: id})
			}
		}
		for i := range all {
			b := &all[i]
			d := b.count - b.pushed
			adds = append(adds, storage.Count{Name: l.prefix + caller, Window: b.id, Life: c.span + time.Duration(width), N: d})
			b.pushed = b.count
			refs = append(refs, sentCount{caller, b.id, d})
		}
		c.buckets = all
	}
	return adds, func(totals []int64, err error) bool {
		for i, r := range refs {
			c := l.callers[r.caller]
			if c == nil {
				continue // forgotten meanwhile
			}
			k := slices.IndexFunc(c.buckets, func(b slidingBucket) bool { return b.id == r.id })
			if k < 0 {
				continue // left the window meanwhile
			}
			b := &c.buckets[k]
			if err != nil {
				// Send them again next time; meanwhile the node decides with
				// what it last read.
				b.pushed -= r.n
				l.dirty[r.caller] = struct{}{}
				continue
			}
			// One sync runs at a time, so the total includes all this node
			// has pushed for the bucket.
			b.shared, b.synced = totals[i], b.pushed
		}
		return false
	}
}
