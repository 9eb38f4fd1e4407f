package storage

import (
	"bytes"
	"time"
)

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Delivery is one event's delivery to one webhook, with every attempt.
type Delivery struct {
	ID        string            `json:"id"`
	WebhookID string            `json:"webhook_id"`
	AccountID string            `json:"account_id"`
	EventID   string            `json:"event_id"`
	EventType string            `json:"event"`
	Status    string            `json:"status"`
	Attempts  []DeliveryAttempt `json:"attempts"`
	// Retries counts retries used since the delivery was last queued; a
	// replay starts a fresh budget.
	Retries       int        `json:"retries"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
	FailedAt      *time.Time `json:"failed_at,omitempty"`
	// ExpiresAt is when a finished delivery is swept; zero while pending.
	ExpiresAt time.Time `json:"expires_at,omitempty"`
}

// DeliveryAttempt is one HTTP request to the receiver.
type DeliveryAttempt struct {
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	LatencyMS  float64   `json:"latency_ms"`
	Response   string    `json:"response,omitempty"` // first 1 KB of the body
	// Unanswered marks an attempt saved before its request went out whose
	// answer is not recorded yet and whose fate is not decided: while the
	// delivery's NextAttemptAt (its lease) runs, the request is in flight.
	Unanswered bool `json:"unanswered,omitempty"`
}

func hasPrefix(k, p []byte) bool { return bytes.HasPrefix(k, p) }

func queueKey(at time.Time, id string) []byte {
	return append(putU64(uint64(at.UnixNano())), id...)
}

const collectionDeliveries = "deliveries"

// InsertDelivery stores a new delivery and queues it when it has a next
// attempt.
func (tx *Tx) InsertDelivery(d Delivery) error { return tx.InsertDeliveries([]Delivery{d}) }

// InsertDeliveries stores new deliveries, queueing those with a next
// attempt. The per-webhook counts move once per webhook and status, not once
// per delivery.
func (tx *Tx) InsertDeliveries(ds []Delivery) error {
	counts := deliveryCounts{}
	byEvent, byWebhook := tx.bucket(bucketDeliveryByEvent), tx.bucket(bucketDeliveriesByWebhook)
	for _, d := range ds {
		if err := byEvent.Put(join(d.WebhookID, d.EventID), []byte(d.ID)); err != nil {
			return err
		}
		if err := byWebhook.Put(join(d.WebhookID, d.ID), nil); err != nil {
			return err
		}
		counts.add(collectionDeliveries, d.WebhookID, 1)
		if err := tx.writeDelivery(d, nil, counts); err != nil {
			return err
		}
	}
	return counts.save(tx)
}

// deliveryCounts gathers count changes of one transaction, so that a batch
// of deliveries reads and writes each count key once.
type deliveryCounts map[[2]string]int

func (c deliveryCounts) add(collection, webhookID string, delta int) {
	c[[2]string{collection, webhookID}] += delta
}

func (c deliveryCounts) save(tx *Tx) error {
	for k, delta := range c {
		if delta == 0 {
			continue
		}
		if err := tx.addCount(k[0], k[1], delta); err != nil {
			return err
		}
	}
	return nil
}

// UpdateDelivery replaces a delivery and keeps its status index, queue
// entry and expiry in step.
func (tx *Tx) UpdateDelivery(d Delivery) error {
	old, err := tx.DeliveryByID(d.ID)
	if err != nil {
		return err
	}
	return tx.ReplaceDelivery(old, d)
}

// ReplaceDelivery is UpdateDelivery for a caller that read old in this
// transaction and saves the re-read.
func (tx *Tx) ReplaceDelivery(old, d Delivery) error {
	counts := deliveryCounts{}
	if err := tx.writeDelivery(d, &old, counts); err != nil {
		return err
	}
	return counts.save(tx)
}

func (tx *Tx) writeDelivery(d Delivery, old *Delivery, counts deliveryCounts) error {
	status := tx.bucket(bucketDeliveriesByStatus)
	queue := tx.bucket(bucketDeliveryQueue)
	if old != nil {
		if old.Status != d.Status {
			if err := status.Delete(join(d.WebhookID, old.Status, d.ID)); err != nil {
				return err
			}
			counts.add(collectionDeliveries+"_"+old.Status, d.WebhookID, -1)
			if old.Status == DeliveryPending {
				tx.gauge.pending--
			}
		}
		if old.NextAttemptAt != nil {
			if err := queue.Delete(queueKey(*old.NextAttemptAt, d.ID)); err != nil {
				return err
			}
		}
	}
	if old == nil || old.Status != d.Status {
		if err := status.Put(join(d.WebhookID, d.Status, d.ID), nil); err != nil {
			return err
		}
		counts.add(collectionDeliveries+"_"+d.Status, d.WebhookID, 1)
		if d.Status == DeliveryPending {
			tx.gauge.pending++
		}
	}
	if d.NextAttemptAt != nil {
		var was *time.Time
		if old != nil {
			was = old.NextAttemptAt
		}
		if err := tx.fileQueued(kvBucket.Put, bucketDeliveryQueue, WebhookQueueWritten, *d.NextAttemptAt, was, d.ID, []byte(d.WebhookID)); err != nil {
			return err
		}
	}
	if !d.ExpiresAt.IsZero() && (old == nil || !old.ExpiresAt.Equal(d.ExpiresAt)) {
		if err := tx.addExpiry(d.ExpiresAt, kindDelivery, []byte(d.ID)); err != nil {
			return err
		}
	}
	return tx.bucket(bucketDeliveries).Put([]byte(d.ID), encodeDelivery(d))
}

// DeliveryByID reads a delivery by id, whatever its account: for the
// webhook worker, which holds ids from its own queue. Tenants reach
// deliveries through DeliveryByEvent and Deliveries.
func (tx *Tx) DeliveryByID(id string) (Delivery, error) {
	b := tx.bucket(bucketDeliveries).Get([]byte(id))
	if b == nil {
		return Delivery{}, ErrNotFound
	}
	return decodeDelivery(b)
}

// DeliveryByEvent finds the delivery of an event to one of the account's
// webhooks.
func (tx *Tx) DeliveryByEvent(accountID, webhookID, eventID string) (Delivery, error) {
	id := tx.bucket(bucketDeliveryByEvent).Get(join(webhookID, eventID))
	if id == nil {
		return Delivery{}, ErrNotFound
	}
	d, err := tx.DeliveryByID(string(id))
	if err == nil && d.AccountID != accountID {
		return Delivery{}, ErrNotFound
	}
	return d, err
}

// Deliveries lists the deliveries of one of the account's webhooks newest
// first, all of them or only those with the given status; another
// account's webhook is ErrNotFound.
func (tx *Tx) Deliveries(accountID, webhookID, status string, opts ListOptions) ([]Delivery, ListResult, error) {
	if _, err := tx.Webhook(accountID, webhookID); err != nil {
		return nil, ListResult{}, err
	}
	b, pfx := tx.bucket(bucketDeliveriesByWebhook), prefix(webhookID)
	if status != "" {
		b, pfx = tx.bucket(bucketDeliveriesByStatus), join(webhookID, status, "")
	}
	opts.Reverse = true
	var out []Delivery
	res, err := scan(b, pfx, opts, func(k, _ []byte) error {
		d, err := tx.DeliveryByID(string(k))
		if err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	return out, res, err
}

// DeliveryCount counts the deliveries of one of the account's webhooks
// (of one status, or all); none for another account's webhook.
func (tx *Tx) DeliveryCount(accountID, webhookID, status string) int {
	if _, err := tx.Webhook(accountID, webhookID); err != nil {
		return 0
	}
	if status == "" {
		return tx.count(collectionDeliveries, webhookID)
	}
	return tx.count(collectionDeliveries+"_"+status, webhookID)
}

// QueuedDelivery is an entry of the delivery queue.
type QueuedDelivery struct {
	ID        string
	WebhookID string
	Due       time.Time
}

// DeliveryQueue returns up to max queued deliveries due at or before until,
// earliest first, looking at no more than scan entries and calling skip to
// leave some out (e.g. a busy host).
func (tx *Tx) DeliveryQueue(until time.Time, max, scan int, skip func(webhookID string) bool) []QueuedDelivery {
	var out []QueuedDelivery
	limit := putU64(uint64(until.UnixNano()))
	c := tx.bucket(bucketDeliveryQueue).Cursor()
	seen := 0
	for k, v := c.First(); k != nil && len(out) < max && seen < scan; k, v = c.Next() {
		seen++
		if len(k) < 8 || bytes.Compare(k[:8], limit) > 0 {
			break
		}
		if skip != nil && skip(string(v)) {
			continue
		}
		out = append(out, QueuedDelivery{ID: string(k[8:]), WebhookID: string(v),
			Due: time.Unix(0, int64(getU64(k[:8]))).UTC()})
	}
	return out
}

// NextDeliveryDue is the time of the earliest queued delivery.
func (tx *Tx) NextDeliveryDue() (time.Time, bool) {
	k, _ := tx.bucket(bucketDeliveryQueue).Cursor().First()
	if len(k) < 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(getU64(k[:8]))).UTC(), true
}

func (tx *Tx) deleteDelivery(id string) error {
	d, err := tx.DeliveryByID(id)
	if err != nil {
		return nil
	}
	for _, del := range []struct{ b, k []byte }{
		{bucketDeliveries, []byte(id)},
		{bucketDeliveriesByWebhook, join(d.WebhookID, id)},
		{bucketDeliveriesByStatus, join(d.WebhookID, d.Status, id)},
		{bucketDeliveryByEvent, join(d.WebhookID, d.EventID)},
	} {
		if err := tx.bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	if d.NextAttemptAt != nil {
		if err := tx.bucket(bucketDeliveryQueue).Delete(queueKey(*d.NextAttemptAt, id)); err != nil {
			return err
		}
	}
	if err := tx.addCount(collectionDeliveries, d.WebhookID, -1); err != nil {
		return err
	}
	if d.Status == DeliveryPending {
		tx.gauge.pending--
	}
	return tx.addCount(collectionDeliveries+"_"+d.Status, d.WebhookID, -1)
}

func expireDelivery(tx *Tx, key []byte, now time.Time) error {
	d, err := tx.DeliveryByID(string(key))
	if err != nil || d.Status == DeliveryPending || d.ExpiresAt.IsZero() || d.ExpiresAt.After(now) {
		return nil
	}
	return tx.deleteDelivery(d.ID)
}
