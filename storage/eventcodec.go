package storage

import (
	"encoding/json"
	"fmt"
	"time"
)

// Every message writes two event records or more, so they are encoded by
// hand: the same JSON object encoding/json makes of an Event (its field
// order, omitempty and time format), which is what every reader expects.
// A record whose strings or times encoding/json would write differently
// (escapes, a year past 9999) is left to encoding/json.

// encodeEvent is json.Marshal(ev), cheaper.
func encodeEvent(ev *Event) ([]byte, error) {
	if data, ok := appendEventJSON(make([]byte, 0, 320), ev); ok {
		return data, nil
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	return data, nil
}

// appendEventJSON appends ev as encoding/json writes it, or reports false
// when a field is one it does not write plainly.
func appendEventJSON(b []byte, ev *Event) ([]byte, bool) {
	if !plainJSON(ev.ID) || !plainJSON(ev.AccountID) || !plainJSON(ev.Type) || !plainJSON(ev.MessageID) ||
		!plainJSON(ev.Recipient) || !plainJSON(ev.WebhookID) || !plainTime(ev.Timestamp) || !plainTime(ev.ExpiresAt) {
		return b, false
	}
	str := func(name, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":"`...)
		b = append(b, v...)
		b = append(b, '"')
	}
	at := func(name string, t time.Time) {
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `{"id":"`...)
	b = append(b, ev.ID...)
	b = append(b, '"')
	str("account_id", ev.AccountID, false)
	str("event", ev.Type, false)
	at("timestamp", ev.Timestamp)
	if ev.Test {
		b = append(b, `,"test":true`...)
	} else {
		b = append(b, `,"test":false`...)
	}
	str("message_id", ev.MessageID, true)
	str("recipient", ev.Recipient, true)
	str("webhook_id", ev.WebhookID, true)
	at("expires_at", ev.ExpiresAt)
	return append(b, '}'), true
}

// plainJSON reports whether encoding/json writes s between quotes as it
// is: printable ASCII without the quote, the backslash and the three
// characters it escapes for HTML (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// plainTime reports whether t's RFC 3339 form is the one encoding/json
// writes: a four-digit year and a zone offset of whole minutes under 24
// hours (it refuses other years and offsets, and the rest is rare).
func plainTime(t time.Time) bool {
	_, offset := t.Zone()
	return t.Year() >= 0 && t.Year() <= 9999 && offset%60 == 0 && offset > -86400 && offset < 86400
}
