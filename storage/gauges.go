package storage

import (
	"sync"
	"sync/atomic"
	"time"
)

// Gauges are the sizes of the queues, for monitoring. They are counted
// once when the database opens and then kept in memory from what each
// commit wrote (a transaction notes its changes as it writes; they are
// added when, and only when, it commits), so reading them never scans the
// store.
type Gauges struct {
	// Queued counts the messages that have a queue entry, by the
	// message's status: queued, scheduled, deferred, and sending (leased
	// by an attempt in flight).
	Queued map[string]int64
	// Outbox counts the events waiting for webhook fan-out, and
	// PendingDeliveries the webhook deliveries waiting for a retry (or for
	// a busy receiver host) in the webhook queue.
	Outbox            int64
	PendingDeliveries int64
}

// gaugeDelta is what one write transaction changed of the gauges.
type gaugeDelta struct {
	queued   map[string]int64
	outbox   int64
	pending  int64
	inserted [2]int64 // messages inserted: live, test
}

func (g *gaugeDelta) queue(status string, n int64) {
	if g.queued == nil {
		g.queued = map[string]int64{}
	}
	g.queued[status] += n
}

// gauges are a database's current Gauges and message counters.
type gauges struct {
	mu       sync.Mutex
	queued   map[string]int64
	outbox   int64
	pending  int64
	inserted [2]atomic.Int64
}

func (g *gauges) apply(d *gaugeDelta) {
	g.inserted[0].Add(d.inserted[0])
	g.inserted[1].Add(d.inserted[1])
	if d.queued == nil && d.outbox == 0 && d.pending == 0 {
		return
	}
	g.mu.Lock()
	for s, n := range d.queued {
		g.queued[s] += n
	}
	g.outbox += d.outbox
	g.pending += d.pending
	g.mu.Unlock()
}

// Gauges returns the queue sizes as of the last commit.
func (db *DB) Gauges() Gauges {
	g := &db.gauges
	g.mu.Lock()
	defer g.mu.Unlock()
	out := Gauges{Queued: make(map[string]int64, len(g.queued)), Outbox: g.outbox, PendingDeliveries: g.pending}
	for s, n := range g.queued {
		out.Queued[s] = n
	}
	return out
}

// MessagesInserted counts the live (test false) or test messages stored
// since the database was opened: every accepted message, once its commit
// is on disk.
func (db *DB) MessagesInserted(test bool) int64 {
	if test {
		return db.gauges.inserted[1].Load()
	}
	return db.gauges.inserted[0].Load()
}

// QueueHead is the time of the earliest message queue entry: when the
// message waiting longest is (or was) due. ok is false when the queue is
// empty. It reads one key.
func (db *DB) QueueHead() (at time.Time, ok bool) {
	db.kv.View(func(btx kvTx) error {
		k, _ := btx.Bucket(bucketMessageQueue).Cursor().First()
		if len(k) >= 8 {
			at, ok = time.Unix(0, int64(getU64(k[:8]))).UTC(), true
		}
		return nil
	})
	return at, ok
}

// countGauges counts the gauges once, at open: every message queue entry
// whose message is filed under it, by the message's status; the outbox;
// and the pending webhook deliveries from their per-webhook counts. It
// reads the queues, not the history.
func (db *DB) countGauges() error {
	g := &db.gauges
	g.queued = map[string]int64{}
	return db.kv.View(func(btx kvTx) error {
		msgs := btx.Bucket(bucketMessages)
		err := btx.Bucket(bucketMessageQueue).ForEach(func(k, v []byte) error {
			if len(k) < 8 {
				return nil
			}
			var m Message
			if getMessage(msgs, join(string(v), string(k[8:])), &m) != nil || m.QueueAt == nil ||
				m.QueueAt.UnixNano() != int64(getU64(k[:8])) {
				return nil // a stale entry: claims drop it
			}
			g.queued[m.Status]++
			return nil
		})
		if err != nil {
			return err
		}
		g.outbox = int64(btx.Bucket(bucketEventOutbox).KeyN())
		pfx := join(collectionDeliveries+"_"+DeliveryPending, "")
		c := btx.Bucket(bucketCounts).Cursor()
		for k, v := c.Seek(pfx); k != nil && len(k) >= len(pfx) && string(k[:len(pfx)]) == string(pfx); k, v = c.Next() {
			g.pending += int64(getU64(v))
		}
		return nil
	})
}
