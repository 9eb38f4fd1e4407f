package storage

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"testing"
	"time"
)

// Every byte of a full record set to every value: decoding never panics.
func TestMessageCodecBitFlipsNoPanic(t *testing.T) {
	var m Message
	seed := 0
	fill(t, reflect.ValueOf(&m).Elem(), &seed)
	data := encodeMessage(&m)
	buf := make([]byte, len(data))
	for i := range data {
		for v := range 256 {
			copy(buf, data)
			buf[i] = byte(v)
			var got Message
			decodeMessage(buf, &got)
		}
	}
}

// A damaged recipient count is bounded by what the bytes left can hold
// (each recipient takes at least minRecipientSize bytes but about 200 of
// memory), so a 100 KB record cannot ask for 20 MB.
func TestMessageCodecRecipientCountAllocation(t *testing.T) {
	b := append([]byte{messageCodecV1}, make([]byte, 20)...)
	const n = 100_000
	b = binary.AppendUvarint(b, n+1)
	b = append(b, make([]byte, n)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var got Message
	err := decodeMessage(b, &got)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("err=%v, %d-byte record allocated %d bytes", err, len(b), alloc)
	if alloc > 50*uint64(len(b)) {
		t.Errorf("a %d-byte damaged record allocated %d bytes", len(b), alloc)
	}
}

// Times outside UnixNano's range (years before 1678 or after 2262)
// round-trip too.
func TestMessageCodecFarTimes(t *testing.T) {
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	got := roundTrip(t, Message{ExpiresAt: far, SendAt: &far})
	if !got.ExpiresAt.Equal(far) || !got.SendAt.Equal(far) {
		t.Errorf("year 2300 came back as %v / %v", got.ExpiresAt, got.SendAt)
	}
}

// A pointer to the zero time survives JSON -> struct -> binary -> struct,
// also for a zero time in another location.
func TestMessageCodecZeroTimePointers(t *testing.T) {
	z := time.Time{}.In(time.FixedZone("x", 3600))
	var m Message
	if err := decodeMessage([]byte(`{"queue_at":"0001-01-01T00:00:00Z","recipients":[{"next_attempt_at":"0001-01-01T00:00:00Z"}]}`), &m); err != nil {
		t.Fatal(err)
	}
	got := roundTrip(t, m)
	if got.QueueAt == nil || !got.QueueAt.IsZero() || got.Recipients[0].NextAttemptAt == nil {
		t.Errorf("zero time pointer lost: %+v", got)
	}
	got = roundTrip(t, Message{QueueAt: &z})
	if got.QueueAt == nil || !got.QueueAt.IsZero() {
		t.Errorf("zero time in a location lost")
	}
}
