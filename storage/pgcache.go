package storage

import (
	"bytes"
	"sync"
)

// pgCache is one node's copy of the records its write transactions read
// and wrote on the PostgreSQL engine, valid at generation gen: the value
// of mailbolt_generation after this node's last writing commit. Every
// writing commit bumps the generation, so a commit that finds it where
// the cache left it knows no other node has written since, and that every
// cached record (and every record cached as absent) is still what the
// server holds. The node's write transactions use it, one at a time, and
// read-only transactions made to warm it (DB.Warm) add to it what they read
// of the same generation.
type pgCache struct {
	mu      sync.Mutex
	gen     int64                          // 0: empty
	entries map[string][]byte              // bucket 0x00 key → value; nil: absent
	seqs    map[string]uint64              // bucket → its sequence
	ranges  map[string]map[string][]pgPair // bucket → backward range query → its page
	spans   map[string]pgSpans             // bucket → what forward range reads learned
	bytes   int
}

// reach is the generation a cached view may read the cache at, given
// that the server stood at gen after the view began: the cache's, when it
// is gen or later, since each of those was the server's state at some
// moment after the view began. A cache behind the server is not waited
// for: this node's commit in flight may be queued behind another node's
// write lock.
func (c *pgCache) reach(gen int64) (int64, bool) {
	at := c.generation()
	return at, at != 0 && at >= gen
}

// pgCacheMaxRange is the longest page of a range read the cache keeps.
const pgCacheMaxRange = 64

// pgRangeKey names one range read: its query, where it starts and how
// many rows it asks for.
func pgRangeKey(sql string, from []byte, size int) string {
	return sql + "\x00" + string(from) + "\x00" + string(rune(size))
}

// holds reports whether the cache holds generation at (any generation
// with at 0); c.mu is held.
func (c *pgCache) holds(at int64) bool {
	return c.gen != 0 && (at == 0 || c.gen == at)
}

// rangeGet is a cached page, when the cache holds generation at (any
// generation with at 0).
func (c *pgCache) rangeGet(bucket, key string, at int64) ([]pgPair, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holds(at) {
		return nil, false
	}
	p, ok := c.ranges[bucket][key]
	return p, ok
}

// Bounds on what the cache holds: larger values are not kept, and a cache
// that outgrows its budget starts again empty.
const (
	pgCacheMaxValue   = 8 << 10
	pgCacheMaxEntries = 200_000
	pgCacheMaxBytes   = 48 << 20
)

func pgCacheKey(bucket string, key []byte) string {
	return bucket + "\x00" + string(key)
}

// get is a cached record (nil: cached as absent), when the cache holds
// generation at (any generation with at 0).
func (c *pgCache) get(bucket string, key []byte, at int64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holds(at) {
		return nil, false
	}
	v, ok := c.entries[pgCacheKey(bucket, key)]
	return v, ok
}

func (c *pgCache) seq(bucket string) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == 0 {
		return 0, false
	}
	n, ok := c.seqs[bucket]
	return n, ok
}

func (c *pgCache) generation() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *pgCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset()
}

func (c *pgCache) reset() {
	c.gen, c.entries, c.seqs, c.ranges, c.spans, c.bytes = 0, nil, nil, nil, nil, 0
}

// keep records what t read and wrote, t having committed and left the
// generation at gen (bumped from gen-1 when wrote). When the cache was not
// at the generation t started from, another node wrote in between: the
// cache starts again from t alone, whose reads were made under the write
// lock or checked against the generation.
func (c *pgCache) keep(t *pgTx, gen int64, wrote bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	from := gen
	if wrote {
		from = gen - 1
	}
	if c.gen == 0 || c.gen != from || len(c.entries) > pgCacheMaxEntries || c.bytes > pgCacheMaxBytes {
		c.reset()
		c.entries, c.seqs, c.ranges = map[string][]byte{}, map[string]uint64{}, map[string]map[string][]pgPair{}
		c.spans = map[string]pgSpans{}
	}
	c.gen = gen
	for _, b := range t.open {
		for k, v := range b.read {
			c.put(b.name, k, v)
		}
		for k, w := range b.written {
			if w.deleted {
				c.put(b.name, k, nil)
			} else {
				c.put(b.name, k, bytes.Clone(w.value)) // the caller may reuse its buffer
			}
		}
		if b.seqRead {
			c.seqs[b.name] = b.seq
		}
		switch {
		case len(b.written) > 0:
			for k := range c.ranges[b.name] { // every page of it may have changed
				c.putRange(b.name, k, nil, true)
			}
			delete(c.ranges, b.name)
			c.setSpans(b.name, nil)
		default:
			c.keepRanges(b)
		}
	}
}

func (c *pgCache) put(bucket, key string, v []byte) {
	k := bucket + "\x00" + key
	if len(v) > pgCacheMaxValue {
		if old, ok := c.entries[k]; ok {
			c.bytes -= len(k) + len(old)
			delete(c.entries, k)
		}
		return
	}
	if old, ok := c.entries[k]; ok {
		c.bytes -= len(k) + len(old)
	}
	c.entries[k] = v
	c.bytes += len(k) + len(v)
}

// warm adds what the read-only transaction t read, its snapshot being of
// generation gen, when that is the generation the cache holds (and so the
// same state); otherwise the reads are of another state and are dropped.
func (c *pgCache) warm(t *pgTx, gen int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == 0 || c.gen != gen || len(c.entries) > pgCacheMaxEntries || c.bytes > pgCacheMaxBytes {
		return
	}
	for _, b := range t.open {
		for k, v := range b.read {
			c.put(b.name, k, v)
		}
		c.keepRanges(b)
	}
}

// keepRanges records the range reads of b, which did not write to it.
func (c *pgCache) keepRanges(b *pgBucket) {
	for k, p := range b.backs {
		c.putRange(b.name, k, p, false)
	}
	if len(b.spans) > 0 {
		ss := c.spans[b.name]
		for _, s := range b.spans {
			ss = ss.add(s)
		}
		c.setSpans(b.name, ss)
	}
}

// setSpans replaces bucket's spans (nil: forgets them), keeping c.bytes right.
func (c *pgCache) setSpans(bucket string, ss pgSpans) {
	for i := range c.spans[bucket] {
		c.bytes -= c.spans[bucket][i].size()
	}
	if len(ss) == 0 {
		delete(c.spans, bucket)
		return
	}
	for i := range ss {
		c.bytes += ss[i].size()
	}
	c.spans[bucket] = ss
}

// spanGet answers a forward range read from (from, incl) when a span
// holds it and the cache holds generation at (any generation with at 0).
func (c *pgCache) spanGet(bucket string, from []byte, incl bool, at int64) (pairs []pgPair, end, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holds(at) {
		return nil, false, false
	}
	return c.spans[bucket].find(from, incl)
}

// putRange caches page (or forgets it), keeping c.bytes right.
func (c *pgCache) putRange(bucket, key string, page []pgPair, forget bool) {
	size := func(p []pgPair) (n int) {
		for _, kv := range p {
			n += len(kv.k) + len(kv.v)
		}
		return n + len(key)
	}
	if old, ok := c.ranges[bucket][key]; ok {
		c.bytes -= size(old)
		delete(c.ranges[bucket], key)
	}
	if forget {
		return
	}
	if c.ranges[bucket] == nil {
		c.ranges[bucket] = map[string][]pgPair{}
	}
	c.ranges[bucket][key] = page
	c.bytes += size(page)
}
