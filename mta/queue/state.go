package queue

import (
	"fmt"
	"time"

	"mailbolt/storage"
)

// Message and recipient states (docs/sending.md draws how they follow each
// other). A message's state is its recipients' states summed up (Status),
// except scheduled and cancelled, which only the message has.
const (
	StatusScheduled  = "scheduled" // waiting for send_at
	StatusQueued     = "queued"    // accepted for delivery, no attempt yet
	StatusSending    = "sending"   // an attempt is under way
	StatusDeferred   = "deferred"  // a temporary failure or a warm-up cap: waiting to retry
	StatusDelivered  = "delivered" // every recipient that could be sent to was accepted
	StatusBounced    = "bounced"   // no recipient accepted it, at least one bounced
	StatusFailed     = "failed"    // Mailbolt could not send it (its domain went away)
	StatusCancelled  = "cancelled"
	StatusSuppressed = "suppressed" // every recipient is suppressed
)

// Statuses lists every message state, for filters and the docs.
var Statuses = []string{StatusScheduled, StatusQueued, StatusSending, StatusDeferred, StatusDelivered,
	StatusBounced, StatusFailed, StatusCancelled, StatusSuppressed}

// move is one allowed change of a recipient's state.
type move struct{ from, to string }

// recipientMoves is the recipient transition table: every change of a
// recipient's state goes through setStatus, which refuses any move not
// listed here. The value says what causes it.
var recipientMoves = map[move]string{
	{StatusQueued, StatusSending}:      "claimed for an attempt",
	{StatusDeferred, StatusSending}:    "claimed for the next attempt",
	{StatusQueued, StatusSuppressed}:   "on the suppression list at acceptance or before an attempt",
	{StatusDeferred, StatusSuppressed}: "suppressed between retries",
	{StatusQueued, StatusFailed}:       "the sending domain is no longer verified",
	{StatusDeferred, StatusFailed}:     "the sending domain is no longer verified",
	{StatusQueued, StatusDeferred}:     "every IP of the pool is at its warm-up cap",
	{StatusDeferred, StatusDeferred}:   "every IP of the pool is still at its warm-up cap",
	{StatusQueued, StatusCancelled}:    "the message was cancelled",
	{StatusDeferred, StatusCancelled}:  "the message was cancelled",
	{StatusSending, StatusDelivered}:   "the receiving server accepted it",
	{StatusSending, StatusDeferred}:    "a temporary failure, a restart cut the attempt short, or its lease ended unrecorded",
	{StatusSending, StatusBounced}:     "a permanent failure, or the queue lifetime ran out",
	{StatusSending, StatusFailed}:      "the message could not be prepared",
	// An asynchronous bounce (a DSN to the VERP return path) names a
	// recipient the receiving side took, or is still trying.
	{StatusDelivered, StatusBounced}: "a bounce report arrived after delivery",
	{StatusDeferred, StatusBounced}:  "a bounce report arrived between retries",
}

// setStatus moves r to state to, or fails when the table has no such move:
// a bug, never a condition to work around.
func setStatus(r *storage.Recipient, to string) error {
	if _, ok := recipientMoves[move{r.Status, to}]; !ok {
		return fmt.Errorf("queue: recipient %s cannot move from %s to %s", r.Email, r.Status, to)
	}
	r.Status = to
	return nil
}

// pending reports whether a recipient still waits to be sent to.
func pending(r storage.Recipient) bool {
	return r.Status == StatusQueued || r.Status == StatusDeferred
}

// Status is a message's state as its recipients' states add up: the
// first rule that matches, in the order docs/sending.md lists them.
func Status(m storage.Message) string {
	if m.Status == StatusCancelled || m.Status == StatusScheduled {
		return m.Status
	}
	var sending, queued, deferred, delivered, bounced, failed bool
	for _, r := range m.Recipients {
		switch r.Status {
		case StatusSending:
			sending = true
		case StatusQueued:
			queued = true
		case StatusDeferred:
			deferred = true
		case StatusDelivered:
			delivered = true
		case StatusBounced:
			bounced = true
		case StatusFailed:
			failed = true
		}
	}
	switch {
	case sending:
		return StatusSending
	case deferred:
		return StatusDeferred
	case queued:
		return StatusQueued
	case delivered:
		return StatusDelivered
	case bounced:
		return StatusBounced
	case failed:
		return StatusFailed
	}
	return StatusSuppressed
}

// nextAttempt is the earliest next attempt among the recipients still
// waiting (a queued one is due at once); nil when none waits.
func nextAttempt(m storage.Message) *time.Time {
	var next *time.Time
	for _, r := range m.Recipients {
		if r.Status == StatusDeferred && r.NextAttemptAt != nil && (next == nil || r.NextAttemptAt.Before(*next)) {
			t := *r.NextAttemptAt
			next = &t
		}
		if r.Status == StatusQueued {
			t := time.Time{}
			if m.QueuedAt != nil {
				t = *m.QueuedAt
			}
			next = &t
		}
	}
	return next
}

// settle sums up m's state after its recipients moved and files it in the
// queue at its next attempt, or marks it complete when nothing waits.
func settle(m *storage.Message, now time.Time) {
	m.Status = Status(*m)
	m.QueueAt = nextAttempt(*m)
	if m.QueueAt == nil && m.CompletedAt == nil {
		m.CompletedAt = &now
	}
}

// suppressListed marks the waiting recipients that are on the account's
// suppression list for the message's stream: they are never sent to. It runs when a message is
// accepted and again before every attempt.
func suppressListed(tx *storage.Tx, m *storage.Message) error {
	for i := range m.Recipients {
		r := &m.Recipients[i]
		if !pending(*r) {
			continue
		}
		if tx.Suppressed(m.AccountID, r.Email, storage.StreamOf(*m)) {
			if err := setStatus(r, StatusSuppressed); err != nil {
				return err
			}
			r.SMTPResponse = "not sent: the recipient is on the suppression list"
		}
	}
	return nil
}

// ErrNotCancellable is Cancel's answer for a message past queued or
// scheduled; the caller reports the message's state.
var ErrNotCancellable = fmt.Errorf("queue: only queued or scheduled messages can be cancelled")

// ErrCancelled is Cancel's answer for a message cancelled before.
var ErrCancelled = fmt.Errorf("queue: the message was cancelled")

// Cancel takes a queued or scheduled message out of the queue: it and its
// waiting recipients become cancelled.
func Cancel(m *storage.Message, now time.Time) error {
	switch m.Status {
	case StatusCancelled:
		return ErrCancelled
	case StatusQueued, StatusScheduled:
	default:
		return ErrNotCancellable
	}
	for i := range m.Recipients {
		if r := &m.Recipients[i]; pending(*r) {
			if err := setStatus(r, StatusCancelled); err != nil {
				return err
			}
		}
	}
	m.Status, m.CancelledAt, m.QueueAt, m.CompletedAt = StatusCancelled, &now, nil, &now
	return nil
}
