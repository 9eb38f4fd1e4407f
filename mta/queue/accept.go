package queue

import (
	"slices"
	"time"

	"mailbolt/storage"
)

// Accept sets the state of a validated message that is about to be
// stored: scheduled until its send_at, or queued now with its message.sent
// event, which is returned. The event is built here, outside the
// transaction, because the committer runs one transaction at a time and
// encoding is work it should not wait for.
func (q *Queue) Accept(m *storage.Message, now time.Time) (storage.Event, error) {
	m.Recipients = slices.Clone(m.Recipients)
	for i := range m.Recipients {
		m.Recipients[i].Status = StatusQueued
	}
	if m.SendAt != nil && m.SendAt.After(now) {
		m.Status, m.QueueAt = StatusScheduled, m.SendAt
		return storage.Event{}, nil
	}
	m.Status = StatusQueued
	m.QueuedAt, m.QueueAt = &now, &now
	return q.sentEvent(*m, now)
}

// WarmFile makes, read-only, the reads File will make of m, for
// storage.DB.Warm to take them out of the write lock on a shared database.
func WarmFile(tx *storage.Tx, m *storage.Message) {
	for _, r := range m.Recipients {
		if pending(r) {
			tx.Suppressed(m.AccountID, r.Email, storage.StreamOf(*m))
		}
	}
}

// File checks an accepted message's recipients against the suppression
// list in tx and records its message.sent event (sent, from Accept) when it
// is queued: a message whose every recipient is suppressed is not queued
// and sends no event. The caller stores the message in the same
// transaction. File may run more than once for one message (group commit
// re-runs a transaction), so it changes only m and tx.
func File(tx *storage.Tx, m *storage.Message, sent storage.Event) error {
	if err := suppressListed(tx, m); err != nil {
		return err
	}
	if m.Status != StatusQueued && m.Status != StatusScheduled {
		return nil
	}
	if !slices.ContainsFunc(m.Recipients, pending) {
		// Nothing is left to try, now or at send_at: complete as
		// accepted, never queued, no message.sent.
		accepted := m.CreatedAt
		m.Status, m.CompletedAt, m.QueuedAt, m.QueueAt = StatusSuppressed, &accepted, nil, nil
		return nil
	}
	if m.Status == StatusScheduled {
		return nil // message.sent is recorded when send_at comes (claim)
	}
	return appendSent(tx, *m, sent)
}
