package storage

import (
	"bytes"
	"time"
)

// Message streams. A message belongs to one; a suppression applies to one
// or, with no stream, to all.
const (
	StreamTransactional = "transactional"
	StreamBroadcast     = "broadcast"
)

// Streams lists the message streams, for validation and the docs.
var Streams = []string{StreamTransactional, StreamBroadcast}

// Suppression stops mail to one recipient of one account, in one stream
// or (Stream empty) in all of them.
//
// Keys: an all-streams entry is account\0recipient (the key every
// suppression had before streams); a one-stream entry is
// account\0recipient\0stream. A recipient can so have an entry for all
// streams and one per stream, listed together in recipient order. The
// recipient is in AddressKey form, in the key and in the record (schema
// v19): every method here takes an address in any case and either IDN
// spelling and finds the one entry.
type Suppression struct {
	AccountID       string    `json:"account_id"`
	Recipient       string    `json:"recipient"`
	Stream          string    `json:"stream,omitempty"`
	Reason          string    `json:"reason"`
	SourceMessageID string    `json:"source_message_id,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

const collectionSuppressions = "suppressions"

func suppressionKey(accountID, recipient, stream string) []byte {
	recipient = addressKey(recipient)
	if stream == "" {
		return join(accountID, recipient)
	}
	return join(accountID, recipient, stream)
}

// PutSuppression adds s; when the recipient already has an entry for the
// same stream (or all streams) it keeps it and returns it with
// created=false.
func (tx *Tx) PutSuppression(s Suppression) (stored Suppression, created bool, err error) {
	b := tx.bucket(bucketSuppressions)
	s.Recipient = addressKey(s.Recipient)
	key := suppressionKey(s.AccountID, s.Recipient, s.Stream)
	if err := getJSON(b, key, &stored); err == nil {
		return stored, false, nil
	}
	if err := putJSON(b, key, s); err != nil {
		return Suppression{}, false, err
	}
	return s, true, tx.addCount(collectionSuppressions, s.AccountID, 1)
}

// PutSuppressions adds every entry of list as PutSuppression does, in
// tx, and reports how many it added; an entry whose recipient already has
// one for the same stream (in the database, or earlier in list) is kept as
// it was. The counts move once per account, not once per entry.
func (tx *Tx) PutSuppressions(list []Suppression) (added int, err error) {
	b := tx.bucket(bucketSuppressions)
	perAccount := map[string]int{}
	for _, s := range list {
		s.Recipient = addressKey(s.Recipient)
		key := suppressionKey(s.AccountID, s.Recipient, s.Stream)
		if b.Get(key) != nil {
			continue
		}
		if err := putJSON(b, key, s); err != nil {
			return 0, err
		}
		perAccount[s.AccountID]++
		added++
	}
	for accountID, n := range perAccount {
		if err := tx.addCount(collectionSuppressions, accountID, n); err != nil {
			return 0, err
		}
	}
	return added, nil
}

// Suppression reads one entry: the all-streams one when stream is empty.
func (tx *Tx) Suppression(accountID, recipient, stream string) (Suppression, error) {
	var s Suppression
	err := getJSON(tx.bucket(bucketSuppressions), suppressionKey(accountID, recipient, stream), &s)
	return s, err
}

// Suppressed reports whether mail of stream to recipient is suppressed:
// by an all-streams entry or by one for that stream.
//
// Both entries sort at or just after the recipient's all-streams key, so
// one seek finds either (one round trip on the PostgreSQL engine, where
// two lookups of absent keys would cost two).
func (tx *Tx) Suppressed(accountID, recipient, stream string) bool {
	all := suppressionKey(accountID, recipient, "")
	one := suppressionKey(accountID, recipient, stream)
	c := tx.bucket(bucketSuppressions).Cursor()
	for k, _ := c.Seek(all); k != nil && bytes.HasPrefix(k, all); k, _ = c.Next() {
		if bytes.Equal(k, all) || (stream != "" && bytes.Equal(k, one)) {
			return true
		}
		if len(k) > len(all) && k[len(all)] != sep {
			break // another recipient whose address starts with this one
		}
	}
	return false
}

// DeleteSuppression removes the recipient's entry for stream, or with
// stream empty every entry of the recipient; ErrNotFound when none was.
func (tx *Tx) DeleteSuppression(accountID, recipient, stream string) error {
	b := tx.bucket(bucketSuppressions)
	var keys [][]byte
	if stream != "" {
		if k := suppressionKey(accountID, recipient, stream); b.Get(k) != nil {
			keys = append(keys, k)
		}
	} else {
		base := suppressionKey(accountID, recipient, "")
		sub := append(bytes.Clone(base), sep)
		c := b.Cursor()
		for k, _ := c.Seek(base); k != nil && (bytes.Equal(k, base) || bytes.HasPrefix(k, sub)); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
	}
	if len(keys) == 0 {
		return ErrNotFound
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return tx.addCount(collectionSuppressions, accountID, -len(keys))
}

// Suppressions lists an account's suppressions in recipient order, an
// all-streams entry before the recipient's one-stream entries.
func (tx *Tx) Suppressions(accountID string, opts ListOptions) ([]Suppression, ListResult, error) {
	return scanJSON[Suppression](tx.bucket(bucketSuppressions), prefix(accountID), opts)
}

// SuppressionCount is the number of suppressions of an account.
func (tx *Tx) SuppressionCount(accountID string) int {
	return tx.count(collectionSuppressions, accountID)
}
