package storage

import (
	"time"
)

// Webhook is an account's subscription to events.
type Webhook struct {
	ID          string   `json:"id"`
	AccountID   string   `json:"account_id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
	Test        bool     `json:"test"` // receives test-mode events (created with a test key)
	// Disabled webhooks (PATCH enabled: false) receive no new event, not
	// even an inbound route's; absent (false) in records written before it
	// existed.
	Disabled bool `json:"disabled,omitempty"`
	// Secret signs the requests; stored sealed under the secret key
	// (seal.go), like PreviousSecret.
	Secret string `json:"secret"`
	// PreviousSecret still signs until PreviousUntil (secret rotation).
	PreviousSecret string     `json:"previous_secret,omitempty"`
	PreviousUntil  *time.Time `json:"previous_until,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
}

const collectionWebhooks = "webhooks"

// PutWebhook creates or replaces a webhook.
func (tx *Tx) PutWebhook(w Webhook) error {
	b := tx.bucket(bucketWebhooks)
	key := join(w.AccountID, w.ID)
	if b.Get(key) == nil {
		if err := tx.addCount(collectionWebhooks, w.AccountID, 1); err != nil {
			return err
		}
		if err := tx.bucket(bucketWebhookIDs).Put([]byte(w.ID), []byte(w.AccountID)); err != nil {
			return err
		}
	}
	stored := w
	for _, f := range []struct {
		name string
		val  *string
	}{{"secret", &stored.Secret}, {"previous_secret", &stored.PreviousSecret}} {
		if *f.val == "" {
			continue
		}
		sealed, err := tx.sealValue(webhookContext(w.ID, f.name), []byte(*f.val))
		if err != nil {
			return err
		}
		*f.val = string(sealed)
	}
	return putJSON(b, key, stored)
}

// openWebhook opens the sealed secrets of a webhook read from its bucket.
func (tx *Tx) openWebhook(w *Webhook) error {
	for _, f := range []struct {
		name string
		val  *string
	}{{"secret", &w.Secret}, {"previous_secret", &w.PreviousSecret}} {
		if *f.val == "" {
			continue
		}
		clear, err := tx.openValue(webhookContext(w.ID, f.name), []byte(*f.val))
		if err != nil {
			return err
		}
		*f.val = string(clear)
	}
	return nil
}

// Webhook reads one of an account's webhooks.
func (tx *Tx) Webhook(accountID, id string) (Webhook, error) {
	var w Webhook
	if err := getJSON(tx.bucket(bucketWebhooks), join(accountID, id), &w); err != nil {
		return Webhook{}, err
	}
	if err := tx.openWebhook(&w); err != nil {
		return Webhook{}, err
	}
	return w, nil
}

// WebhookByID reads a webhook without knowing its account.
func (tx *Tx) WebhookByID(id string) (Webhook, error) {
	acct := tx.bucket(bucketWebhookIDs).Get([]byte(id))
	if acct == nil {
		return Webhook{}, ErrNotFound
	}
	return tx.Webhook(string(acct), id)
}

// WebhookExists reports whether a webhook still exists, without reading it.
func (tx *Tx) WebhookExists(id string) bool {
	return tx.bucket(bucketWebhookIDs).Get([]byte(id)) != nil
}

// Webhooks lists an account's webhooks, oldest first.
func (tx *Tx) Webhooks(accountID string, opts ListOptions) ([]Webhook, ListResult, error) {
	list, res, err := scanJSON[Webhook](tx.bucket(bucketWebhooks), prefix(accountID), opts)
	if err != nil {
		return nil, res, err
	}
	for i := range list {
		if err := tx.openWebhook(&list[i]); err != nil {
			return nil, res, err
		}
	}
	return list, res, nil
}

// WebhookCount is the number of webhooks of an account.
func (tx *Tx) WebhookCount(accountID string) int { return tx.count(collectionWebhooks, accountID) }

// DeleteWebhook removes a webhook and every delivery made for it, so
// nothing pending is sent to it again.
func (tx *Tx) DeleteWebhook(accountID, id string) error {
	b := tx.bucket(bucketWebhooks)
	key := join(accountID, id)
	if b.Get(key) == nil {
		return ErrNotFound
	}
	var ids []string
	c := tx.bucket(bucketDeliveriesByWebhook).Cursor()
	pfx := prefix(id)
	for k, _ := c.Seek(pfx); k != nil && hasPrefix(k, pfx); k, _ = c.Next() {
		ids = append(ids, string(k[len(pfx):]))
	}
	for _, did := range ids {
		if err := tx.deleteDelivery(did); err != nil {
			return err
		}
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	if err := tx.bucket(bucketWebhookIDs).Delete([]byte(id)); err != nil {
		return err
	}
	return tx.addCount(collectionWebhooks, accountID, -1)
}
