package app

import (
	"errors"
	"time"

	"github.com/google/uuid"

	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Message reads one message as its caller may see it: another account's,
// or one of the other mode (test or live) than the caller's key, is 404; a
// cancelled one is 410 GONE.
func (a *App) Message(p Principal, id string) (storage.Message, storage.MessageContent, error) {
	if err := a.authorize(p, ScopeMessagesRead); err != nil {
		return storage.Message{}, storage.MessageContent{}, err
	}
	var m storage.Message
	var c storage.MessageContent
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		if m, err = tx.Message(p.Account.ID, id); err != nil {
			return err
		}
		if m.Test != p.Test {
			return storage.ErrNotFound
		}
		c, err = tx.MessageContent(p.Account.ID, id)
		return err
	})
	if e := storageErr(err, "message"); e != nil {
		return m, c, e
	}
	if m.Status == StatusCancelled {
		return m, c, gone(m)
	}
	return m, c, nil
}

func gone(m storage.Message) error {
	return &Error{Code: CodeGone, Message: "the message was cancelled",
		Details: map[string]any{"id": m.ID, "cancelled_at": m.CancelledAt}}
}

// CancelMessage cancels a queued or scheduled message. One already being
// sent, or done, is 409 CONFLICT; one already cancelled is 410 GONE.
func (a *App) CancelMessage(p Principal, id string) (storage.Message, error) {
	if err := a.authorize(p, ScopeMessagesWrite); err != nil {
		return storage.Message{}, err
	}
	now := a.Now()
	var m storage.Message
	err := update(a, p, action{"message.cancel", id}, &m, func(tx *storage.Tx) error {
		var err error
		if m, err = tx.Message(p.Account.ID, id); err != nil {
			return err
		}
		if m.Test != p.Test {
			return storage.ErrNotFound
		}
		switch err := queue.Cancel(&m, now); {
		case errors.Is(err, queue.ErrCancelled):
			return gone(m)
		case errors.Is(err, queue.ErrNotCancellable):
			return NewError(CodeConflict, "the message is "+m.Status+": only queued or scheduled messages can be cancelled").
				With("status", m.Status)
		case err != nil:
			return err
		}
		return tx.UpdateMessage(m)
	})
	return m, storageErr(err, "message")
}

// MessageQuery filters a message list.
type MessageQuery struct {
	Status, CampaignID, Tag, Recipient, Stream string
	Since, Until                               *time.Time
}

// ListMessages lists the caller's messages of its key's mode, newest first.
func (a *App) ListMessages(p Principal, q MessageQuery, opts storage.ListOptions, withTotal bool) (list []storage.Message, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeMessagesRead); err != nil {
		return nil, res, 0, err
	}
	f := storage.MessageFilter{Test: p.Test, Status: q.Status, CampaignID: q.CampaignID, Tag: q.Tag,
		Recipient: q.Recipient, Stream: q.Stream, Range: idRange(q.Since, q.Until)}
	opts.Reverse = true
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, total, err = tx.Messages(p.Account.ID, f, opts, withTotal)
		return err
	})
	return list, res, total, storageErr(err, "message")
}

// EventQuery filters the event history.
type EventQuery struct {
	Types        []string
	MessageID    string
	Recipient    string
	Since, Until *time.Time
}

// ListEvents lists the caller's events of its key's mode, newest first.
func (a *App) ListEvents(p Principal, q EventQuery, opts storage.ListOptions, withTotal bool) (list []storage.Event, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeEventsRead); err != nil {
		return nil, res, 0, err
	}
	f := storage.EventFilter{Test: p.Test, MessageID: q.MessageID, Recipient: q.Recipient, Range: idRange(q.Since, q.Until)}
	for _, t := range q.Types {
		if canon, _ := NormalizeEventType(t); canon != "" {
			f.Types = append(f.Types, canon)
		}
	}
	opts.Reverse = true
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, total, err = tx.Events(p.Account.ID, f, opts, withTotal)
		return err
	})
	return list, res, total, storageErr(err, "event")
}

// idRange turns a time window into a range of UUIDv7 ids: since is
// inclusive, until exclusive, at millisecond precision (the ids').
func idRange(since, until *time.Time) storage.Range {
	var rg storage.Range
	if since != nil {
		rg.Lower = []byte(timeID(*since))
	}
	if until != nil {
		rg.Upper = []byte(timeID(*until))
	}
	return rg
}

// timeID is the smallest UUIDv7 string of the millisecond t falls in. A
// time before 1970, the ids' epoch, is taken as 1970's first millisecond,
// which no id precedes: a since before it keeps every item, an until
// before it none (a negative count of milliseconds would wrap around to
// the far future, turning both upside down).
func timeID(t time.Time) string {
	var u uuid.UUID
	ms := uint64(max(t.UnixMilli(), 0))
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70
	u[8] = 0x80
	return u.String()
}
