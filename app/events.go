package app

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"mailbolt/storage"
)

// Event types (spec §6). message.accepted is accepted wherever event names
// are given, as an alias of message.sent.
const (
	EventSent          = "message.sent"
	EventDelivered     = "message.delivered"
	EventOpened        = "message.opened"
	EventClicked       = "message.clicked"
	EventBounced       = "message.bounced"
	EventComplained    = "message.complained"
	EventUnsubscribed  = "recipient.unsubscribed"
	EventAcceptedAlias = "message.accepted"
)

// EventTypes lists every event type a webhook can subscribe to.
var EventTypes = []string{EventSent, EventDelivered, EventOpened, EventClicked, EventBounced, EventComplained, EventUnsubscribed}

// NormalizeEventType maps an event name given by a user to its canonical
// type, or reports it unknown.
func NormalizeEventType(name string) (string, bool) {
	if name == EventAcceptedAlias {
		return EventSent, true
	}
	return name, slices.Contains(EventTypes, name)
}

// envelope is the JSON every webhook receives (spec §2).
type envelope struct {
	ID        string `json:"id"`
	Event     string `json:"event"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// NewEvent builds an event record with its envelope bytes, ready for
// tx.AppendEvent in the transaction of the change it reports.
func (a *App) NewEvent(accountID string, test bool, typ string, at time.Time, data any) (storage.Event, error) {
	if _, ok := NormalizeEventType(typ); !ok || typ == EventAcceptedAlias {
		return storage.Event{}, fmt.Errorf("unknown event type %q", typ)
	}
	id := NewID()
	body, err := json.Marshal(envelope{ID: id, Event: typ, Timestamp: at.UTC().Format(time.RFC3339Nano), Data: data})
	if err != nil {
		return storage.Event{}, fmt.Errorf("encode event: %w", err)
	}
	return storage.Event{ID: id, AccountID: accountID, Type: typ, Timestamp: at.UTC(), Test: test,
		Envelope: body, ExpiresAt: at.Add(a.opts.EventRetention)}, nil
}

// RecordEvent stores one event on its own and wakes webhook delivery. Use
// cases that change state append their events inside their own transaction
// instead, then call EventsCommitted.
func (a *App) RecordEvent(accountID string, test bool, typ string, data any) (storage.Event, error) {
	ev, err := a.NewEvent(accountID, test, typ, a.Now(), data)
	if err != nil {
		return ev, err
	}
	if err := a.db.Update(func(tx *storage.Tx) error { return tx.AppendEvent(ev) }); err != nil {
		return ev, err
	}
	a.EventsCommitted()
	return ev, nil
}

// EventsCommitted tells webhook delivery that new events are in the store.
func (a *App) EventsCommitted() {
	if a.hooks != nil {
		a.hooks.Kick()
	}
}

// statDims are the statistics dimensions a message counts in: everything,
// its campaign, its sending domain.
func statDims(m storage.Message) []string {
	dims := []string{"", "d:" + m.Domain}
	if m.CampaignID != "" {
		dims = append(dims, "c:"+m.CampaignID)
	}
	return dims
}

// addStats counts n for stat in the daily statistics of m's account, in
// the transaction of the event it reflects: the analytics summary reads
// these counters, never the events.
func addStats(tx *storage.Tx, m storage.Message, at time.Time, stat storage.Stat, n int) error {
	if n <= 0 {
		return nil
	}
	return tx.AddStats(m.AccountID, m.Test, statDims(m), at, stat, uint64(n))
}

// appendMessageEvent records one event about message m (and recipient
// rcpt) in tx, with the statistics it counts for.
func (a *App) appendMessageEvent(tx *storage.Tx, m storage.Message, typ, rcpt string, at time.Time, data any, stats ...storage.Stat) error {
	ev, err := a.NewEvent(m.AccountID, m.Test, typ, at, data)
	if err != nil {
		return err
	}
	ev.MessageID, ev.Recipient = m.ID, rcpt
	if err := tx.AppendEvent(ev); err != nil {
		return err
	}
	for _, s := range stats {
		if err := addStats(tx, m, at, s, 1); err != nil {
			return err
		}
	}
	return nil
}
