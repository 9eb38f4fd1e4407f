package storage

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fill sets every exported field of the value v points to, recursively, to
// a value that is not its zero value, so a field the codec forgets fails
// the round trip.
func fill(t *testing.T, v reflect.Value, seed *int) {
	*seed++
	n := *seed
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + string(rune('a'+n%26)) + "\n\x00é")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(int64(n * 1000))
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage{}) {
			v.SetBytes([]byte(`{"k":"v"}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), seed)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), seed)
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 24, 10, 0, n, n*7, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), seed)
			}
		}
	default:
		t.Fatalf("fill: no rule for %s", v.Type())
	}
}

func roundTrip(t *testing.T, m Message) Message {
	t.Helper()
	var got Message
	if err := decodeMessage(encodeMessage(&m), &got); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return got
}

func TestMessageCodecRoundTripsEveryField(t *testing.T) {
	var m Message
	seed := 0
	fill(t, reflect.ValueOf(&m).Elem(), &seed)
	if got := roundTrip(t, m); !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip changed the message:\n got %+v\nwant %+v", got, m)
	}
}

// nil and empty lists, a missing and an empty metadata, and a pointer to
// the zero time (a queue entry filed at time zero) come back as they went.
func TestMessageCodecKeepsNilEmptyAndZero(t *testing.T) {
	zero := time.Time{}
	m := Message{ID: "m", To: []string{}, Cc: nil, Tags: []string{}, Metadata: json.RawMessage{},
		Recipients: []Recipient{}, QueueAt: &zero}
	got := roundTrip(t, m)
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("got %+v\nwant %+v", got, m)
	}
	if got.Cc != nil || got.To == nil || got.QueueAt == nil || got.SendAt != nil {
		t.Fatalf("nil/empty/zero not kept: %+v", got)
	}
	if got := roundTrip(t, Message{}); got.To != nil || got.Recipients != nil || got.Metadata != nil {
		t.Fatalf("nil lists came back as %+v", got)
	}
}

// Records written as JSON before the binary form still read.
func TestMessageCodecReadsJSONRecords(t *testing.T) {
	var m Message
	seed := 0
	fill(t, reflect.ValueOf(&m).Elem(), &seed)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got Message
	if err := decodeMessage(data, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("got %+v\nwant %+v", got, m)
	}
}

func TestMessageCodecRefusesDamagedRecords(t *testing.T) {
	var m Message
	seed := 0
	fill(t, reflect.ValueOf(&m).Elem(), &seed)
	data := encodeMessage(&m)
	for n := range len(data) {
		var got Message
		if err := decodeMessage(data[:n], &got); err == nil {
			t.Fatalf("a record cut at %d of %d bytes decoded", n, len(data))
		}
	}
	var got Message
	if err := decodeMessage(append(data, 0), &got); err == nil {
		t.Fatal("trailing bytes accepted")
	}
}

func FuzzMessageCodec(f *testing.F) {
	var m Message
	seed := 0
	fill(nil, reflect.ValueOf(&m).Elem(), &seed)
	f.Add(encodeMessage(&m))
	f.Add([]byte{messageCodecV1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var got Message
		if decodeMessage(data, &got) != nil || len(data) == 0 || data[0] < messageCodecV1 || data[0] > messageCodecV4 {
			return
		}
		// What decodes encodes back to what decodes the same.
		again := roundTrip(t, got)
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("unstable: %+v vs %+v", again, got)
		}
	})
}

func BenchmarkMessageDecode(b *testing.B) {
	now := time.Now().UTC()
	m := Message{ID: "0193f0a8-7c7e-7000-8000-000000000001", AccountID: "acct", Status: "queued", From: "Ann <ann@example.com>",
		Domain: "example.com", To: []string{"bob@example.net"}, Subject: "Hello", HeaderID: "<x@example.com>",
		Tracking: Tracking{Opens: true}, Metadata: json.RawMessage(`{"order":"42"}`), CreatedAt: now, QueuedAt: &now,
		QueueAt: &now, ExpiresAt: now, Recipients: []Recipient{{Email: "bob@example.net", Kind: "to", Status: "queued"}}}
	bin := encodeMessage(&m)
	js, _ := json.Marshal(m)
	b.Run("binary", func(b *testing.B) {
		for range b.N {
			var got Message
			decodeMessage(bin, &got)
		}
	})
	b.Run("json", func(b *testing.B) {
		for range b.N {
			var got Message
			decodeMessage(js, &got)
		}
	})
}

// minRecipientSize must be what an empty recipient takes, or the bound on
// a damaged record's recipient count refuses good records.
func TestMinRecipientSize(t *testing.T) {
	one := encodeMessage(&Message{Recipients: []Recipient{{}}})
	none := encodeMessage(&Message{Recipients: []Recipient{}})
	if got := len(one) - len(none); got != minRecipientSize {
		t.Fatalf("an empty recipient takes %d bytes, minRecipientSize is %d", got, minRecipientSize)
	}
}

// TestMessageCodecReadsVersion1: a record from before streams (version 1,
// no stream at the end) still decodes, as a transactional message; one
// from before DKIM signatures were kept (version 2) decodes without them.
func TestMessageCodecReadsVersion1(t *testing.T) {
	m := Message{ID: "m1", AccountID: "a1", Status: "queued", Subject: "Hi", Recipients: []Recipient{{Email: "r@x.test"}}}
	v4 := encodeMessage(&m)
	if v4[0] != messageCodecV4 || string(v4[len(v4)-4:]) != "\x00\x00\x00\x00" {
		t.Fatalf("version 4 record % x", v4)
	}
	v3 := append([]byte{messageCodecV3}, v4[1:len(v4)-2]...)
	if err := decodeMessage(v3, &Message{}); err != nil {
		t.Fatalf("version 3: %v", err)
	}
	v1 := append([]byte{messageCodecV1}, v4[1:len(v4)-4]...)
	var got Message
	if err := decodeMessage(v1, &got); err != nil || got.ID != "m1" || got.Stream != "" || StreamOf(got) != StreamTransactional {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	m.Stream = StreamBroadcast
	if got := roundTrip(t, m); got.Stream != StreamBroadcast {
		t.Fatalf("stream %q after a round trip", got.Stream)
	}
	v2 := append([]byte{messageCodecV2}, encodeMessage(&m)[1:]...)
	v2 = v2[:len(v2)-3]
	got = Message{}
	if err := decodeMessage(v2, &got); err != nil || got.Stream != StreamBroadcast || got.Recipients[0].DKIMSignature != "" {
		t.Fatalf("version 2 decoded %+v, %v", got, err)
	}
}

// TestMessageCodecDKIMSignatures: the recipients' signatures survive a
// round trip, one signed recipient among unsigned ones included, and a
// list whose length is not the recipients' is a damaged record.
func TestMessageCodecDKIMSignatures(t *testing.T) {
	m := Message{ID: "m1", Recipients: []Recipient{{Email: "a@x.test"}, {Email: "b@x.test", DKIMSignature: "DKIM-Signature: v=1; b=abc\r\n"}}}
	got := roundTrip(t, m)
	if got.Recipients[0].DKIMSignature != "" || got.Recipients[1].DKIMSignature != m.Recipients[1].DKIMSignature {
		t.Fatalf("recipients %+v", got.Recipients)
	}
	one := Message{ID: "m1", Recipients: []Recipient{{Email: "a@x.test"}}}
	b := encodeMessage(&one)
	b = appendStrings(b[:len(b)-1], []string{"x", "y"})
	if err := decodeMessage(b, &Message{}); err == nil {
		t.Fatal("two signatures for one recipient decoded")
	}
}
