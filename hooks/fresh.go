package hooks

import (
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// The fast path: an event goes out straight from the outbox, without a
// claim written first.

// freshEvent is an event taken from the outbox and sent at once, without a
// claim written first: until every answer is back its deliveries exist only
// in memory, and its outbox entry is the durable record that it still has
// to be delivered. The answers are then saved as new deliveries in the
// transaction that removes the entry, so a crash before that re-sends the
// event (at least once), and never loses it.
type freshEvent struct {
	seq     uint64
	left    int // requests still out
	results []result
}

// outboxLease is one Run's lease on sending straight from the outbox: one
// dispatcher at a time does it (see storage.Tx.LeaseOutbox). The lease is
// renewed well before it ends and given up when Run returns.
type outboxLease struct {
	d            *Dispatcher
	holder       string
	until, retry time.Time
	span         time.Duration
}

func newOutboxLease(d *Dispatcher) outboxLease {
	return outboxLease{d: d, holder: uuid.Must(uuid.NewV7()).String(), span: d.opts.Timeout + time.Minute}
}

// own reports whether this Run may send from the outbox now, taking or
// renewing the lease when it is half over. After a refusal it asks again
// only a quarter of the lease later.
func (o *outboxLease) own() bool {
	now := o.d.now()
	if now.Before(o.until.Add(-o.span / 2)) {
		return true
	}
	if now.Before(o.retry) {
		return false
	}
	var ok bool
	err := o.d.db.Update(func(tx *storage.Tx) error { ok = tx.LeaseOutbox(o.holder, now, now.Add(o.span)); return nil })
	if err != nil {
		o.d.opts.Logger.Error("webhook outbox lease", "err", err)
	}
	if err != nil || !ok {
		o.until, o.retry = time.Time{}, now.Add(o.span/4)
		return false
	}
	o.until = now.Add(o.span)
	return true
}

// releaseOutbox gives the lease up, if this Run still holds it.
func (l *loop) releaseOutbox() error {
	return l.d.db.Update(func(tx *storage.Tx) error { return tx.ReleaseOutbox(l.outbox.holder) })
}

// take reads the outbox after cursor (read-only) and turns the events whose
// every matching webhook can be sent to now into jobs, up to free requests.
// An event with a webhook whose host is at its cap is handed back in queue,
// to be saved as pending deliveries that wait in the delivery queue, and so
// is an event no webhook matches (to be removed). It returns the new cursor
// and whether more entries may be waiting beyond what it looked at.
func (d *Dispatcher) take(cursor uint64, free int, perHost map[string]int) (jobs []job, events []*freshEvent, queue []storage.OutboxEntry, last uint64, more bool, err error) {
	last = cursor
	limit := 2 * free
	err = d.db.View(func(tx *storage.Tx) error {
		entries, err := tx.OutboxAfter(cursor, limit)
		if err != nil {
			return err
		}
		more = len(entries) == limit
		now := d.now()
		match := webhookMatcher(tx)
		keysOf := map[string][][]byte{}
		added := map[string]int{}
		for _, e := range entries {
			ev := e.Event
			matched, err := match(ev)
			if err != nil {
				return err
			}
			if len(matched) > free-len(jobs) && len(matched) <= d.opts.Workers {
				more = false // it waits for requests to come back
				return nil
			}
			busy := len(matched) == 0 || len(matched) > d.opts.Workers
			hosts := make([]string, len(matched))
			for i, w := range matched {
				hosts[i] = hostOf(w.URL)
				if added[hosts[i]]++; perHost[hosts[i]]+added[hosts[i]] > d.opts.PerHost {
					busy = true
				}
			}
			var body []byte
			if !busy {
				if body, err = tx.EventEnvelope(ev.AccountID, ev.ID); err != nil {
					busy = true // gone from the history: the queue path records why
				}
			}
			for _, w := range matched {
				if _, ok := keysOf[w.ID]; busy || ok {
					continue
				}
				keys, err := signingKeys(w, now)
				if err != nil {
					busy = true // the queue path fails that delivery and says why
					continue
				}
				keysOf[w.ID] = keys
			}
			if busy {
				for _, h := range hosts {
					added[h]--
				}
				queue = append(queue, e)
				last = e.Seq
				continue
			}
			for i, w := range matched {
				jobs = append(jobs, job{fresh: true, seq: e.Seq, deliveryID: uuid.Must(uuid.NewV7()).String(),
					webhookID: w.ID, accountID: w.AccountID, created: now, url: w.URL, host: hosts[i], keys: keysOf[w.ID],
					body: body, eventID: ev.ID, eventType: ev.Type})
			}
			events = append(events, &freshEvent{seq: e.Seq, left: len(matched)})
			last = e.Seq
		}
		return nil
	})
	return jobs, events, queue, last, more, err
}

// recordFreshTx saves the deliveries of events sent straight from the
// outbox, each with its one attempt, and removes the events from the
// outbox. A webhook deleted while its request was out gets no delivery.
func (d *Dispatcher) recordFreshTx(tx *storage.Tx, events []*freshEvent) error {
	if len(events) == 0 {
		return nil
	}
	now := d.now()
	exists := map[string]bool{}
	var dels []storage.Delivery
	for _, ev := range events {
		for _, r := range ev.results {
			j := r.job
			ok, seen := exists[j.webhookID]
			if !seen {
				ok = tx.WebhookExists(j.webhookID)
				exists[j.webhookID] = ok
			}
			if !ok {
				continue
			}
			del := storage.Delivery{ID: j.deliveryID, WebhookID: j.webhookID, AccountID: j.accountID,
				EventID: j.eventID, EventType: j.eventType, Status: storage.DeliveryPending,
				Attempts: []storage.DeliveryAttempt{{At: r.at, Error: interrupted, Unanswered: true}}, CreatedAt: j.created}
			d.apply(&del, r, now)
			dels = append(dels, del)
		}
		if err := tx.DoneOutbox(ev.seq); err != nil {
			return err
		}
	}
	return tx.InsertDeliveries(dels)
}
