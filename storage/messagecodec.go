package storage

import (
	"encoding/binary"
	"encoding/json"
	"time"
)

// A message record is read and rewritten at every step of its delivery
// (claim, outcome), so it is stored in a compact binary form rather than
// JSON: a version byte, then each field in order. Strings are as in
// codec.go; lists and raw JSON carry a uvarint that is 0 for nil and n+1
// for n items, so nil and empty survive the trip apart; times carry a tag
// byte, so a pointer to the zero time is not taken for nil. Records written
// as JSON before (their first byte is '{') are still read.

// Version 2 adds the stream, last; version 1 records (no stream) are
// still read, as transactional. Version 3 adds, after the stream, the
// recipients' DKIM-Signature fields (a list of one string per recipient,
// or nil when none was signed); older records have none.
const (
	messageCodecV1 = 0x02
	messageCodecV2 = 0x03
	messageCodecV3 = 0x04
	messageCodecV4 = 0x05
)

// Version 4 adds, after the signatures, the message's RequireTLS and the
// recipients' TLS sessions (a count, 0 when none is known, then per
// recipient its version, verified and policy); older records have none.

// minRecipientSize is the fewest bytes a recipient takes: nine empty
// strings, two numbers, a bool and six nil times of one byte each.
const minRecipientSize = 18

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendTagged writes t as: 0 for nil, 1 for the zero time, 2 and Unix
// seconds and nanoseconds otherwise (any year, unlike Unix nanoseconds in
// an int64, which end in 2262).
func appendTagged(b []byte, t *time.Time) []byte {
	switch {
	case t == nil:
		return append(b, 0)
	case t.IsZero():
		return append(b, 1)
	}
	b = binary.AppendVarint(append(b, 2), t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// appendCount writes a list length as n+1, or 0 for a nil list.
func appendCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendStrings(b []byte, ss []string) []byte {
	b = appendCount(b, len(ss), ss == nil)
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func encodeMessage(m *Message) []byte {
	b := make([]byte, 0, 512+len(m.Recipients)*128+len(m.Metadata))
	b = append(b, messageCodecV4)
	for _, s := range []string{m.ID, m.AccountID, m.Status, m.From, m.Domain} {
		b = appendString(b, s)
	}
	b = appendBool(b, m.Test)
	for _, ss := range [][]string{m.To, m.Cc, m.Bcc, m.ReplyTo} {
		b = appendStrings(b, ss)
	}
	b = appendString(b, m.Subject)
	b = appendString(b, m.CampaignID)
	b = appendStrings(b, m.Tags)
	b = appendCount(b, len(m.Metadata), m.Metadata == nil)
	b = append(b, m.Metadata...)
	b = appendBool(b, m.Template != nil)
	if m.Template != nil {
		b = appendString(b, m.Template.ID)
		b = binary.AppendUvarint(b, uint64(m.Template.Version))
	}
	b = appendBool(b, m.Tracking.Opens)
	b = appendBool(b, m.Tracking.Clicks)
	b = appendString(b, m.IPPool)
	b = appendString(b, m.HeaderID)
	b = appendBool(b, m.ListUnsubscribe)
	b = appendCount(b, len(m.Recipients), m.Recipients == nil)
	for i := range m.Recipients {
		r := &m.Recipients[i]
		b = appendString(b, r.Email)
		b = appendString(b, r.Kind)
		b = appendString(b, r.Status)
		b = binary.AppendUvarint(b, uint64(r.Attempts))
		b = appendTagged(b, r.LastAttemptAt)
		b = appendTagged(b, r.NextAttemptAt)
		b = binary.AppendUvarint(b, uint64(r.SMTPCode))
		for _, s := range []string{r.EnhancedCode, r.SMTPResponse, r.MX, r.SourceIP} {
			b = appendString(b, s)
		}
		b = appendBool(b, r.TLS)
		b = appendString(b, r.BounceType)
		b = appendString(b, r.BounceCategory)
		for _, t := range []*time.Time{r.DeliveredAt, r.BouncedAt, r.ComplainedAt, r.UnsubscribedAt} {
			b = appendTagged(b, t)
		}
	}
	b = appendTagged(b, &m.CreatedAt)
	for _, t := range []*time.Time{m.SendAt, m.QueuedAt, m.CompletedAt, m.CancelledAt, m.QueueAt} {
		b = appendTagged(b, t)
	}
	b = appendTagged(b, &m.ExpiresAt)
	b = appendString(b, m.Stream)
	var sigs []string
	for i := range m.Recipients {
		if m.Recipients[i].DKIMSignature != "" {
			sigs = make([]string, len(m.Recipients))
			for j := range m.Recipients {
				sigs[j] = m.Recipients[j].DKIMSignature
			}
			break
		}
	}
	b = appendStrings(b, sigs)
	b = appendBool(b, m.RequireTLS)
	n := 0
	for i := range m.Recipients {
		if r := &m.Recipients[i]; r.TLSVersion != "" || r.TLSVerified || r.TLSPolicy != "" {
			n = len(m.Recipients)
			break
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := range n {
		r := &m.Recipients[i]
		b = appendString(b, r.TLSVersion)
		b = appendBool(b, r.TLSVerified)
		b = appendString(b, r.TLSPolicy)
	}
	return b
}

func (r *reader) bool() bool {
	v := r.take(1)
	return v != nil && v[0] == 1
}

func (r *reader) tagged() *time.Time {
	switch tag := r.take(1); {
	case tag == nil || tag[0] == 0:
		return nil
	case tag[0] == 1:
		return &time.Time{}
	}
	sec, ns := r.varint(), r.uvarint()
	if r.err != nil || ns >= 1e9 {
		r.fail()
		return nil
	}
	t := time.Unix(sec, int64(ns)).UTC()
	return &t
}

func (r *reader) taggedValue() time.Time {
	if t := r.tagged(); t != nil {
		return *t
	}
	return time.Time{}
}

// count reads a list length written by appendCount. Each item takes at
// least size bytes, so a length beyond what the bytes left can hold is
// refused: a damaged record cannot ask for a huge allocation.
func (r *reader) count(size int) (int, bool) {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return 0, false
	}
	if n-1 > uint64(len(r.b)/size) {
		r.fail()
		return 0, false
	}
	return int(n - 1), true
}

func (r *reader) strings() []string {
	n, ok := r.count(1)
	if !ok {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

func decodeMessage(data []byte, m *Message) error {
	if len(data) > 0 && data[0] == '{' {
		return json.Unmarshal(data, m)
	}
	if len(data) == 0 || data[0] < messageCodecV1 || data[0] > messageCodecV4 {
		return errMalformedRecord
	}
	r := &reader{b: data[1:]}
	for _, s := range []*string{&m.ID, &m.AccountID, &m.Status, &m.From, &m.Domain} {
		*s = r.string()
	}
	m.Test = r.bool()
	for _, ss := range []*[]string{&m.To, &m.Cc, &m.Bcc, &m.ReplyTo} {
		*ss = r.strings()
	}
	m.Subject = r.string()
	m.CampaignID = r.string()
	m.Tags = r.strings()
	if n, ok := r.count(1); ok {
		m.Metadata = json.RawMessage(append([]byte{}, r.take(uint64(n))...))
	}
	if r.bool() {
		m.Template = &TemplateRef{ID: r.string(), Version: int(r.uvarint())}
	}
	m.Tracking.Opens = r.bool()
	m.Tracking.Clicks = r.bool()
	m.IPPool = r.string()
	m.HeaderID = r.string()
	m.ListUnsubscribe = r.bool()
	if n, ok := r.count(minRecipientSize); ok {
		m.Recipients = make([]Recipient, n)
	}
	for i := range m.Recipients {
		rc := &m.Recipients[i]
		rc.Email = r.string()
		rc.Kind = r.string()
		rc.Status = r.string()
		rc.Attempts = int(r.uvarint())
		rc.LastAttemptAt = r.tagged()
		rc.NextAttemptAt = r.tagged()
		rc.SMTPCode = int(r.uvarint())
		for _, s := range []*string{&rc.EnhancedCode, &rc.SMTPResponse, &rc.MX, &rc.SourceIP} {
			*s = r.string()
		}
		rc.TLS = r.bool()
		rc.BounceType = r.string()
		rc.BounceCategory = r.string()
		for _, t := range []**time.Time{&rc.DeliveredAt, &rc.BouncedAt, &rc.ComplainedAt, &rc.UnsubscribedAt} {
			*t = r.tagged()
		}
		if r.err != nil {
			return r.err
		}
	}
	m.CreatedAt = r.taggedValue()
	for _, t := range []**time.Time{&m.SendAt, &m.QueuedAt, &m.CompletedAt, &m.CancelledAt, &m.QueueAt} {
		*t = r.tagged()
	}
	m.ExpiresAt = r.taggedValue()
	if data[0] >= messageCodecV2 {
		m.Stream = r.string()
	}
	if data[0] >= messageCodecV3 {
		if sigs := r.strings(); sigs != nil {
			if len(sigs) != len(m.Recipients) {
				r.fail()
			}
			for i := range min(len(sigs), len(m.Recipients)) {
				m.Recipients[i].DKIMSignature = sigs[i]
			}
		}
	}
	if data[0] >= messageCodecV4 {
		m.RequireTLS = r.bool()
		n := r.uvarint()
		if n != 0 && n != uint64(len(m.Recipients)) {
			r.fail()
		}
		for i := range min(int(n), len(m.Recipients)) {
			rc := &m.Recipients[i]
			rc.TLSVersion = r.string()
			rc.TLSVerified = r.bool()
			rc.TLSPolicy = r.string()
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	return r.err
}
