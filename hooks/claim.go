package hooks

import (
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// The queue path: deliveries saved as pending (retries, replays, events
// whose receiver host was at its cap) are claimed before they are sent.

// interrupted is the error an unanswered attempt shows (it is saved with
// its placeholder) once its lease is over: the process stopped while the
// request was out, and no answer was recorded.
const interrupted = "interrupted: no answer was recorded (the server stopped during the request)"

// InFlight reports whether d's last attempt is a request still out: it was
// saved Unanswered when the delivery was claimed, and the claim's lease
// (the delivery's NextAttemptAt) has not run out at now. After the lease
// the attempt is interrupted: the next claim counts it as a retryable
// failure.
func InFlight(d storage.Delivery, now time.Time) bool {
	n := len(d.Attempts)
	return n > 0 && d.Status == storage.DeliveryPending && d.Attempts[n-1].Unanswered &&
		d.NextAttemptAt != nil && now.Before(*d.NextAttemptAt)
}

// webhookMatcher returns a function that lists the webhooks an outbox
// event goes to (its account's enabled ones, of its mode, subscribed to its
// type; or only the one the event names), leaving out those created after
// the event (see before), reading each account's webhooks once per
// transaction.
func webhookMatcher(tx *storage.Tx) func(storage.Event) ([]storage.Webhook, error) {
	byAccount := map[string][]storage.Webhook{}
	return func(ev storage.Event) ([]storage.Webhook, error) {
		if ev.ID == "" {
			return nil, nil // expired before fan-out
		}
		subs, ok := byAccount[ev.AccountID]
		if !ok {
			var err error
			if subs, _, err = tx.Webhooks(ev.AccountID, storage.ListOptions{Limit: 10000}); err != nil {
				return nil, err
			}
			byAccount[ev.AccountID] = subs
		}
		var matched []storage.Webhook
		for _, w := range subs {
			if w.Disabled || w.Test != ev.Test || before(ev, w) {
				continue
			}
			// An event addressed to one webhook (an inbound route's) goes
			// to that one alone, whatever its event list.
			if ev.WebhookID != "" && w.ID == ev.WebhookID || ev.WebhookID == "" && slices.Contains(w.Events, ev.Type) {
				matched = append(matched, w)
			}
		}
		return matched, nil
	}
}

// before reports whether event ev was recorded before webhook w was
// created: a webhook receives only the events recorded after it was
// created, even those still waiting in the outbox when it was (a backlog
// behind busy workers). Both times are the App's clock to the nanosecond
// (the event's timestamp, as its envelope shows it, and the webhook's
// created_at); an event of the very nanosecond of the creation goes to
// the webhook. An event whose time cannot be read (zero) goes to every
// webhook, as before times were compared.
func before(ev storage.Event, w storage.Webhook) bool {
	return !ev.Timestamp.IsZero() && ev.Timestamp.Before(w.CreatedAt)
}

// queueTx turns outbox entries into one pending delivery per matching
// webhook, due now, and removes them from the outbox in the same
// transaction. An entry another dispatcher has removed meanwhile is left
// to it.
func (d *Dispatcher) queueTx(tx *storage.Tx, entries []storage.OutboxEntry) error {
	match := webhookMatcher(tx)
	now := d.now()
	var dels []storage.Delivery
	for _, e := range entries {
		if !tx.InOutbox(e.Seq) {
			continue
		}
		ev := e.Event
		matched, err := match(ev)
		if err != nil {
			return err
		}
		for _, w := range matched {
			dels = append(dels, storage.Delivery{ID: uuid.Must(uuid.NewV7()).String(), WebhookID: w.ID, AccountID: w.AccountID,
				EventID: ev.ID, EventType: ev.Type, Status: storage.DeliveryPending, Attempts: []storage.DeliveryAttempt{},
				NextAttemptAt: &now, CreatedAt: now})
		}
		if err := tx.DoneOutbox(e.Seq); err != nil {
			return err
		}
	}
	return tx.InsertDeliveries(dels)
}

// claimTx takes up to max due deliveries, leaving out hosts already at
// their cap. Each is saved with a placeholder attempt and a lease (its next
// attempt moved past the request deadline) before anything is sent, so a
// crash re-sends it after the lease instead of losing it.
func (d *Dispatcher) claimTx(tx *storage.Tx, max int, perHost map[string]int) ([]job, error) {
	var jobs []job
	err := func() error {
		now := d.now()
		claimed := map[string]int{}
		webhooks := map[string]*storage.Webhook{}
		hookOf := func(id string) *storage.Webhook {
			if w, ok := webhooks[id]; ok {
				return w
			}
			w, err := tx.WebhookByID(id)
			if err != nil {
				webhooks[id] = nil
				return nil
			}
			webhooks[id] = &w
			return &w
		}
		skip := func(webhookID string) bool {
			w := hookOf(webhookID)
			if w == nil {
				return false
			}
			h := hostOf(w.URL)
			return perHost[h]+claimed[h] >= d.opts.PerHost
		}
		for _, q := range tx.DeliveryQueue(now, max, maxQueueScan, skip) {
			del, err := tx.DeliveryByID(q.ID)
			if err != nil {
				continue
			}
			old := del
			w := hookOf(q.WebhookID)
			if w == nil || del.Status != storage.DeliveryPending {
				del.NextAttemptAt = nil
				if err := tx.ReplaceDelivery(old, del); err != nil {
					return err
				}
				continue
			}
			h := hostOf(w.URL)
			if perHost[h]+claimed[h] >= d.opts.PerHost {
				continue
			}
			if n := len(del.Attempts); n > 0 && del.Attempts[n-1].Unanswered {
				// The previous request's fate is unknown (its lease ran
				// out): count it as a retryable failure, with its error.
				del.Attempts[n-1].Unanswered = false
				if del.Retries >= d.opts.MaxRetries {
					d.finish(&del, storage.DeliveryFailed, now)
					if err := tx.ReplaceDelivery(old, del); err != nil {
						return err
					}
					continue
				}
				del.Retries++
			}
			body, err := tx.EventEnvelope(del.AccountID, del.EventID)
			if err != nil {
				del.Attempts = append(del.Attempts, storage.DeliveryAttempt{At: now, Error: "the event has expired from the history"})
				d.finish(&del, storage.DeliveryFailed, now)
				if err := tx.ReplaceDelivery(old, del); err != nil {
					return err
				}
				continue
			}
			keys, err := signingKeys(*w, now)
			if err != nil {
				// A damaged record: no request can be signed for it.
				del.Attempts = append(del.Attempts, storage.DeliveryAttempt{At: now, Error: "the webhook's signing secret cannot be read: " + err.Error()})
				d.finish(&del, storage.DeliveryFailed, now)
				if err := tx.ReplaceDelivery(old, del); err != nil {
					return err
				}
				continue
			}
			lease := now.Add(d.opts.Timeout + 30*time.Second)
			del.NextAttemptAt = &lease
			del.Attempts = append(del.Attempts, storage.DeliveryAttempt{At: now, Error: interrupted, Unanswered: true})
			if err := tx.ReplaceDelivery(old, del); err != nil {
				return err
			}
			claimed[h]++
			jobs = append(jobs, job{deliveryID: del.ID, url: w.URL, host: h, keys: keys, body: body,
				eventID: del.EventID, eventType: del.EventType})
		}
		return nil
	}()
	return jobs, err
}

// signingKeys are the keys a request is signed with: the current secret,
// and the previous one while its rotation window lasts.
func signingKeys(w storage.Webhook, now time.Time) ([][]byte, error) {
	key, err := DecodeSecret(w.Secret)
	if err != nil {
		return nil, err
	}
	keys := [][]byte{key}
	if w.PreviousSecret != "" && w.PreviousUntil != nil && now.Before(*w.PreviousUntil) {
		prev, err := DecodeSecret(w.PreviousSecret)
		if err != nil {
			return nil, err
		}
		keys = append(keys, prev)
	}
	return keys, nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}
