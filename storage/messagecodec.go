package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"
)

// A message record is read and rewritten at every step of its delivery
// (claim, outcome), so it is stored in a compact binary form rather than
// JSON: a version byte, then each field in order. Strings are a uvarint
// length and the bytes; lists, raw JSON and optional values carry a uvarint
// that is 0 for nil (absent) and n+1 for n items (present), so nil and
// empty survive the trip apart. Records written as JSON before (their first
// byte is '{') are still read.

const messageCodecV1 = 0x02

var errMessageCodec = errors.New("storage: malformed message record")

type msgWriter struct{ b []byte }

func (w *msgWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *msgWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

func (w *msgWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// time writes t as: 0 for nil, 1 for the zero time, 2 and Unix
// nanoseconds otherwise.
func (w *msgWriter) time(t *time.Time) {
	switch {
	case t == nil:
		w.b = append(w.b, 0)
	case t.IsZero():
		w.b = append(w.b, 1)
	default:
		w.b = append(w.b, 2)
		w.b = binary.AppendVarint(w.b, t.UnixNano())
	}
}

func (w *msgWriter) strs(ss []string) {
	if ss == nil {
		w.uint(0)
		return
	}
	w.uint(uint64(len(ss)) + 1)
	for _, s := range ss {
		w.str(s)
	}
}

func (w *msgWriter) raw(b []byte) {
	if b == nil {
		w.uint(0)
		return
	}
	w.uint(uint64(len(b)) + 1)
	w.b = append(w.b, b...)
}

func encodeMessage(m *Message) []byte {
	w := &msgWriter{b: make([]byte, 0, 512+len(m.Recipients)*128+len(m.Metadata))}
	w.b = append(w.b, messageCodecV1)
	for _, s := range []string{m.ID, m.AccountID, m.Status, m.From, m.Domain} {
		w.str(s)
	}
	w.bool(m.Test)
	for _, ss := range [][]string{m.To, m.Cc, m.Bcc, m.ReplyTo} {
		w.strs(ss)
	}
	w.str(m.Subject)
	w.str(m.CampaignID)
	w.strs(m.Tags)
	w.raw(m.Metadata)
	if m.Template == nil {
		w.uint(0)
	} else {
		w.uint(1)
		w.str(m.Template.ID)
		w.uint(uint64(m.Template.Version))
	}
	w.bool(m.Tracking.Opens)
	w.bool(m.Tracking.Clicks)
	w.str(m.IPPool)
	w.str(m.HeaderID)
	w.bool(m.ListUnsubscribe)
	if m.Recipients == nil {
		w.uint(0)
	} else {
		w.uint(uint64(len(m.Recipients)) + 1)
	}
	for i := range m.Recipients {
		r := &m.Recipients[i]
		w.str(r.Email)
		w.str(r.Kind)
		w.str(r.Status)
		w.uint(uint64(r.Attempts))
		w.time(r.LastAttemptAt)
		w.time(r.NextAttemptAt)
		w.uint(uint64(r.SMTPCode))
		for _, s := range []string{r.EnhancedCode, r.SMTPResponse, r.MX, r.SourceIP} {
			w.str(s)
		}
		w.bool(r.TLS)
		w.str(r.BounceType)
		w.str(r.BounceCategory)
		for _, t := range []*time.Time{r.DeliveredAt, r.BouncedAt, r.ComplainedAt, r.UnsubscribedAt} {
			w.time(t)
		}
	}
	w.time(&m.CreatedAt)
	for _, t := range []*time.Time{m.SendAt, m.QueuedAt, m.CompletedAt, m.CancelledAt, m.QueueAt} {
		w.time(t)
	}
	w.time(&m.ExpiresAt)
	return w.b
}

type msgReader struct {
	b   []byte
	err error
}

func (r *msgReader) fail() { r.err = errMessageCodec }

func (r *msgReader) uint() uint64 {
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

// take returns the next n bytes.
func (r *msgReader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *msgReader) str() string { return string(r.take(r.uint())) }

func (r *msgReader) bool() bool {
	v := r.take(1)
	return v != nil && v[0] == 1
}

func (r *msgReader) time() *time.Time {
	tag := r.take(1)
	if tag == nil || tag[0] == 0 {
		return nil
	}
	if tag[0] == 1 {
		return &time.Time{}
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return nil
	}
	r.b = r.b[n:]
	t := time.Unix(0, v).UTC()
	return &t
}

func (r *msgReader) timeValue() time.Time {
	if t := r.time(); t != nil {
		return *t
	}
	return time.Time{}
}

// count reads a list length written as n+1 (0: nil), bounded by the bytes
// left so a corrupt record cannot ask for a huge allocation.
func (r *msgReader) count() (int, bool) {
	n := r.uint()
	if n == 0 || r.err != nil {
		return 0, false
	}
	if n-1 > uint64(len(r.b)) {
		r.fail()
		return 0, false
	}
	return int(n - 1), true
}

func (r *msgReader) strs() []string {
	n, ok := r.count()
	if !ok {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.str()
	}
	return ss
}

func decodeMessage(data []byte, m *Message) error {
	if len(data) > 0 && data[0] == '{' {
		return json.Unmarshal(data, m)
	}
	if len(data) == 0 || data[0] != messageCodecV1 {
		return errMessageCodec
	}
	r := &msgReader{b: data[1:]}
	for _, s := range []*string{&m.ID, &m.AccountID, &m.Status, &m.From, &m.Domain} {
		*s = r.str()
	}
	m.Test = r.bool()
	for _, ss := range []*[]string{&m.To, &m.Cc, &m.Bcc, &m.ReplyTo} {
		*ss = r.strs()
	}
	m.Subject = r.str()
	m.CampaignID = r.str()
	m.Tags = r.strs()
	if n, ok := r.count(); ok {
		m.Metadata = json.RawMessage(append([]byte{}, r.take(uint64(n))...))
	}
	if r.uint() == 1 {
		m.Template = &TemplateRef{ID: r.str(), Version: int(r.uint())}
	}
	m.Tracking.Opens = r.bool()
	m.Tracking.Clicks = r.bool()
	m.IPPool = r.str()
	m.HeaderID = r.str()
	m.ListUnsubscribe = r.bool()
	if n, ok := r.count(); ok {
		m.Recipients = make([]Recipient, n)
	}
	for i := range m.Recipients {
		rc := &m.Recipients[i]
		rc.Email = r.str()
		rc.Kind = r.str()
		rc.Status = r.str()
		rc.Attempts = int(r.uint())
		rc.LastAttemptAt = r.time()
		rc.NextAttemptAt = r.time()
		rc.SMTPCode = int(r.uint())
		for _, s := range []*string{&rc.EnhancedCode, &rc.SMTPResponse, &rc.MX, &rc.SourceIP} {
			*s = r.str()
		}
		rc.TLS = r.bool()
		rc.BounceType = r.str()
		rc.BounceCategory = r.str()
		for _, t := range []**time.Time{&rc.DeliveredAt, &rc.BouncedAt, &rc.ComplainedAt, &rc.UnsubscribedAt} {
			*t = r.time()
		}
		if r.err != nil {
			return r.err
		}
	}
	m.CreatedAt = r.timeValue()
	for _, t := range []**time.Time{&m.SendAt, &m.QueuedAt, &m.CompletedAt, &m.CancelledAt, &m.QueueAt} {
		*t = r.time()
	}
	m.ExpiresAt = r.timeValue()
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	return r.err
}
