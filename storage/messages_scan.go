package storage

import (
	"bytes"
	"errors"
	"strings"
	"time"
)

// MessageScan is where a budgeted walk of an account's messages stopped.
type MessageScan struct {
	ListResult
	// Examined counts the messages read, matching or not.
	Examined int
	// Spent is true when the budget ran out before the page was full:
	// Next then continues after the last message examined, created at
	// Reached.
	Spent   bool
	Reached time.Time
}

var errScanStop = errors.New("scan stopped")

// ScanMessages lists one page of an account's messages that f accepts, walking the account's time-ordered ids in the
// order opts asks for (within f.Range, after opts.After), and reads at most
// budget messages (0 or less: no budget). Its cost is proportional to the
// page or the budget, whichever ends the walk first; when the budget ends
// it, the result says so and its cursor continues where the walk stopped.
// A filter by recipient, campaign, tag, status or stream walks that index instead of every
// message (walkMessages), so the budget is spent on candidates only.
func (tx *Tx) ScanMessages(accountID string, f MessageFilter, opts ListOptions, budget int) ([]Message, MessageScan, error) {
	var out []Message
	var sc MessageScan
	var lastKept, lastSeen []byte
	f.Recipient = addressKey(f.Recipient) // the form recipients are stored in, and a needle
	limit := opts.Limit
	opts.Limit, opts.Offset = -1, 0
	needles := f.needles()
	_, _, err := walkMessages(tx, accountID, f, opts, func(k, v []byte) (struct{}, bool, error) {
		if budget > 0 && sc.Examined == budget {
			sc.Spent, sc.HasMore = true, true
			sc.Next = bytes.Clone(lastSeen)
			return struct{}{}, false, errScanStop
		}
		sc.Examined++
		lastSeen = append(lastSeen[:0], k...)
		if skipBinary(v, needles, f.SubjectPrefix) {
			sc.Reached = messageTime(k)
			return struct{}{}, false, nil
		}
		m, ok, err := f.match(k, v)
		if err != nil {
			return struct{}{}, false, err
		}
		sc.Reached = m.CreatedAt
		if !ok {
			return struct{}{}, false, nil
		}
		if len(out) == limit {
			sc.HasMore = true
			sc.Next = bytes.Clone(lastKept)
			return struct{}{}, false, errScanStop
		}
		out = append(out, m)
		lastKept = append(lastKept[:0], k...)
		return struct{}{}, false, nil
	})
	if err != nil && !errors.Is(err, errScanStop) {
		return nil, MessageScan{}, err
	}
	if !sc.Spent {
		sc.Reached = time.Time{}
	}
	return out, sc, nil
}

// needles are strings every record that f accepts holds as they are (the
// subject prefix is checked apart, ignoring case).
func (f MessageFilter) needles() [][]byte {
	var out [][]byte
	for _, s := range []string{f.Recipient, f.Tag, f.CampaignID, f.Status} {
		if s != "" {
			out = append(out, []byte(s))
		}
	}
	return out
}

// skipBinary reports whether v, a message record, is in the binary codec
// (which keeps strings as they are, unlike JSON's escapes) and lacks one of
// needles or has a subject that does not start with subjectPrefix: a
// record that cannot match, skipped without decoding it.
func skipBinary(v []byte, needles [][]byte, subjectPrefix string) bool {
	if len(v) == 0 || v[0] < messageCodecV1 || v[0] > messageCodecV4 {
		return false
	}
	for _, n := range needles {
		if !bytes.Contains(v, n) {
			return true
		}
	}
	if subjectPrefix != "" {
		if subject, ok := binarySubject(v); ok && !hasPrefixLower(subject, subjectPrefix) {
			return true
		}
	}
	return false
}

// binarySubject is the subject of a binary message record, read in place:
// the fields before it are skipped, not decoded.
func binarySubject(v []byte) ([]byte, bool) {
	r := &reader{b: v[1:]}
	for range 5 { // id, account, status, from, domain
		r.take(r.uvarint())
	}
	r.take(1)     // test
	for range 4 { // to, cc, bcc, reply-to
		if n := r.uvarint(); n > 0 {
			for range n - 1 {
				r.take(r.uvarint())
				if r.err != nil {
					break
				}
			}
		}
	}
	subject := r.take(r.uvarint())
	return subject, r.err == nil
}

// hasPrefixLower reports whether s, lower cased (strings.ToLower), starts
// with lower. ASCII is compared in place; the rest of s is lower cased
// from its first non-ASCII byte only.
func hasPrefixLower[S ~string | ~[]byte](s S, lower string) bool {
	i := 0
	for ; i < len(s) && i < len(lower); i++ {
		c := s[i]
		if c >= 0x80 || lower[i] >= 0x80 {
			return strings.HasPrefix(strings.ToLower(string(s[i:])), lower[i:])
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return i == len(lower)
}

// messageTime is the creation time in a message key's UUIDv7 id (its first
// 48 bits, in milliseconds), or zero if the key holds no such id.
func messageTime(k []byte) time.Time {
	if len(k) < 13 {
		return time.Time{}
	}
	var ms int64
	for i, c := range k[:13] {
		if i == 8 {
			if c != '-' {
				return time.Time{}
			}
			continue
		}
		d := int64(unhex(c))
		if d < 0 {
			return time.Time{}
		}
		ms = ms<<4 | d
	}
	return time.UnixMilli(ms).UTC()
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// AccountQueue is what the message queue holds of one account.
type AccountQueue struct {
	Due   int // entries due at or before now: waiting for a sender, or in flight
	Later int // entries due later: scheduled sends and deferred retries
	// Oldest is the account's earliest entry; HasOldest is false when
	// none was found.
	Oldest    QueuedMessage
	HasOldest bool
	// Complete is false when the budget ran out before the end of the
	// queue: the counts are then lower bounds.
	Complete bool
}

// AccountQueue counts one account's entries in the message queue, reading
// at most budget entries (0 or less: all) of the deployment's queue,
// earliest first. The queue is kept by due time for every account, so this
// is a walk of its keys and account ids (no message is read), bounded by
// the budget.
func (tx *Tx) AccountQueue(accountID string, now time.Time, budget int) AccountQueue {
	var q AccountQueue
	limit := uint64(now.UnixNano())
	acct := []byte(accountID)
	c := tx.bucket(bucketMessageQueue).Cursor()
	n := 0
	for k, v := c.First(); ; k, v = c.Next() {
		if k == nil {
			q.Complete = true
			return q
		}
		if budget > 0 && n == budget {
			return q
		}
		n++
		if len(k) < 8 || !bytes.Equal(v, acct) {
			continue
		}
		at := getU64(k[:8])
		if !q.HasOldest {
			q.HasOldest = true
			q.Oldest = QueuedMessage{At: time.Unix(0, int64(at)).UTC(), AccountID: accountID, MessageID: string(k[8:])}
		}
		if at <= limit {
			q.Due++
		} else {
			q.Later++
		}
	}
}
