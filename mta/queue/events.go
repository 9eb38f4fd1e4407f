package queue

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// Event types (spec §6): what happens to a message and its recipients.
// message.accepted is accepted wherever event names are given, as an alias
// of message.sent.
const (
	EventSent          = "message.sent"
	EventDelivered     = "message.delivered"
	EventOpened        = "message.opened"
	EventClicked       = "message.clicked"
	EventBounced       = "message.bounced"
	EventComplained    = "message.complained"
	EventUnsubscribed  = "recipient.unsubscribed"
	EventAcceptedAlias = "message.accepted"
	// EventReceived is a message received for an inbound domain; it goes
	// to the inbound route's webhook only (storage.Event.WebhookID).
	EventReceived = "email.received"
)

// EventTypes lists every event type a webhook can subscribe to.
var EventTypes = []string{EventSent, EventDelivered, EventOpened, EventClicked, EventBounced, EventComplained, EventUnsubscribed,
	EventReceived}

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

// NewEvent builds an event record with its envelope bytes, the exact body
// webhooks will be sent, ready for tx.AppendEvent in the transaction of the
// change it reports. It is kept for retention.
func NewEvent(accountID string, test bool, typ string, at time.Time, data any, retention time.Duration) (storage.Event, error) {
	if _, ok := NormalizeEventType(typ); !ok || typ == EventAcceptedAlias {
		return storage.Event{}, fmt.Errorf("unknown event type %q", typ)
	}
	id := uuid.Must(uuid.NewV7()).String()
	body, err := json.Marshal(envelope{ID: id, Event: typ, Timestamp: at.UTC().Format(time.RFC3339Nano), Data: data})
	if err != nil {
		return storage.Event{}, fmt.Errorf("encode event: %w", err)
	}
	return storage.Event{ID: id, AccountID: accountID, Type: typ, Timestamp: at.UTC(), Test: test,
		Envelope: body, ExpiresAt: at.Add(retention)}, nil
}

// statDims are the statistics dimensions a message counts in: everything,
// its campaign, its sending domain.
func statDims(m storage.Message) []string {
	dims := []string{"", "d:" + m.Domain}
	if m.CampaignID != "" {
		dims = append(dims, "c:"+m.CampaignID)
	}
	return append(dims, "s:"+storage.StreamOf(m))
}

// AddStats counts n for stat in the daily statistics of m's account, in
// the transaction of the event it reflects: the analytics summary reads
// these counters, never the events.
func AddStats(tx *storage.Tx, m storage.Message, at time.Time, stat storage.Stat, n int) error {
	if n <= 0 {
		return nil
	}
	return tx.AddStats(m.AccountID, m.Test, statDims(m), at, stat, uint64(n))
}

// AppendEvent records one event about message m (and recipient rcpt) in
// tx, with the statistics it counts for. The event is kept for retention.
func AppendEvent(tx *storage.Tx, m storage.Message, typ, rcpt string, at time.Time, retention time.Duration, data any, stats ...storage.Stat) error {
	ev, err := NewEvent(m.AccountID, m.Test, typ, at, data, retention)
	if err != nil {
		return err
	}
	ev.MessageID, ev.Recipient = m.ID, rcpt
	if err := tx.AppendEvent(ev); err != nil {
		return err
	}
	for _, s := range stats {
		if err := AddStats(tx, m, at, s, 1); err != nil {
			return err
		}
	}
	return nil
}

// sentData is the message.sent payload (spec §6).
type sentData struct {
	MessageID  string          `json:"messageId"`
	To         string          `json:"to"`
	From       string          `json:"from"`
	Subject    string          `json:"subject"`
	CampaignID string          `json:"campaignId"`
	Metadata   json.RawMessage `json:"metadata"`
}

// deliveredData is the message.delivered payload (spec §6).
type deliveredData struct {
	MessageID    string `json:"messageId"`
	To           string `json:"to"`
	DeliveredAt  string `json:"deliveredAt"`
	SMTPResponse string `json:"smtpResponse"`
}

// bouncedData is the message.bounced payload (spec §6).
type bouncedData struct {
	MessageID      string `json:"messageId"`
	To             string `json:"to"`
	BounceType     string `json:"bounceType"`
	BounceCategory string `json:"bounceCategory"`
	BounceCode     string `json:"bounceCode"`
	BounceMessage  string `json:"bounceMessage"`
	DiagnosticCode string `json:"diagnosticCode"`
}

// complainedData is the message.complained payload (spec §6).
type complainedData struct {
	MessageID    string `json:"messageId"`
	To           string `json:"to"`
	ComplainedAt string `json:"complainedAt"`
	FeedbackType string `json:"feedbackType"`
	FeedbackID   string `json:"feedbackId"`
}

// ToAddrs are the To recipients of m (bare addresses): who a message.sent
// names, and who an open or click is attributed to (tracking links are per
// message, not per recipient).
func ToAddrs(m storage.Message) []string {
	var to []string
	for _, r := range m.Recipients {
		if r.Kind == "to" {
			to = append(to, r.Email)
		}
	}
	return to
}

// sentEvent is m's message.sent event, accepted for delivery at `at`. Its
// `to` lists the To recipients (comma-separated); cc and bcc recipients get
// their own delivery events.
func (q *Queue) sentEvent(m storage.Message, at time.Time) (storage.Event, error) {
	var all []string
	for _, r := range m.Recipients {
		all = append(all, r.Email)
	}
	meta := m.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	ev, err := NewEvent(m.AccountID, m.Test, EventSent, at, sentData{MessageID: m.ID, To: strings.Join(ToAddrs(m), ", "),
		From: m.From, Subject: m.Subject, CampaignID: m.CampaignID, Metadata: meta}, q.opts.EventRetention)
	ev.MessageID, ev.Recipient = m.ID, strings.Join(all, ",")
	return ev, err
}

// appendSent records a message's message.sent event and counts the
// recipients it is accepted for in the statistics.
func appendSent(tx *storage.Tx, m storage.Message, ev storage.Event) error {
	if err := tx.AppendEvent(ev); err != nil {
		return err
	}
	n := 0
	for _, r := range m.Recipients {
		if r.Status == StatusQueued {
			n++
		}
	}
	return AddStats(tx, m, ev.Timestamp, storage.StatSent, n)
}
