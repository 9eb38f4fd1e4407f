package app

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"mailbolt/storage"
)

// WebhookPatch changes a webhook: each field left nil stays as it is. The
// secret is never changed here (see RotateWebhookSecret).
type WebhookPatch struct {
	URL         *string
	Events      *[]string
	Description *string
	Enabled     *bool
}

// UpdateWebhook changes a webhook's URL, events, description or whether it
// is enabled, with the rules of CreateWebhook (the SSRF guard on the URL,
// known event types). A disabled webhook is matched to no new event;
// deliveries already pending keep their schedule. Another account's
// webhook, or one of the other mode, is 404.
func (a *App) UpdateWebhook(ctx context.Context, p Principal, id string, in WebhookPatch) (storage.Webhook, error) {
	if err := a.authorize(p, ScopeWebhooksWrite); err != nil {
		return storage.Webhook{}, err
	}
	// 404 before the input is judged (the URL check may take a lookup).
	if e := storageErr(a.db.View(func(tx *storage.Tx) error { _, err := webhookOf(tx, p, id); return err }), "webhook"); e != nil {
		return storage.Webhook{}, e
	}
	if in.URL != nil {
		if e := a.checkWebhookURL(ctx, *in.URL); e != nil {
			return storage.Webhook{}, e
		}
	}
	var events []string
	if in.Events != nil {
		var e error
		if events, e = webhookEvents(*in.Events); e != nil {
			return storage.Webhook{}, e
		}
	}
	if in.Description != nil {
		if e := checkWebhookDescription(*in.Description); e != nil {
			return storage.Webhook{}, e
		}
	}
	var w storage.Webhook
	err := update(a, p, action{"webhook.update", id}, &w, func(tx *storage.Tx) error {
		var err error
		if w, err = webhookOf(tx, p, id); err != nil {
			return err
		}
		if in.URL != nil {
			w.URL = *in.URL
		}
		if in.Events != nil {
			w.Events = events
		}
		if in.Description != nil {
			w.Description = strings.TrimSpace(*in.Description)
		}
		if in.Enabled != nil {
			w.Disabled = !*in.Enabled
		}
		return tx.PutWebhook(w)
	})
	return w, storageErr(err, "webhook")
}

// EventWebhookTest is the type of the event POST /v1/webhooks/{id}/test
// sends. It is not one of EventTypes: no webhook subscribes to it, and it
// is neither stored in the event history nor delivered again.
const EventWebhookTest = "webhook.test"

// webhookTestData is the webhook.test payload.
type webhookTestData struct {
	WebhookID string `json:"webhookId"`
}

// WebhookTest is what a webhook's receiver answered to a webhook.test
// event.
type WebhookTest struct {
	EventID    string
	URL        string
	At         time.Time
	StatusCode int // 0 when there was no complete answer within the deadline
	Error      string
	Latency    time.Duration
	Response   string // the first 1024 bytes of the answer's body
}

// TestWebhook sends a signed webhook.test event to a webhook now and
// waits for the answer, through the dispatcher's client: the signature,
// the address guard and the deadline (--webhook-timeout) of deliveries.
// The event is not stored anywhere (event history, delivery log), not
// retried, and sent whether the webhook is enabled or not. A receiver that
// cannot be reached is reported in the result, never as an error.
func (a *App) TestWebhook(ctx context.Context, p Principal, id string) (WebhookTest, error) {
	if err := a.authorize(p, ScopeWebhooksWrite); err != nil {
		return WebhookTest{}, err
	}
	var w storage.Webhook
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		w, err = webhookOf(tx, p, id)
		return err
	})
	if e := storageErr(err, "webhook"); e != nil {
		return WebhookTest{}, e
	}
	now := a.Now().UTC()
	eventID := NewID()
	body, err := json.Marshal(struct {
		ID        string          `json:"id"`
		Event     string          `json:"event"`
		Timestamp string          `json:"timestamp"`
		Data      webhookTestData `json:"data"`
	}{eventID, EventWebhookTest, now.Format(time.RFC3339Nano), webhookTestData{WebhookID: w.ID}})
	if err != nil {
		return WebhookTest{}, err
	}
	r, err := a.hooks.Try(ctx, w, body, eventID, EventWebhookTest)
	if err != nil {
		return WebhookTest{}, err
	}
	return WebhookTest{EventID: eventID, URL: w.URL, At: r.At, StatusCode: r.StatusCode, Error: r.Error,
		Latency: r.Latency, Response: r.Response}, nil
}
