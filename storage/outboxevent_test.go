package storage

import (
	"encoding/json"
	"testing"
	"time"
)

// The scan of an event record reads what encoding/json reads, or declines.
func TestScanOutboxEventAgreesWithJSON(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var records [][]byte
	for _, ev := range []Event{
		{ID: "e1", AccountID: "a1", Type: "message.sent", Timestamp: at, ExpiresAt: at},
		{ID: "e2", AccountID: "a1", Type: "email.received", Test: true, WebhookID: "w9", MessageID: "m", Recipient: "r@x.test", Timestamp: at},
		{ID: "e<3>", AccountID: "a&1", Type: "message.sent"}, // escaped by Marshal: the scan declines
		{ID: `e"4`, AccountID: `a\1`, Type: "x"},
	} {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, data)
	}
	records = append(records,
		[]byte(`{"id":"e5","test":true,"event":"t","z":null}`),
		[]byte(`{"id":"e5b","n":12.5}`),
		[]byte(`{"id":"e6","test":"yes"}`),
		[]byte(`{"id":"e7","nested":{"id":"inner"}}`),
		[]byte(`{ "id" : "e8" }`),
		[]byte(`{"id":"e9","id":"e10"}`),
		[]byte(`{}`),
		[]byte(`{"id":"e11"}x`),
		[]byte(`{"id":"e12",}`),
	)
	scanned := 0
	for _, data := range records {
		var want outboxEvent
		wantErr := json.Unmarshal(data, &want)
		var got outboxEvent
		if !scanOutboxEvent(data, &got) {
			continue
		}
		scanned++
		if wantErr != nil {
			t.Errorf("%s: the scan read %+v, encoding/json refuses it: %v", data, got, wantErr)
		} else if got != want {
			t.Errorf("%s: the scan read %+v, encoding/json %+v", data, got, want)
		}
	}
	if scanned < 5 {
		t.Errorf("the scan read only %d of the plain records", scanned)
	}
}

func FuzzScanOutboxEvent(f *testing.F) {
	f.Add([]byte(`{"id":"e1","account_id":"a","event":"message.sent","timestamp":"2026-11-26T12:00:00Z","test":false,"expires_at":"2026-12-26T12:00:00Z"}`))
	f.Add([]byte(`{"id":"e2","test":true,"webhook_id":"w"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want outboxEvent
		if !scanOutboxEvent(data, &got) {
			return
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%q: the scan read %+v, encoding/json refuses it: %v", data, got, err)
		}
		if got != want {
			t.Fatalf("%q: the scan read %+v, encoding/json %+v", data, got, want)
		}
	})
}
