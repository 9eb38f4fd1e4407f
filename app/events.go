package app

import (
	"time"

	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Event types (spec §6), as the queue defines them with the message
// lifecycle. message.accepted is accepted wherever event names are given,
// as an alias of message.sent.
const (
	EventSent          = queue.EventSent
	EventDelivered     = queue.EventDelivered
	EventOpened        = queue.EventOpened
	EventClicked       = queue.EventClicked
	EventBounced       = queue.EventBounced
	EventComplained    = queue.EventComplained
	EventUnsubscribed  = queue.EventUnsubscribed
	EventAcceptedAlias = queue.EventAcceptedAlias
	EventReceived      = queue.EventReceived
)

// EventTypes lists every event type a webhook can subscribe to.
var EventTypes = queue.EventTypes

// NormalizeEventType maps an event name given by a user to its canonical
// type, or reports it unknown.
func NormalizeEventType(name string) (string, bool) { return queue.NormalizeEventType(name) }

// RecordEvent stores one event on its own, kept for the event retention.
// Use cases that change state append their events inside their own
// transaction instead (queue.AppendEvent).
func (a *App) RecordEvent(accountID string, test bool, typ string, data any) (storage.Event, error) {
	ev, err := queue.NewEvent(accountID, test, typ, a.Now(), data, a.opts.EventRetention)
	if err != nil {
		return ev, err
	}
	if err := a.db.Update(func(tx *storage.Tx) error { return tx.AppendEvent(ev) }); err != nil {
		return ev, err
	}
	return ev, nil
}

// appendMessageEvent records one event about message m (and recipient
// rcpt) in tx, with the statistics it counts for.
func (a *App) appendMessageEvent(tx *storage.Tx, m storage.Message, typ, rcpt string, at time.Time, data any, stats ...storage.Stat) error {
	return queue.AppendEvent(tx, m, typ, rcpt, at, a.opts.EventRetention, data, stats...)
}
