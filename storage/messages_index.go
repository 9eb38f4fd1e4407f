package storage

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// The message indexes list an account's messages by one exact value: a
// recipient address (to, cc or bcc, in AddressKey form: lower case, the
// domain's A-labels since schema v19), a tag or a campaign id
// (schema v16), a stream or a status (schema v17). A key is
// <account_id>·<value>·<message_id>: message ids are UUIDv7, so within one
// value key order is creation-time order and the same as the order of
// messages/<account_id>·<message_id>. That makes a walk of an index answer
// the ranges and cursors of a walk of the messages themselves, byte for
// byte. Every value but the status is fixed for a message's life: those
// entries are written on insert and removed on expiry. The status entry is
// moved by putMessage whenever the record is rewritten with another status.

// messageIndexEntries are the index keys of m, by bucket, its status entry
// included.
func messageIndexEntries(m *Message) map[string][][]byte {
	out := lifelongIndexEntries(m)
	if k := statusIndexKey(m.AccountID, m.Status, m.ID); k != nil {
		out[string(bucketMessagesByStatus)] = [][]byte{k}
	}
	return out
}

// statusIndexKey is the messages_by_status key of a message with status,
// or nil for none (an empty status, or one holding the separator).
func statusIndexKey(accountID, status, id string) []byte {
	if status == "" || strings.IndexByte(status, sep) >= 0 {
		return nil
	}
	return join(accountID, status, id)
}

// lifelongIndexEntries are the index keys of m, by bucket, that hold for
// its whole life: all but the status. A value holding the separator byte
// is not indexed (no such address, tag or campaign id passes validation; a
// walk finds it all the same).
func lifelongIndexEntries(m *Message) map[string][][]byte {
	out := map[string][][]byte{}
	add := func(bucket []byte, value string) {
		if value == "" || strings.IndexByte(value, sep) >= 0 {
			return
		}
		k := join(m.AccountID, value, m.ID)
		for _, have := range out[string(bucket)] {
			if bytes.Equal(have, k) {
				return
			}
		}
		out[string(bucket)] = append(out[string(bucket)], k)
	}
	for _, list := range [][]string{m.To, m.Cc, m.Bcc} {
		for _, a := range list {
			add(bucketMessagesByRecipient, addressKey(addressOf(a)))
		}
	}
	for _, r := range m.Recipients {
		add(bucketMessagesByRecipient, addressKey(r.Email))
	}
	for _, t := range m.Tags {
		add(bucketMessagesByTag, t)
	}
	add(bucketMessagesByCampaign, m.CampaignID)
	add(bucketMessagesByStream, StreamOf(*m))
	return out
}

// addressOf is the address in "Name <addr>", or s as it is.
func addressOf(s string) string {
	if i := strings.LastIndexByte(s, '<'); i >= 0 {
		if j := strings.IndexByte(s[i:], '>'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return s
}

// The message indexes by the schema version that added them.
var (
	messageIndexesV16   = [][]byte{bucketMessagesByRecipient, bucketMessagesByTag, bucketMessagesByCampaign}
	messageIndexesV17   = [][]byte{bucketMessagesByStream, bucketMessagesByStatus}
	messageIndexBuckets = slices.Concat(messageIndexesV16, messageIndexesV17)
)

// indexMessage writes (or, with del, removes) every index entry of m.
func indexMessage(get func([]byte) kvBucket, m *Message, del bool) error {
	write := putEntry
	if del {
		write = deleteEntry
	}
	return writeIndexEntries(get, messageIndexEntries(m), write)
}

// writeIndexEntries writes entries, by bucket, with write: putEntry,
// putNewEntry (a new message's keys, which hold its id) or deleteEntry.
func writeIndexEntries(get func([]byte) kvBucket, entries map[string][][]byte, write func(kvBucket, []byte) error) error {
	for name, keys := range entries {
		b := get([]byte(name))
		for _, k := range keys {
			if err := write(b, k); err != nil {
				return err
			}
		}
	}
	return nil
}

func putEntry(b kvBucket, k []byte) error    { return b.Put(k, nil) }
func putNewEntry(b kvBucket, k []byte) error { return b.PutNew(k, nil) }
func deleteEntry(b kvBucket, k []byte) error { return b.Delete(k) }

// messageIndex picks the index that serves f: the bucket and the key
// prefix of f's value, or nil when f names no indexed value. A recipient is
// the most selective, then a campaign, a tag, a status and a stream.
func (f MessageFilter) messageIndex(accountID string) ([]byte, []byte) {
	for _, c := range []struct {
		bucket []byte
		value  string
	}{{bucketMessagesByRecipient, addressKey(f.Recipient)}, {bucketMessagesByCampaign, f.CampaignID}, {bucketMessagesByTag, f.Tag},
		{bucketMessagesByStatus, f.Status}, {bucketMessagesByStream, f.Stream}} {
		if c.value != "" && strings.IndexByte(c.value, sep) < 0 {
			return c.bucket, append(join(accountID, c.value), sep)
		}
	}
	return nil, nil
}

// walkMessages is scanMatching over an account's messages that f accepts:
// through an index when f names an indexed value (reading only the
// messages the index lists), otherwise over every message of the account.
// Keys handed to match are message ids, as in either walk; f.Range and
// opts.After are message ids too.
func walkMessages[T any](tx *Tx, accountID string, f MessageFilter, opts ListOptions, match func(k, v []byte) (T, bool, error)) ([]T, ListResult, error) {
	msgs := tx.bucket(bucketMessages)
	bucket, pfx := f.messageIndex(accountID)
	if bucket == nil {
		return scanMatching(msgs, prefix(accountID), f.Range, opts, match)
	}
	return scanMatching(tx.bucket(bucket), pfx, f.Range, opts, func(id, _ []byte) (T, bool, error) {
		var zero T
		if bytes.IndexByte(id, sep) >= 0 {
			return zero, false, nil // a longer value's entry under this prefix
		}
		v := msgs.Get(append(prefix(accountID), id...))
		if v == nil {
			return zero, false, nil
		}
		return match(id, v)
	})
}

// migrateMessageIndexes (v16) creates the indexes by recipient, tag and
// campaign and fills them from the messages already stored.
func migrateMessageIndexes(tx kvTx) error { return backfillMessageIndexes(tx, messageIndexesV16) }

// migrateMessageStatusIndexes (v17) creates the indexes by stream and
// status and fills them from the messages already stored.
func migrateMessageStatusIndexes(tx kvTx) error {
	return backfillMessageIndexes(tx, messageIndexesV17)
}

// backfillMessageIndexes creates the index buckets named and fills them
// (only them) from the messages already stored, in batches of keys read
// ahead of the writes.
func backfillMessageIndexes(tx kvTx, buckets [][]byte) error {
	for _, name := range buckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	const batch = 1000
	msgs := tx.Bucket(bucketMessages)
	var after []byte
	for {
		type rec struct{ k, v []byte }
		var recs []rec
		c := msgs.Cursor()
		k, v := c.First()
		if after != nil {
			k, v = c.Seek(after)
			if k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(recs) < batch; k, v = c.Next() {
			recs = append(recs, rec{bytes.Clone(k), bytes.Clone(v)})
		}
		for _, r := range recs {
			var m Message
			if err := decodeMessage(r.v, &m); err != nil {
				return fmt.Errorf("decode %q: %w", r.k, err)
			}
			entries := messageIndexEntries(&m)
			for name := range entries {
				if !slices.ContainsFunc(buckets, func(b []byte) bool { return string(b) == name }) {
					delete(entries, name)
				}
			}
			if err := writeIndexEntries(tx.Bucket, entries, putEntry); err != nil {
				return err
			}
		}
		if len(recs) < batch {
			return nil
		}
		after = recs[len(recs)-1].k
	}
}
