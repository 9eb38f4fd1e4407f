package hooks

import (
	"time"

	"mailbolt/storage"
)

// writeIn is what one background transaction of the loop saves and claims.
type writeIn struct {
	results []result              // answers for deliveries claimed from the queue
	fresh   []freshSave           // fresh events' answers (and requests still out)
	queue   []storage.OutboxEntry // events to queue as pending deliveries (a host was busy) or drop
	claim   int                   // due deliveries to claim from the queue
	perHost map[string]int        // requests in flight per host, for the claim
}

type writeOut struct {
	in   writeIn
	jobs []job
	err  error
}

// queueBatch bounds the outbox entries held in memory to be queued (their
// hosts at the cap): with a backlog for a busy host, the outbox moves to
// the queue a batch per transaction, not all at once into memory.
const queueBatch = 500

// maxUnsaved bounds the answers held in memory waiting to be saved.
const maxUnsaved = 4096

// writeRetry is how long the loop waits after a failed write before it
// tries to save the same answers again.
const writeRetry = time.Second

// write saves answers, queues or drops outbox entries and claims due
// deliveries, in one transaction.
func (d *Dispatcher) write(in writeIn) ([]job, error) {
	var jobs []job
	err := d.db.Update(func(tx *storage.Tx) error {
		jobs = nil
		if err := d.recordTx(tx, in.results); err != nil {
			return err
		}
		if err := d.recordFreshTx(tx, in.fresh); err != nil {
			return err
		}
		if err := d.queueTx(tx, in.queue); err != nil {
			return err
		}
		if in.claim > 0 {
			var err error
			jobs, err = d.claimTx(tx, in.claim, in.perHost)
			return err
		}
		return nil
	})
	return jobs, err
}

func (d *Dispatcher) recordTx(tx *storage.Tx, batch []result) error {
	now := d.now()
	for _, r := range batch {
		del, err := tx.DeliveryByID(r.job.deliveryID)
		if err != nil || del.Status != storage.DeliveryPending || len(del.Attempts) == 0 {
			continue // deleted with its webhook, or already settled
		}
		old := del
		d.apply(&del, r, now)
		if err := tx.ReplaceDelivery(old, del); err != nil {
			return err
		}
	}
	return nil
}

// apply moves a pending delivery along the state machine with the answer
// to its last attempt (the placeholder saved when it was claimed).
func (d *Dispatcher) apply(del *storage.Delivery, r result, now time.Time) {
	last := &del.Attempts[len(del.Attempts)-1]
	if r.aborted {
		// Shutdown cut the request off: undo the claim.
		del.Attempts = del.Attempts[:len(del.Attempts)-1]
		del.NextAttemptAt = &now
		return
	}
	if !r.answered.IsZero() {
		// Delays count from the attempt's end, not from when its answer
		// is saved (a write may wait for others, or fail and be tried
		// again).
		now = r.answered
	}
	*last = storage.DeliveryAttempt{At: r.at, StatusCode: r.status, Error: r.err,
		LatencyMS: float64(r.latency.Microseconds()) / 1000, Response: r.response}
	switch r.outcome() {
	case Delivered:
		d.finish(del, storage.DeliveryDelivered, now)
	case Retry:
		if del.Retries >= d.opts.MaxRetries {
			d.finish(del, storage.DeliveryFailed, now)
			break
		}
		delay := Backoff(del.Retries, d.opts.BaseDelay, d.opts.MaxDelay)
		if ra, ok := RetryAfter(r.status, r.retryAfter, now, d.opts.MaxDelay); ok {
			delay = ra
		}
		del.Retries++
		next := now.Add(delay)
		del.NextAttemptAt = &next
	default:
		d.finish(del, storage.DeliveryFailed, now)
	}
}

// finish moves a delivery to a final status with its retention.
func (d *Dispatcher) finish(del *storage.Delivery, status string, now time.Time) {
	del.Status = status
	del.NextAttemptAt = nil
	if status == storage.DeliveryDelivered {
		del.DeliveredAt = &now
		del.ExpiresAt = now.Add(d.opts.DeliveredRetention)
	} else {
		del.FailedAt = &now
		del.ExpiresAt = now.Add(d.opts.FailedRetention)
	}
}
