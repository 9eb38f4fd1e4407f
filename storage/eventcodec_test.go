package storage

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// encodeEvent must write exactly what encoding/json writes, for plain
// events (its own path) and for the rest (handed to encoding/json).
func TestEncodeEventIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 27, 3, 4, 5, 123456789, time.UTC)
	plus := time.FixedZone("", 5*3600+30*60)
	odd := time.FixedZone("", 3600+7) // an offset with seconds
	events := []Event{
		{},
		{ID: "e1", AccountID: "a1", Type: "message.sent", Timestamp: at, ExpiresAt: at.Add(time.Hour)},
		{ID: "e2", AccountID: "a1", Type: "message.delivered", Timestamp: at.In(plus), Test: true,
			MessageID: "m1", Recipient: "rcpt@example.com", WebhookID: "w1", ExpiresAt: at.Truncate(time.Second)},
		{ID: "e3", Type: "x", Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 1000, time.Local)},
		{ID: "e4", Timestamp: at.In(odd)},
		{ID: "e5", Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // encoding/json refuses it
		{ID: "e6", Timestamp: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "e7", Recipient: `"quoted"@example.com`},
		{ID: "e8", Recipient: `back\slash@example.com`},
		{ID: "e9", Recipient: "a&b@example.com"},
		{ID: "e9a", Recipient: "a<b@example.com"},
		{ID: "e9b", Recipient: "a>b@example.com"},
		{ID: "e10", Recipient: "josé@example.com"},
		{ID: "e11", Recipient: "tab\there"},
		{ID: "e12", Recipient: "del\x7f"},
		{ID: "e13", Recipient: "bad\xffutf8"},
		{ID: "e14", Recipient: "line\u2028sep"},
		{ID: "e15", Envelope: []byte(`{"not":"stored here"}`)},
	}
	// And random ones: half from plain characters, half from an alphabet
	// with every kind of byte above.
	plainChars, anyChars := []byte("abcAZ09.-_@ "), []byte("abcAZ09.-_@ \"\\<>&\t\x7f\x00é\u2028")
	rng := rand.New(rand.NewPCG(1, 2))
	var alphabet []byte
	randString := func() string {
		n := rng.IntN(12)
		var b []byte
		for range n {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		return string(b)
	}
	for i := range 2000 {
		alphabet = [][]byte{plainChars, anyChars}[i%2]
		events = append(events, Event{ID: randString(), AccountID: randString(), Type: randString(),
			Timestamp: at.Add(time.Duration(rng.Int64N(1 << 50))), Test: rng.IntN(2) == 0,
			MessageID: randString(), Recipient: randString(), WebhookID: randString(),
			ExpiresAt: at.Add(-time.Duration(rng.Int64N(1 << 40)))})
	}
	plain := 0
	for _, ev := range events {
		want, wantErr := json.Marshal(ev)
		got, err := encodeEvent(&ev)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("event %+v: error %v, encoding/json's %v", ev, err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("event %+v:\n got %s\nwant %s", ev, got, want)
		}
		if _, ok := appendEventJSON(nil, &ev); ok {
			plain++
		}
	}
	// The hand-written path must be the one most events take.
	if plain < 1000 {
		t.Fatalf("only %d events took the hand-written path", plain)
	}
}

// An event written by AppendEvent reads back whole, through both readers.
func TestAppendEventReadsBack(t *testing.T) {
	db := openTest(t)
	db.Update(func(tx *Tx) error { return tx.PutWebhook(Webhook{ID: "w1", AccountID: "a1"}) })
	at := time.Date(2026, 11, 27, 3, 4, 5, 6, time.UTC)
	evs := []Event{
		{ID: "e1", AccountID: "a1", Type: "message.sent", Timestamp: at, MessageID: "m1", Recipient: "r@example.com",
			Envelope: []byte(`{"id":"e1"}`), ExpiresAt: at.Add(time.Hour)},
		{ID: "e2", AccountID: "a1", Type: "message.sent", Timestamp: at, Test: true, Recipient: "<odd>@example.com",
			Envelope: []byte(`{"id":"e2"}`), ExpiresAt: at.Add(time.Hour)},
	}
	if err := db.Update(func(tx *Tx) error {
		for _, ev := range evs {
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		for _, want := range evs {
			got, err := tx.Event(want.AccountID, want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Timestamp.Equal(want.Timestamp) || !got.ExpiresAt.Equal(want.ExpiresAt) {
				t.Errorf("%s: times %v %v", want.ID, got.Timestamp, got.ExpiresAt)
			}
			got.Timestamp, got.ExpiresAt = want.Timestamp, want.ExpiresAt
			if string(got.Envelope) != string(want.Envelope) {
				t.Errorf("%s: envelope %s", want.ID, got.Envelope)
			}
			got.Envelope = want.Envelope
			if !equalEvents(got, want) {
				t.Errorf("read back %+v, want %+v", got, want)
			}
		}
		out, err := tx.Outbox(10)
		if err != nil || len(out) != len(evs) {
			t.Fatalf("outbox %+v, %v", out, err)
		}
		for i, e := range out {
			want := evs[i]
			want.ExpiresAt, want.MessageID, want.Recipient = time.Time{}, "", ""
			// The time to the nanosecond: fan-out compares it with a
			// webhook's creation.
			if e.Event.Envelope != nil || !equalEvents(e.Event, want) || !e.Event.Timestamp.Equal(want.Timestamp) {
				t.Errorf("outbox[%d] = %+v, want %+v", i, e.Event, want)
			}
		}
		return nil
	})
}

func equalEvents(a, b Event) bool {
	return a.ID == b.ID && a.AccountID == b.AccountID && a.Type == b.Type && a.Test == b.Test &&
		a.MessageID == b.MessageID && a.Recipient == b.Recipient && a.WebhookID == b.WebhookID
}
