package storage

import (
	"encoding/binary"
	"math"
	"time"
)

// Deliveries are the hottest records (written twice per webhook event), so
// they are stored in a compact binary form instead of JSON: a version byte,
// then each field in order, strings as uvarint length + bytes, times as
// varint Unix nanoseconds (0 for an unset time). Version 2 adds to each
// attempt a uvarint of flags (bit 0: Unanswered); version 1 records are
// still read.

const (
	deliveryCodecV1 = 1
	deliveryCodecV2 = 2
)

// attemptUnanswered is the Unanswered bit of an attempt's flags.
const attemptUnanswered = 1

// v1Unanswered is the error text version 1 gave the placeholder attempt of
// a claimed delivery, its only mark: decoding a v1 record, the last attempt
// of a pending delivery that carries it is Unanswered.
const v1Unanswered = "interrupted: no answer was recorded (the server stopped during the request)"

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

func appendTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return binary.AppendVarint(b, 0)
	}
	return appendTime(b, *t)
}

func encodeDelivery(d Delivery) []byte {
	b := make([]byte, 0, 256+len(d.Attempts)*64)
	b = append(b, deliveryCodecV2)
	for _, s := range []string{d.ID, d.WebhookID, d.AccountID, d.EventID, d.EventType, d.Status} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(d.Retries))
	b = appendTimePtr(b, d.NextAttemptAt)
	b = appendTime(b, d.CreatedAt)
	b = appendTimePtr(b, d.DeliveredAt)
	b = appendTimePtr(b, d.FailedAt)
	b = appendTime(b, d.ExpiresAt)
	b = binary.AppendUvarint(b, uint64(len(d.Attempts)))
	for _, a := range d.Attempts {
		b = appendTime(b, a.At)
		b = binary.AppendUvarint(b, uint64(a.StatusCode))
		b = appendString(b, a.Error)
		b = binary.AppendUvarint(b, math.Float64bits(a.LatencyMS))
		b = appendString(b, a.Response)
		var flags uint64
		if a.Unanswered {
			flags |= attemptUnanswered
		}
		b = binary.AppendUvarint(b, flags)
	}
	return b
}

func (r *reader) time() time.Time {
	if ns := r.varint(); ns != 0 {
		return time.Unix(0, ns).UTC()
	}
	return time.Time{}
}

func (r *reader) timePtr() *time.Time {
	if t := r.time(); !t.IsZero() {
		return &t
	}
	return nil
}

func decodeDelivery(b []byte) (Delivery, error) {
	if len(b) == 0 || (b[0] != deliveryCodecV1 && b[0] != deliveryCodecV2) {
		return Delivery{}, errMalformedRecord
	}
	version := b[0]
	r := &reader{b: b[1:]}
	var d Delivery
	for _, s := range []*string{&d.ID, &d.WebhookID, &d.AccountID, &d.EventID, &d.EventType, &d.Status} {
		*s = r.string()
	}
	d.Retries = int(r.uvarint())
	d.NextAttemptAt = r.timePtr()
	d.CreatedAt = r.time()
	d.DeliveredAt = r.timePtr()
	d.FailedAt = r.timePtr()
	d.ExpiresAt = r.time()
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		return Delivery{}, errMalformedRecord
	}
	d.Attempts = make([]DeliveryAttempt, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		var a DeliveryAttempt
		a.At = r.time()
		a.StatusCode = int(r.uvarint())
		a.Error = r.string()
		a.LatencyMS = math.Float64frombits(r.uvarint())
		a.Response = r.string()
		if version >= deliveryCodecV2 {
			a.Unanswered = r.uvarint()&attemptUnanswered != 0
		}
		d.Attempts = append(d.Attempts, a)
	}
	if r.err != nil {
		return Delivery{}, r.err
	}
	if n := len(d.Attempts); version == deliveryCodecV1 && n > 0 && d.Status == DeliveryPending && d.Attempts[n-1].Error == v1Unanswered {
		d.Attempts[n-1].Unanswered = true
	}
	return d, nil
}
