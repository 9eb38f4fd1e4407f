package storage

import (
	"reflect"
	"testing"
	"time"
)

func TestDeliveryCodecRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 123456789, time.UTC)
	later := at.Add(time.Minute)
	for _, d := range []Delivery{
		{ID: "d", Attempts: []DeliveryAttempt{}},
		{ID: "d1", WebhookID: "w", AccountID: "a", EventID: "e", EventType: "message.sent", Status: DeliveryPending,
			Retries: 2, NextAttemptAt: &later, CreatedAt: at, ExpiresAt: later,
			Attempts: []DeliveryAttempt{
				{At: at, StatusCode: 503, Response: "busy", LatencyMS: 12.5},
				{At: later, Error: "timeout: no answer", LatencyMS: 30000},
			}},
		{ID: "d2", Status: DeliveryDelivered, DeliveredAt: &at, FailedAt: &later, Attempts: []DeliveryAttempt{{At: at, StatusCode: 200, Response: "ünïcode ✓"}}},
	} {
		got, err := decodeDelivery(encodeDelivery(d))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, d) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, d)
		}
	}
}

func FuzzDecodeDelivery(f *testing.F) {
	f.Add(encodeDelivery(Delivery{ID: "x", Attempts: []DeliveryAttempt{{StatusCode: 200}}}))
	f.Add([]byte{1, 200, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDelivery(b)
		if err == nil {
			if _, err := decodeDelivery(encodeDelivery(d)); err != nil {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
		}
	})
}
