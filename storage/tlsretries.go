package storage

import (
	"bytes"
	"encoding/binary"
	"time"
)

// TLSReportRetry is a TLS report upload to an https: rua that failed and
// is to be made again (RFC 8460 §5.4 asks for redelivery for up to 24
// hours). It holds the report as posted, so each retry sends the same
// bytes. Its key is its due time and its id: the bucket is its own queue,
// earliest first.
type TLSReportRetry struct {
	ID       uint64    `json:"id"`        // the bucket's sequence, given by AddTLSReportRetries
	URL      string    `json:"url"`       // the https: rua
	Domain   string    `json:"domain"`    // the policy domain the report is about
	ReportID string    `json:"report_id"` // the report's report-id, for logs
	Body     []byte    `json:"body"`      // the report as posted: gzip-compressed JSON
	Attempts int       `json:"attempts"`  // made so far, the first one included
	First    time.Time `json:"first"`     // the first attempt: retries stop a lifetime after it
	Next     time.Time `json:"next"`      // when it is due
	// LastError is why the latest attempt failed, for the log line that
	// gives the upload up.
	LastError string `json:"last_error,omitempty"`
}

// tlsRetryKey is <u64 unix-nanos due><u64 id>.
func tlsRetryKey(next time.Time, id uint64) []byte {
	return binary.BigEndian.AppendUint64(putU64(uint64(next.UnixNano())), id)
}

// decodeTLSRetry reads one entry; its key, not its copy in the value,
// says when it is due and which it is.
func decodeTLSRetry(k, v []byte) (TLSReportRetry, error) {
	var r TLSReportRetry
	if err := decodeJSON(k, v, &r); err != nil {
		return r, err
	}
	if len(k) == 16 {
		r.Next, r.ID = time.Unix(0, int64(getU64(k[:8]))).UTC(), getU64(k[8:])
	}
	return r, nil
}

// AddTLSReportRetries files failed uploads for retry, each with a new id,
// in order, while fewer than maxPending are waiting: it returns how many
// it kept (rs[:kept]); the others are not stored, so that a receiver
// that never answers cannot grow the database without bound.
func (tx *Tx) AddTLSReportRetries(rs []TLSReportRetry, maxPending int) (kept int, err error) {
	if len(rs) == 0 {
		return 0, nil
	}
	b := tx.bucket(bucketTLSRetries)
	room := maxPending - b.KeyN()
	for _, r := range rs {
		if kept >= room {
			break
		}
		if r.ID, err = b.NextSequence(); err != nil {
			return kept, err
		}
		if err := putNewJSON(b, tlsRetryKey(r.Next, r.ID), r); err != nil {
			return kept, err
		}
		kept++
	}
	return kept, nil
}

// DueTLSReportRetries lists at most max retries due at or before now,
// earliest first.
func (tx *Tx) DueTLSReportRetries(now time.Time, max int) ([]TLSReportRetry, error) {
	var out []TLSReportRetry
	limit := putU64(uint64(now.UnixNano()))
	c := tx.bucket(bucketTLSRetries).Cursor()
	for k, v := c.First(); k != nil && len(out) < max; k, v = c.Next() {
		if len(k) < 8 || bytes.Compare(k[:8], limit) > 0 {
			break
		}
		r, err := decodeTLSRetry(k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// TLSReportRetries is how many retries are waiting.
func (tx *Tx) TLSReportRetries() int { return tx.bucket(bucketTLSRetries).KeyN() }

// ClaimTLSReportRetry takes retry r, as DueTLSReportRetries listed it,
// for one attempt: it counts the attempt and makes r due again at until
// before anything is sent, so an attempt whose outcome is never recorded
// (the node stopped) is made again then, not at once and not twice at
// the same time: until must lie past the longest the attempt can take.
// It returns r as stored now, or ErrNotFound when r is no longer where it
// was listed (another node claimed it first, or it is gone).
func (tx *Tx) ClaimTLSReportRetry(r TLSReportRetry, until time.Time) (TLSReportRetry, error) {
	return tx.moveTLSRetry(r, until, func(cur *TLSReportRetry) { cur.Attempts++ })
}

// RetryTLSReportLater makes claimed retry r (as ClaimTLSReportRetry
// returned it) due at next after its attempt failed with lastErr. It
// returns r as stored now, or ErrNotFound when r is gone.
func (tx *Tx) RetryTLSReportLater(r TLSReportRetry, next time.Time, lastErr string) (TLSReportRetry, error) {
	return tx.moveTLSRetry(r, next, func(cur *TLSReportRetry) { cur.LastError = lastErr })
}

// moveTLSRetry files r, read again from where it is, under the due time
// next, changed by change.
func (tx *Tx) moveTLSRetry(r TLSReportRetry, next time.Time, change func(*TLSReportRetry)) (TLSReportRetry, error) {
	b := tx.bucket(bucketTLSRetries)
	key := tlsRetryKey(r.Next, r.ID)
	v := b.Get(key)
	if v == nil {
		return r, ErrNotFound
	}
	cur, err := decodeTLSRetry(key, v)
	if err != nil {
		return r, err
	}
	if err := b.Delete(key); err != nil {
		return r, err
	}
	change(&cur)
	cur.Next = next
	return cur, putJSON(b, tlsRetryKey(cur.Next, cur.ID), cur)
}

// DeleteTLSReportRetry drops retry r (sent, or given up). A retry no
// longer there is not an error.
func (tx *Tx) DeleteTLSReportRetry(r TLSReportRetry) error {
	return tx.bucket(bucketTLSRetries).Delete(tlsRetryKey(r.Next, r.ID))
}
