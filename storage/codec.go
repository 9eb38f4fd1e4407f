package storage

import (
	"encoding/binary"
	"errors"
)

// The records rewritten at every step of a delivery (messages, webhook
// deliveries) are stored in compact binary forms rather than JSON. These
// are the primitives they share: strings as a uvarint length and the
// bytes, and a reader whose first error sticks.

var errMalformedRecord = errors.New("storage: malformed record")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader walks an encoded record; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail() { r.err = errMalformedRecord }

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// take returns the next n bytes, without copying.
func (r *reader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string { return string(r.take(r.uvarint())) }
