package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Message is one accepted message of an account: its envelope, its state
// and the delivery state of each recipient. The content (subject, bodies,
// headers, attachments) is stored apart, in MessageContent, so state
// changes do not rewrite it.
type Message struct {
	ID         string          `json:"id"`
	AccountID  string          `json:"account_id"`
	Test       bool            `json:"test"`
	Status     string          `json:"status"`
	From       string          `json:"from"`   // as given, normalised: "Name <addr>" or addr
	Domain     string          `json:"domain"` // the sending domain (lower case, A-labels)
	To         []string        `json:"to"`
	Cc         []string        `json:"cc,omitempty"`
	Bcc        []string        `json:"bcc,omitempty"`
	ReplyTo    []string        `json:"reply_to,omitempty"`
	Subject    string          `json:"subject"`
	CampaignID string          `json:"campaign_id,omitempty"`
	Tags       []string        `json:"tags,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Template   *TemplateRef    `json:"template,omitempty"`
	Tracking   Tracking        `json:"tracking"`
	IPPool     string          `json:"ip_pool,omitempty"`
	HeaderID   string          `json:"header_id"` // the Message-ID field, <...>
	// ListUnsubscribe adds one-click List-Unsubscribe fields for each
	// recipient at delivery.
	ListUnsubscribe bool `json:"list_unsubscribe,omitempty"`
	// Stream is StreamTransactional or StreamBroadcast; empty (messages
	// stored before streams) is transactional. See StreamOf.
	Stream string `json:"stream,omitempty"`
	// RequireTLS asks for delivery only over verified TLS to servers that
	// advertise REQUIRETLS (RFC 8689).
	RequireTLS bool `json:"require_tls,omitempty"`

	Recipients []Recipient `json:"recipients"`

	CreatedAt   time.Time  `json:"created_at"`
	SendAt      *time.Time `json:"send_at,omitempty"`
	QueuedAt    *time.Time `json:"queued_at,omitempty"` // accepted for delivery (message.sent)
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
	// QueueAt is the time the message's queue entry is filed under: its
	// next attempt, or when its lease ends. Nil when it is not queued.
	QueueAt   *time.Time `json:"queue_at,omitempty"`
	ExpiresAt time.Time  `json:"expires_at"`

	// filedAt is QueueAt as read from the store: where the queue entry
	// is, so UpdateMessage can move it without reading the record again.
	filedAt *time.Time
	// filedStatus is Status as read from the store, for the gauges.
	filedStatus string
}

// StreamOf is the stream of m: transactional unless it says broadcast.
func StreamOf(m Message) string {
	if m.Stream == "" {
		return StreamTransactional
	}
	return m.Stream
}

// TemplateRef names the template version a message was rendered from.
type TemplateRef struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// Tracking says which engagement a message tracks.
type Tracking struct {
	Opens  bool `json:"opens"`
	Clicks bool `json:"clicks"`
}

// Recipient is the delivery state of one recipient of a message.
type Recipient struct {
	Email         string     `json:"email"`
	Kind          string     `json:"kind"` // to, cc or bcc
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	LastAttemptAt *time.Time `json:"last_attempt_at,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	SMTPCode      int        `json:"smtp_code,omitempty"`
	EnhancedCode  string     `json:"enhanced_code,omitempty"`
	SMTPResponse  string     `json:"smtp_response,omitempty"`
	MX            string     `json:"mx,omitempty"`
	SourceIP      string     `json:"source_ip,omitempty"`
	TLS           bool       `json:"tls,omitempty"`
	// TLSVersion ("TLS 1.3"), TLSVerified and TLSPolicy ("none",
	// "mta-sts", "dane") describe the last attempt's TLS session; empty
	// before one ran over TLS or under a policy.
	TLSVersion     string     `json:"tls_version,omitempty"`
	TLSVerified    bool       `json:"tls_verified,omitempty"`
	TLSPolicy      string     `json:"tls_policy,omitempty"`
	BounceType     string     `json:"bounce_type,omitempty"`
	BounceCategory string     `json:"bounce_category,omitempty"`
	DeliveredAt    *time.Time `json:"delivered_at,omitempty"`
	BouncedAt      *time.Time `json:"bounced_at,omitempty"`
	ComplainedAt   *time.Time `json:"complained_at,omitempty"`
	UnsubscribedAt *time.Time `json:"unsubscribed_at,omitempty"`
	// DKIMSignature is the DKIM-Signature field (name, value and CRLF, as
	// sent) of the recipient's latest live attempt; empty when that
	// attempt was not signed, and before the first attempt.
	DKIMSignature string `json:"dkim_signature,omitempty"`
}

// MessageContent is what a message says, rendered: templates are applied
// before it is stored.
type MessageContent struct {
	Subject     string              `json:"subject"`
	HTML        string              `json:"html,omitempty"`
	Text        string              `json:"text,omitempty"`
	Headers     [][2]string         `json:"headers,omitempty"`
	Attachments []MessageAttachment `json:"attachments,omitempty"`
}

// MessageAttachment is a file carried by a message. Its bytes live in the
// built message (MessageRaw); Content is kept only by records written
// before built messages were stored.
type MessageAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int    `json:"size"`
	Content     []byte `json:"content,omitempty"`
	ContentID   string `json:"content_id,omitempty"`
}

func messageCollection(test bool) string {
	if test {
		return "messages_test"
	}
	return "messages_live"
}

// InsertMessage stores a new message with its content and the message as
// built for the wire (RFC 5322, not yet signed), and, when QueueAt is set,
// files it in the delivery queue.
func (tx *Tx) InsertMessage(m Message, content MessageContent, raw []byte) error {
	key := join(m.AccountID, m.ID)
	if err := tx.bucket(bucketMessages).ExpectNew(key); err != nil {
		return err
	}
	// Every key below holds the new message's id: they are new too.
	if err := putNewJSON(tx.bucket(bucketMessageContent), []byte(m.ID), content); err != nil {
		return err
	}
	if err := tx.bucket(bucketMessageRaw).PutNew([]byte(m.ID), raw); err != nil {
		return err
	}
	if err := tx.bucket(bucketMessageOwner).PutNew([]byte(m.ID), []byte(m.AccountID)); err != nil {
		return err
	}
	if err := tx.putMessage(m, nil, ""); err != nil { // files the status entry
		return err
	}
	if err := writeIndexEntries(tx.bucket, lifelongIndexEntries(&m), putNewEntry); err != nil {
		return err
	}
	if m.Test {
		tx.gauge.inserted[1]++
	} else {
		tx.gauge.inserted[0]++
	}
	if err := tx.addNewExpiry(m.ExpiresAt, kindMessage, key); err != nil {
		return err
	}
	return tx.addCount(messageCollection(m.Test), m.AccountID, 1)
}

// UpdateMessage rewrites a message read with Message (in this
// transaction) and moves its queue entry to match QueueAt (removing it when
// QueueAt is nil).
func (tx *Tx) UpdateMessage(m Message) error {
	if tx.bucket(bucketMessages).Get(join(m.AccountID, m.ID)) == nil {
		return ErrNotFound
	}
	return tx.putMessage(m, m.filedAt, m.filedStatus)
}

// putMessage writes m's record, moving its queue entry from oldQueue and
// its messages_by_status entry from oldStatus ("" for a new message). Every
// write of a message record goes through here, so the status index follows
// the record in the same transaction.
func (tx *Tx) putMessage(m Message, oldQueue *time.Time, oldStatus string) error {
	// A new message (no status before) is filed under keys that are new.
	put := kvBucket.Put
	if oldStatus == "" {
		put = kvBucket.PutNew
	}
	if oldStatus != m.Status {
		b := tx.bucket(bucketMessagesByStatus)
		if k := statusIndexKey(m.AccountID, oldStatus, m.ID); k != nil {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		if k := statusIndexKey(m.AccountID, m.Status, m.ID); k != nil {
			if err := put(b, k, nil); err != nil {
				return err
			}
		}
	}
	if oldQueue != nil {
		tx.gauge.queue(oldStatus, -1)
	}
	if m.QueueAt != nil {
		tx.gauge.queue(m.Status, 1)
	}
	q := tx.bucket(bucketMessageQueue)
	if oldQueue != nil && (m.QueueAt == nil || !oldQueue.Equal(*m.QueueAt)) {
		if err := q.Delete(queueKey(*oldQueue, m.ID)); err != nil {
			return err
		}
	}
	if m.QueueAt != nil {
		if err := tx.fileQueued(put, bucketMessageQueue, MessageQueueWritten, *m.QueueAt, oldQueue, m.ID, []byte(m.AccountID)); err != nil {
			return err
		}
	}
	return tx.bucket(bucketMessages).Put(join(m.AccountID, m.ID), encodeMessage(&m))
}

// getMessage reads the message record at key.
func getMessage(b kvBucket, key []byte, m *Message) error {
	data := b.Get(key)
	if data == nil {
		return ErrNotFound
	}
	if err := decodeMessage(data, m); err != nil {
		return fmt.Errorf("decode %q: %w", key, err)
	}
	return nil
}

// Message reads one message of an account.
func (tx *Tx) Message(accountID, id string) (Message, error) {
	var m Message
	err := getMessage(tx.bucket(bucketMessages), join(accountID, id), &m)
	if m.QueueAt != nil {
		at := *m.QueueAt
		m.filedAt = &at
	}
	m.filedStatus = m.Status
	return m, err
}

// MessageContent reads what one of an account's messages says; another
// account's is ErrNotFound.
func (tx *Tx) MessageContent(accountID, id string) (MessageContent, error) {
	var c MessageContent
	if !tx.ownsMessage(accountID, id) {
		return c, ErrNotFound
	}
	err := getJSON(tx.bucket(bucketMessageContent), []byte(id), &c)
	return c, err
}

// MessageRaw reads one of an account's messages as built; nil for another
// account's, and for messages stored before built messages were kept.
func (tx *Tx) MessageRaw(accountID, id string) []byte {
	if !tx.ownsMessage(accountID, id) {
		return nil
	}
	v := tx.bucket(bucketMessageRaw).Get([]byte(id))
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

// ownsMessage reports whether message id is accountID's. The records kept
// by message id alone (content, built message, tracked links, engagement)
// are read through it; message_owner holds every stored message's owner
// (migration 7 filled it for older ones).
func (tx *Tx) ownsMessage(accountID, id string) bool {
	v := tx.bucket(bucketMessageOwner).Get([]byte(id))
	return v != nil && string(v) == accountID
}

// QueuedMessage is a queue entry: a message whose next step is due at At.
type QueuedMessage struct {
	At        time.Time
	AccountID string
	MessageID string
}

// DueMessages returns up to max queue entries due at or before now,
// earliest first, and the time of the next entry after them (zero when the
// queue holds no more).
func (tx *Tx) DueMessages(now time.Time, max int) ([]QueuedMessage, time.Time) {
	var out []QueuedMessage
	limit := uint64(now.UnixNano())
	c := tx.bucket(bucketMessageQueue).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		at := getU64(k[:8])
		if at > limit || len(out) == max {
			return out, time.Unix(0, int64(at)).UTC()
		}
		out = append(out, QueuedMessage{At: time.Unix(0, int64(at)).UTC(), AccountID: string(v), MessageID: string(k[8:])})
	}
	return out, time.Time{}
}

// DropQueued removes one queue entry that no longer matches its message.
func (tx *Tx) DropQueued(at time.Time, id string) error {
	return tx.bucket(bucketMessageQueue).Delete(queueKey(at, id))
}

// QueueLength counts the queue entries: messages waiting or in flight.
func (tx *Tx) QueueLength() int { return tx.bucket(bucketMessageQueue).KeyN() }

// PutLease records that a message is being delivered by this process, so
// a restart can hand it out again at once instead of waiting for the lease
// to end. It names no holder (PutLeaseFor does).
func (tx *Tx) PutLease(accountID, id string) error { return tx.PutLeaseFor(accountID, id, "") }

// PutLeaseFor records that a message is being delivered under the claim
// token holder (which node, which claim), so that the attempt's outcome is
// recorded only while that claim still holds the message (LeaseHolder): an
// attempt that outlived its lease, after another claim took the message,
// must not overwrite that claim's state. The record is the account id,
// then a zero byte and the holder.
func (tx *Tx) PutLeaseFor(accountID, id, holder string) error {
	v := []byte(accountID)
	if holder != "" {
		v = append(append(v, 0), holder...)
	}
	return tx.bucket(bucketMessageLeases).Put([]byte(id), v)
}

// splitLease reads a lease record: the account id and the holder ("" for
// a lease written without one).
func splitLease(v []byte) (accountID, holder string) {
	if i := bytes.IndexByte(v, 0); i >= 0 {
		return string(v[:i]), string(v[i+1:])
	}
	return string(v), ""
}

// LeaseHolder is the claim token that holds message id's lease; ok is
// false when the message is under no lease.
func (tx *Tx) LeaseHolder(id string) (holder string, ok bool) {
	v := tx.bucket(bucketMessageLeases).Get([]byte(id))
	if v == nil {
		return "", false
	}
	_, holder = splitLease(v)
	return holder, true
}

// DeleteLease forgets a lease.
func (tx *Tx) DeleteLease(id string) error { return tx.bucket(bucketMessageLeases).Delete([]byte(id)) }

// Leases lists the messages under lease: (account id, message id) pairs.
func (tx *Tx) Leases() [][2]string {
	var out [][2]string
	tx.bucket(bucketMessageLeases).ForEach(func(k, v []byte) error {
		acct, _ := splitLease(v)
		out = append(out, [2]string{acct, string(k)})
		return nil
	})
	return out
}

// MessageFilter selects messages of one account and mode.
type MessageFilter struct {
	Test       bool
	Status     string
	CampaignID string
	Tag        string
	Recipient  string // an address, in any case and either IDN spelling
	Stream     string
	Range      Range // over message ids (UUIDv7: creation time)
	// SubjectPrefix (lower case) keeps messages whose subject, lower
	// cased, starts with it. Only ScanMessages takes it.
	SubjectPrefix string
}

func (f MessageFilter) plain() bool {
	return f.Status == "" && f.CampaignID == "" && f.Tag == "" && f.Recipient == "" && f.Stream == "" && f.SubjectPrefix == "" && f.Range.Lower == nil && f.Range.Upper == nil
}

// onDecodeMessage, when set (by tests), is told of every message record
// a list decodes.
var onDecodeMessage func()

func (f MessageFilter) match(k, v []byte) (Message, bool, error) {
	var m Message
	if onDecodeMessage != nil {
		onDecodeMessage()
	}
	if err := decodeMessage(v, &m); err != nil {
		return m, false, fmt.Errorf("decode %q: %w", k, err)
	}
	ok := m.Test == f.Test &&
		(f.Status == "" || m.Status == f.Status) &&
		(f.CampaignID == "" || m.CampaignID == f.CampaignID) &&
		(f.Tag == "" || slices.Contains(m.Tags, f.Tag)) &&
		(f.Stream == "" || StreamOf(m) == f.Stream) &&
		(f.SubjectPrefix == "" || hasPrefixLower(m.Subject, f.SubjectPrefix))
	if ok && f.Recipient != "" {
		ok = false
		for _, r := range m.Recipients {
			if r.Email == f.Recipient {
				ok = true
				break
			}
		}
	}
	return m, ok, nil
}

// Messages lists one page of an account's messages, newest first unless
// opts says otherwise, with the total that page mode reports. A filter by
// recipient, campaign, tag, status or stream walks that index
// (messages_index.go) and reads only the messages it lists; the others
// walk the account's messages.
func (tx *Tx) Messages(accountID string, f MessageFilter, opts ListOptions, withTotal bool) ([]Message, ListResult, int, error) {
	f.Recipient = addressKey(f.Recipient) // the form recipients are stored in
	list, res, err := walkMessages(tx, accountID, f, opts, f.match)
	if err != nil || !withTotal {
		return list, res, 0, err
	}
	if f.plain() {
		return list, res, tx.count(messageCollection(f.Test), accountID), nil
	}
	total := 0
	_, _, err = walkMessages(tx, accountID, f, ListOptions{Limit: -1}, func(k, v []byte) (struct{}, bool, error) {
		_, ok, err := f.match(k, v)
		if ok {
			total++
		}
		return struct{}{}, false, err
	})
	return list, res, total, err
}

func expireMessage(tx *Tx, key []byte, now time.Time) error {
	b := tx.bucket(bucketMessages)
	var m Message
	if err := getMessage(b, key, &m); err != nil {
		return nil
	}
	if m.ExpiresAt.After(now) {
		return nil
	}
	if m.QueueAt != nil {
		if err := tx.bucket(bucketMessageQueue).Delete(queueKey(*m.QueueAt, m.ID)); err != nil {
			return err
		}
		tx.gauge.queue(m.Status, -1)
	}
	if err := tx.DeleteLease(m.ID); err != nil {
		return err
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	if err := indexMessage(tx.bucket, &m, true); err != nil {
		return err
	}
	if err := tx.bucket(bucketMessageContent).Delete([]byte(m.ID)); err != nil {
		return err
	}
	for _, b := range [][]byte{bucketMessageRaw, bucketMessageOwner, bucketEngagement} {
		if err := tx.bucket(b).Delete([]byte(m.ID)); err != nil {
			return err
		}
	}
	if err := tx.deleteLinks(m.ID); err != nil {
		return err
	}
	return tx.addCount(messageCollection(m.Test), m.AccountID, -1)
}
