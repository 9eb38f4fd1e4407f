package transport

import (
	"sync"
	"time"

	"mailbolt/storage"
)

// Counter gathers TLS session outcomes (mta's OnTLS) in memory and writes
// them to storage's TLS report counts on Flush: delivery goroutines never
// wait on the database for it.
type Counter struct {
	db  *storage.DB
	now func() time.Time

	mu      sync.Mutex
	pending map[countKey]uint64
}

type countKey struct {
	day                     uint32
	domain, policy, failure string
}

// NewCounter returns a Counter writing to db; now is the clock (time.Now
// when nil).
func NewCounter(db *storage.DB, now func() time.Time) *Counter {
	if now == nil {
		now = time.Now
	}
	return &Counter{db: db, now: now, pending: map[countKey]uint64{}}
}

// Day is the UTC day number of t, as the counts are kept.
func Day(t time.Time) uint32 { return uint32(t.UTC().Unix() / 86400) }

// Add counts one session for domain under policy ("sts", "tlsa",
// "no-policy-found"): a success when failure is empty.
func (c *Counter) Add(domain, policy, failure string) {
	k := countKey{Day(c.now()), domain, policy, failure}
	c.mu.Lock()
	c.pending[k]++
	c.mu.Unlock()
}

// Flush writes the counts gathered since the last Flush.
func (c *Counter) Flush() error {
	c.mu.Lock()
	pending := c.pending
	c.pending = map[countKey]uint64{}
	c.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := c.db.Update(func(tx *storage.Tx) error {
		for k, n := range pending {
			if err := tx.AddTLSCount(k.day, k.domain, k.policy, k.failure, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		// Put them back for the next try.
		c.mu.Lock()
		for k, n := range pending {
			c.pending[k] += n
		}
		c.mu.Unlock()
	}
	return err
}
