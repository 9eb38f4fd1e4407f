package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"mailbolt/hooks"
	"mailbolt/storage"
)

// WebhookInput is a request for a new webhook.
type WebhookInput struct {
	URL         string
	Events      []string
	Description string
}

// MaxWebhooks is how many webhooks one account may have.
const MaxWebhooks = 100

// MaxWebhookDescription is the longest webhook description, in bytes of
// UTF-8 (not characters: "é" is two).
const MaxWebhookDescription = 500

// checkWebhookDescription refuses a description over MaxWebhookDescription,
// saying that the limit counts bytes and how many were given.
func checkWebhookDescription(d string) error {
	if len(d) > MaxWebhookDescription {
		return Validation("description", fmt.Sprintf("must be at most %d bytes of UTF-8, not %d", MaxWebhookDescription, len(d)))
	}
	return nil
}

// CreatedWebhook is a new webhook with its secret, shown only once.
type CreatedWebhook struct {
	Webhook storage.Webhook
	Secret  string
}

func newWebhookSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(b[:])
}

// CreateWebhook subscribes a URL to events. A webhook made with a test key
// receives test-mode events; one made with a live key, live events.
func (a *App) CreateWebhook(ctx context.Context, p Principal, in WebhookInput) (CreatedWebhook, error) {
	if err := a.authorize(p, ScopeWebhooksWrite); err != nil {
		return CreatedWebhook{}, err
	}
	if e := a.checkWebhookURL(ctx, in.URL); e != nil {
		return CreatedWebhook{}, e
	}
	events, e := webhookEvents(in.Events)
	if e != nil {
		return CreatedWebhook{}, e
	}
	if e := checkWebhookDescription(in.Description); e != nil {
		return CreatedWebhook{}, e
	}
	secret := newWebhookSecret()
	w := storage.Webhook{ID: NewID(), AccountID: p.Account.ID, URL: in.URL, Events: events,
		Description: strings.TrimSpace(in.Description), Test: p.Test, Secret: secret, CreatedAt: a.Now()}
	created := CreatedWebhook{Webhook: w, Secret: secret}
	err := update(a, p, action{"webhook.create", w.ID}, &created, func(tx *storage.Tx) error {
		if tx.WebhookCount(p.Account.ID) >= MaxWebhooks {
			return &Error{Code: CodeQuotaExceeded,
				Message: "an account can have at most 100 webhooks; delete one first"}
		}
		return tx.PutWebhook(w)
	})
	if e := storageErr(err, "webhook"); e != nil {
		return CreatedWebhook{}, e
	}
	return created, nil
}

// checkWebhookURL validates a webhook URL (create and update): its length,
// and the SSRF guard's rules for the addresses it names.
func (a *App) checkWebhookURL(ctx context.Context, url string) error {
	if len(url) > 2048 {
		return Validation("url", "must be at most 2048 characters")
	}
	// The check resolves through the dispatcher's own Lookup, so the
	// addresses it judges are those the connections will go to.
	dispatch := a.opts.Webhooks.Dispatch
	checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := dispatch.Guard.CheckURL(checkCtx, url, dispatch.Lookup); err != nil {
		return Validation("url", err.Error())
	}
	return nil
}

// webhookEvents validates the event types a webhook subscribes to (create
// and update) and returns their canonical names, in order, without
// duplicates.
func webhookEvents(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, Validation("events", "at least one event type is required: "+strings.Join(EventTypes, ", "))
	}
	var events []string
	for _, name := range names {
		typ, ok := NormalizeEventType(name)
		if !ok {
			return nil, &Error{Code: CodeValidation,
				Message: "events: unknown event type " + name, Details: map[string]any{"field": "events",
					"reason": "unknown event type " + name, "allowed": slices.Concat(EventTypes, []string{EventAcceptedAlias})}}
		}
		if !slices.Contains(events, typ) {
			events = append(events, typ)
		}
	}
	return events, nil
}

// webhookOf reads a webhook the principal may see: its account's, and of
// its key's mode.
func webhookOf(tx *storage.Tx, p Principal, id string) (storage.Webhook, error) {
	w, err := tx.Webhook(p.Account.ID, id)
	if err == nil && w.Test != p.Test {
		return w, storage.ErrNotFound
	}
	return w, err
}

// Webhook reads one webhook.
func (a *App) Webhook(p Principal, id string) (storage.Webhook, error) {
	if err := a.authorize(p, ScopeWebhooksRead); err != nil {
		return storage.Webhook{}, err
	}
	var w storage.Webhook
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		w, err = webhookOf(tx, p, id)
		return err
	})
	return w, storageErr(err, "webhook")
}

// ListWebhooks lists the webhooks of the principal's account and mode.
func (a *App) ListWebhooks(p Principal, opts storage.ListOptions) (list []storage.Webhook, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeWebhooksRead); err != nil {
		return nil, res, 0, err
	}
	// Live and test webhooks share one list; filtering keeps the page
	// short but exact, as accounts have few webhooks.
	err := a.db.View(func(tx *storage.Tx) error {
		all, _, err := tx.Webhooks(p.Account.ID, storage.ListOptions{Limit: 10000})
		if err != nil {
			return err
		}
		var mine []storage.Webhook
		for _, w := range all {
			if w.Test == p.Test {
				mine = append(mine, w)
			}
		}
		total = len(mine)
		start := 0
		if opts.After != nil {
			start = len(mine)
			for i, w := range mine {
				if w.ID > string(opts.After) {
					start = i
					break
				}
			}
		}
		// Offset may be as large as math.MaxInt (a page far past the end):
		// it is capped at what is left before it is added, so start cannot
		// overflow.
		start += min(max(opts.Offset, 0), len(mine)-start)
		end := min(start+opts.Limit, len(mine))
		list = mine[start:end]
		if end < len(mine) {
			res = storage.ListResult{HasMore: true, Next: []byte(list[len(list)-1].ID)}
		}
		return nil
	})
	return list, res, total, storageErr(err, "webhook")
}

// DeleteWebhook removes a webhook; its pending deliveries stop.
func (a *App) DeleteWebhook(p Principal, id string) error {
	if err := a.authorize(p, ScopeWebhooksWrite); err != nil {
		return err
	}
	err := update(a, p, action{"webhook.delete", id}, new(struct{}), func(tx *storage.Tx) error {
		if _, err := webhookOf(tx, p, id); err != nil {
			return err
		}
		return tx.DeleteWebhook(p.Account.ID, id)
	})
	return storageErr(err, "webhook")
}

// RotateWebhookSecret gives a webhook a new secret. The previous one keeps
// signing (a second v1 in the header) for RotationWindow.
func (a *App) RotateWebhookSecret(p Principal, id string) (CreatedWebhook, error) {
	if err := a.authorize(p, ScopeWebhooksWrite); err != nil {
		return CreatedWebhook{}, err
	}
	var out CreatedWebhook
	err := update(a, p, action{"webhook.rotate_secret", id}, &out, func(tx *storage.Tx) error {
		w, err := webhookOf(tx, p, id)
		if err != nil {
			return err
		}
		until := a.Now().Add(a.opts.Webhooks.RotationWindow)
		w.PreviousSecret, w.PreviousUntil = w.Secret, &until
		w.Secret = newWebhookSecret()
		out = CreatedWebhook{Webhook: w, Secret: w.Secret}
		return tx.PutWebhook(w)
	})
	return out, storageErr(err, "webhook")
}

// Deliveries lists a webhook's deliveries, newest first, optionally only
// those of one status.
func (a *App) Deliveries(p Principal, id, status string, opts storage.ListOptions) (list []storage.Delivery, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeWebhooksRead); err != nil {
		return nil, res, 0, err
	}
	if status != "" && status != storage.DeliveryPending && status != storage.DeliveryDelivered && status != storage.DeliveryFailed {
		return nil, res, 0, Validation("status", "must be pending, delivered or failed")
	}
	err := a.db.View(func(tx *storage.Tx) error {
		if _, err := webhookOf(tx, p, id); err != nil {
			return err
		}
		var err error
		list, res, err = tx.Deliveries(p.Account.ID, id, status, opts)
		total = tx.DeliveryCount(p.Account.ID, id, status)
		return err
	})
	return list, res, total, storageErr(err, "webhook")
}

// Replay queues a failed delivery again with a fresh retry budget. Only a
// delivery that failed within the failed-event retention can be replayed:
// a pending or delivered one is 409, an older or unknown one 404.
func (a *App) Replay(p Principal, webhookID, eventID string) (storage.Delivery, error) {
	if err := a.authorize(p, ScopeWebhooksWrite); err != nil {
		return storage.Delivery{}, err
	}
	var d storage.Delivery
	err := update(a, p, action{"webhook.replay", webhookID + "/" + eventID}, &d, func(tx *storage.Tx) error {
		if _, err := webhookOf(tx, p, webhookID); err != nil {
			return NotFound("webhook")
		}
		var err error
		if d, err = tx.DeliveryByEvent(p.Account.ID, webhookID, eventID); err != nil {
			return NotFound("failed delivery of this event to this webhook")
		}
		now := a.Now()
		switch {
		case d.Status != storage.DeliveryFailed:
			return Conflict("the delivery is " + d.Status + "; only a failed delivery can be replayed")
		case !a.Replayable(d):
			return NotFound("failed delivery of this event to this webhook (older than the retention window)")
		}
		if _, err := tx.EventEnvelope(d.AccountID, d.EventID); err != nil {
			return NotFound("event (it has expired from the history)")
		}
		d.Status, d.Retries, d.FailedAt, d.ExpiresAt = storage.DeliveryPending, 0, nil, time.Time{}
		d.NextAttemptAt = &now
		return tx.UpdateDelivery(d)
	})
	return d, storageErr(err, "delivery")
}

// Replayable reports whether Replay accepts d: it failed within the
// failed-delivery retention window (7 days by default, spec §6), on the
// App's clock. The event must also still be in the history.
func (a *App) Replayable(d storage.Delivery) bool {
	return d.Status == storage.DeliveryFailed && d.FailedAt != nil &&
		a.Now().Sub(*d.FailedAt) <= a.opts.Webhooks.Dispatch.FailedRetention
}

// DeliveryInFlight reports whether d's last attempt is a request still
// out (see hooks.InFlight), on the App's clock.
func (a *App) DeliveryInFlight(d storage.Delivery) bool { return hooks.InFlight(d, a.Now()) }

// hooksOptions are the dispatcher's options: Webhooks.Dispatch on the
// App's clock and log.
func (a *App) hooksOptions() hooks.Options {
	o := a.opts.Webhooks.Dispatch
	o.Now = a.opts.Now
	o.Logger = a.log
	return o
}
