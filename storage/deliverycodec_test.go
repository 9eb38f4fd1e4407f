package storage

import (
	"bytes"
	"encoding/hex"
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
				{At: later, Error: "interrupted", Unanswered: true},
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

// A record written by version 1 of the codec (before attempts had flags)
// still reads, and its claimed placeholder attempt, marked only by its
// error text, comes back Unanswered.
func TestDeliveryCodecReadsVersion1(t *testing.T) {
	// Written by the version 1 encoder: a pending delivery with a 503 and
	// then a claimed attempt whose answer was never recorded.
	v1, err := hex.DecodeString("010264310177016101650c6d6573736167652e73656e740770656e64696e670180e09e83d591aeea318080e4fe958eaeea31000000028080e4fe958eaeea31f70300808080808080c0944004627573798080e4fe958eaeea31004b696e7465727275707465643a206e6f20616e7377657220776173207265636f726465642028746865207365727665722073746f7070656420647572696e67207468652072657175657374290000")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	lease := at.Add(time.Minute)
	want := Delivery{ID: "d1", WebhookID: "w", AccountID: "a", EventID: "e", EventType: "message.sent", Status: DeliveryPending,
		Retries: 1, NextAttemptAt: &lease, CreatedAt: at, Attempts: []DeliveryAttempt{
			{At: at, StatusCode: 503, Response: "busy", LatencyMS: 12.5},
			{At: at, Error: v1Unanswered, Unanswered: true},
		}}
	got, err := decodeDelivery(v1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("v1 record:\n got %+v\nwant %+v", got, want)
	}
	// The same text on a delivery that is no longer pending is a recorded
	// failure, not an attempt waiting for its answer.
	failed := append([]byte(nil), v1...)
	failed = bytes.Replace(failed, []byte("\x07pending"), []byte("\x06failed"), 1)
	if got, err := decodeDelivery(failed); err != nil || got.Status != DeliveryFailed || got.Attempts[1].Unanswered {
		t.Fatalf("failed v1 record: %+v, %v", got, err)
	}
	if again := encodeDelivery(got); again[0] != deliveryCodecV2 {
		t.Fatalf("re-encoded as version %d", again[0])
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
