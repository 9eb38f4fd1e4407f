package storage

import (
	"bytes"
	"slices"
	"strings"
	"time"
)

// Event is one entry of an account's event history (spec §6). Envelope is
// the exact JSON body {id, event, timestamp, data} that webhooks deliver and
// sign; it is built once, when the event is recorded.
type Event struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	Type      string    `json:"event"`
	Timestamp time.Time `json:"timestamp"`
	Test      bool      `json:"test"`
	MessageID string    `json:"message_id,omitempty"`
	Recipient string    `json:"recipient,omitempty"`
	// WebhookID, when set, is the one webhook the event goes to, whatever
	// the webhooks' event lists (an inbound route's email.received).
	WebhookID string `json:"webhook_id,omitempty"`
	Envelope  []byte `json:"-"` // stored raw in event_bodies

	ExpiresAt time.Time `json:"expires_at"`
}

// AppendEvent records an event and, when its account has webhooks, queues
// it for webhook fan-out, in the transaction of the state change it
// reports. The outbox key is a sequence number, so fan-out sees events in
// the order their transactions committed.
func (tx *Tx) AppendEvent(ev Event) error {
	key := join(ev.AccountID, ev.ID)
	// An event is written once, under an id made for it: its keys are new.
	data, err := encodeEvent(&ev)
	if err != nil {
		return err
	}
	if err := tx.bucket(bucketEvents).PutNew(key, data); err != nil {
		return err
	}
	if err := tx.bucket(bucketEventBodies).PutNew(key, ev.Envelope); err != nil {
		return err
	}
	// Only an account with webhooks needs the event fanned out: the
	// webhooks that exist when the event commits are the ones it goes to.
	if tx.WebhookCount(ev.AccountID) > 0 {
		out := tx.bucket(bucketEventOutbox)
		seq, err := out.NextSequence()
		if err != nil {
			return err
		}
		if err := out.PutNew(putU64(seq), key); err != nil {
			return err
		}
		tx.changed |= OutboxWritten
		tx.gauge.outbox++
	}
	if err := tx.addNewExpiry(ev.ExpiresAt, kindEvent, key); err != nil {
		return err
	}
	if ev.MessageID != "" {
		if err := tx.bucket(bucketEventsByMessage).PutNew(join(ev.AccountID, ev.MessageID, ev.ID), nil); err != nil {
			return err
		}
	}
	if err := tx.addCount(eventCollection(ev.Test), ev.AccountID, 1); err != nil {
		return err
	}
	return tx.addCount(collectionEvents, ev.AccountID, 1)
}

const collectionEvents = "events"

// eventCollection names the per-mode event count: a test key sees only
// test events, a live key only live ones.
func eventCollection(test bool) string {
	if test {
		return "events_test"
	}
	return "events_live"
}

// Event reads one event of an account, envelope included.
func (tx *Tx) Event(accountID, id string) (Event, error) {
	var ev Event
	key := join(accountID, id)
	if err := getJSON(tx.bucket(bucketEvents), key, &ev); err != nil {
		return ev, err
	}
	ev.Envelope = append([]byte(nil), tx.bucket(bucketEventBodies).Get(key)...)
	return ev, nil
}

// EventEnvelope reads only an event's envelope bytes.
func (tx *Tx) EventEnvelope(accountID, id string) ([]byte, error) {
	body := tx.bucket(bucketEventBodies).Get(join(accountID, id))
	if body == nil {
		return nil, ErrNotFound
	}
	return append([]byte(nil), body...), nil
}

// OutboxEntry is an event waiting for webhook fan-out. Event holds only
// what fan-out needs: ID, AccountID, Type, Timestamp, Test and WebhookID
// (zero when the event has expired: nothing is left to deliver; Timestamp
// alone zero when the record's cannot be read as RFC 3339).
type OutboxEntry struct {
	Seq   uint64
	Event Event
}

// outboxEvent is the part of an Event record that fan-out reads: decoding
// only these fields skips parsing the expiry time. The timestamp is read
// as the record's text, parsed once the scan (or encoding/json) is done.
type outboxEvent struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	Type      string `json:"event"`
	Timestamp string `json:"timestamp"`
	Test      bool   `json:"test"`
	WebhookID string `json:"webhook_id,omitempty"`
}

// outboxEntry is the outbox entry seq whose event record is at key, with
// the fan-out fields read from the record: a scan picks them out of the
// flat JSON AppendEvent wrote, and only a record the scan cannot read plainly
// (an escape, a nested value) goes through encoding/json. A record gone
// (expired before fan-out) or unreadable leaves the event zero: nothing
// is left to deliver.
func outboxEntry(events kvBucket, seq uint64, key []byte) OutboxEntry {
	data := events.Get(key)
	if data == nil {
		return OutboxEntry{Seq: seq}
	}
	var ev outboxEvent
	if !scanOutboxEvent(data, &ev) {
		ev = outboxEvent{} // what the scan read before it declined
		if decodeJSON(key, data, &ev) != nil {
			return OutboxEntry{Seq: seq}
		}
	}
	// The time as AppendEvent wrote it: RFC 3339 with nanoseconds, in UTC.
	at, _ := time.Parse(time.RFC3339Nano, ev.Timestamp)
	return OutboxEntry{Seq: seq, Event: Event{ID: ev.ID, AccountID: ev.AccountID, Type: ev.Type, Timestamp: at,
		Test: ev.Test, WebhookID: ev.WebhookID}}
}

// scanOutboxEvent fills ev from a flat JSON object of strings, booleans
// and nulls whose strings are plain printable ASCII; false for anything else.
func scanOutboxEvent(data []byte, ev *outboxEvent) bool {
	i := 0
	next := func(c byte) bool {
		if i < len(data) && data[i] == c {
			i++
			return true
		}
		return false
	}
	str := func() (string, bool) {
		if !next('"') {
			return "", false
		}
		end := bytes.IndexByte(data[i:], '"')
		if end < 0 {
			return "", false
		}
		for _, c := range data[i : i+end] {
			if c < 0x20 || c >= 0x80 || c == '\\' {
				return "", false // control, non-ASCII or escaped: encoding/json's to read
			}
		}
		s := string(data[i : i+end])
		i += end + 1
		return s, true
	}
	if !next('{') {
		return false
	}
	if next('}') {
		return i == len(data)
	}
	for {
		name, ok := str()
		if !ok || !next(':') || (!outboxField(name) && outboxFieldFolded(name)) {
			return false // encoding/json matches names without regard to case
		}
		switch {
		case i < len(data) && data[i] == '"':
			v, ok := str()
			if !ok {
				return false
			}
			switch name {
			case "id":
				ev.ID = v
			case "account_id":
				ev.AccountID = v
			case "event":
				ev.Type = v
			case "timestamp":
				ev.Timestamp = v
			case "webhook_id":
				ev.WebhookID = v
			case "test":
				return false
			}
		case bytes.HasPrefix(data[i:], []byte("true")), bytes.HasPrefix(data[i:], []byte("false")):
			b := data[i] == 't'
			if name == "test" {
				ev.Test = b
			} else if outboxField(name) {
				return false
			}
			i += len("false")
			if b {
				i -= len("false") - len("true")
			}
		case bytes.HasPrefix(data[i:], []byte("null")):
			if outboxField(name) {
				return false
			}
			i += len("null")
		default:
			return false // a number or a nested value: not an event record's
		}
		if next('}') {
			return i == len(data)
		}
		if !next(',') {
			return false
		}
	}
}

// outboxFields are the record fields outboxEvent reads.
var outboxFields = []string{"id", "account_id", "event", "timestamp", "test", "webhook_id"}

// outboxField reports whether name is one of outboxFields.
func outboxField(name string) bool { return slices.Contains(outboxFields, name) }

// outboxFieldFolded reports whether name is one of outboxFields in
// another case.
func outboxFieldFolded(name string) bool {
	return slices.ContainsFunc(outboxFields, func(f string) bool { return strings.EqualFold(name, f) })
}

// Outbox returns up to max events waiting for fan-out, oldest first.
func (tx *Tx) Outbox(max int) ([]OutboxEntry, error) { return tx.OutboxAfter(0, max) }

// OutboxAfter is Outbox from the first entry whose sequence number is
// greater than after: a reader that keeps the entries it has taken in
// memory (until it removes them) seeks past them instead of walking them.
func (tx *Tx) OutboxAfter(after uint64, max int) ([]OutboxEntry, error) {
	var out []OutboxEntry
	c := tx.bucket(bucketEventOutbox).Cursor()
	events := tx.bucket(bucketEvents)
	for k, v := c.Seek(putU64(after + 1)); k != nil && len(out) < max; k, v = c.Next() {
		out = append(out, outboxEntry(events, getU64(k), v))
	}
	return out, nil
}

// DoneOutbox removes a fanned-out event from the outbox.
func (tx *Tx) DoneOutbox(seq uint64) error {
	out, key := tx.bucket(bucketEventOutbox), putU64(seq)
	if out.Get(key) == nil {
		return nil
	}
	tx.gauge.outbox--
	return out.Delete(key)
}

func expireEvent(tx *Tx, key []byte, now time.Time) error {
	b := tx.bucket(bucketEvents)
	var ev Event
	if err := getJSON(b, key, &ev); err != nil {
		return nil
	}
	if ev.ExpiresAt.After(now) {
		return nil
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	if err := tx.bucket(bucketEventBodies).Delete(key); err != nil {
		return err
	}
	if ev.MessageID != "" {
		if err := tx.bucket(bucketEventsByMessage).Delete(join(ev.AccountID, ev.MessageID, ev.ID)); err != nil {
			return err
		}
	}
	if err := tx.addCount(eventCollection(ev.Test), ev.AccountID, -1); err != nil {
		return err
	}
	return tx.addCount(collectionEvents, ev.AccountID, -1)
}

// EventFilter selects events of one account and mode.
type EventFilter struct {
	Test      bool
	Types     []string // any of them; all when empty
	MessageID string
	Recipient string // an address, in any case and either IDN spelling
	Range     Range  // over event ids (UUIDv7: time order)
}

func (f EventFilter) plain() bool {
	return len(f.Types) == 0 && f.MessageID == "" && f.Recipient == "" && f.Range.Lower == nil && f.Range.Upper == nil
}

func (f EventFilter) accepts(ev Event) bool {
	if ev.Test != f.Test || (len(f.Types) > 0 && !slices.Contains(f.Types, ev.Type)) {
		return false
	}
	if f.MessageID != "" && ev.MessageID != f.MessageID {
		return false
	}
	if f.Recipient != "" {
		// Events keep the address their message had when they were
		// recorded: before schema v19 a domain could be in Unicode.
		for _, r := range bytes.Split([]byte(ev.Recipient), []byte{','}) {
			if addressKey(string(r)) == f.Recipient {
				return true
			}
		}
		return false
	}
	return true
}

// Events lists one page of an account's events, envelopes included. With a
// message id it walks only that message's events.
func (tx *Tx) Events(accountID string, f EventFilter, opts ListOptions, withTotal bool) ([]Event, ListResult, int, error) {
	b, pfx := tx.bucket(bucketEvents), prefix(accountID)
	f.Recipient = addressKey(f.Recipient)
	match := func(k, v []byte) (Event, bool, error) {
		var ev Event
		if err := decodeJSON(k, v, &ev); err != nil {
			return ev, false, err
		}
		return ev, f.accepts(ev), nil
	}
	if f.MessageID != "" {
		events := tx.bucket(bucketEvents)
		b, pfx = tx.bucket(bucketEventsByMessage), join(accountID, f.MessageID, "")
		match = func(k, _ []byte) (Event, bool, error) {
			var ev Event
			if err := getJSON(events, join(accountID, string(k)), &ev); err != nil {
				return ev, false, nil // expired between index and record
			}
			return ev, f.accepts(ev), nil
		}
	}
	list, res, err := scanMatching(b, pfx, f.Range, opts, match)
	if err != nil {
		return nil, res, 0, err
	}
	bodies := tx.bucket(bucketEventBodies)
	for i := range list {
		list[i].Envelope = append([]byte(nil), bodies.Get(join(accountID, list[i].ID))...)
	}
	if !withTotal {
		return list, res, 0, nil
	}
	if f.plain() {
		return list, res, tx.count(eventCollection(f.Test), accountID), nil
	}
	total, err := countMatching(b, pfx, f.Range, match)
	return list, res, total, err
}
