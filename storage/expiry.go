package storage

import (
	"bytes"
	"time"
)

// Kinds of records the sweeper removes. A kind is one byte of the expiry key.
const (
	kindIdempotency    byte = 1
	kindDelivery       byte = 2
	kindEvent          byte = 3
	kindMessage        byte = 4
	kindInboundMessage byte = 5 // one copy of a received message
	kindInboundRaw     byte = 6 // the raw bytes all copies of a received message share
	kindPasswordLink   byte = 7
	kindSession        byte = 8
	kindAudit          byte = 9
)

// expirers remove one record of a kind if it is still due at now. A record
// that was rewritten with a later expiry has its own, later expiry entry, so
// an expirer checks the record's own time before deleting.
var expirers = map[byte]func(tx *Tx, key []byte, now time.Time) error{
	kindIdempotency: func(tx *Tx, key []byte, now time.Time) error {
		b := tx.bucket(bucketIdempotency)
		var r IdempotencyRecord
		if err := getJSON(b, key, &r); err != nil {
			return nil // already gone or unreadable: nothing to keep
		}
		if r.ExpiresAt.After(now) {
			return nil
		}
		return b.Delete(key)
	},
	kindDelivery:       expireDelivery,
	kindEvent:          expireEvent,
	kindMessage:        expireMessage,
	kindInboundMessage: expireInboundMessage,
	kindInboundRaw:     expireInboundRaw,
	kindPasswordLink:   expirePasswordLink,
	kindSession:        expireSession,
	kindAudit:          expireAudit,
}

func (tx *Tx) addExpiry(at time.Time, kind byte, key []byte) error {
	return tx.bucket(bucketExpiry).Put(expiryKey(at, kind, key), nil)
}

// addNewExpiry is addExpiry for a record being written for the first time.
func (tx *Tx) addNewExpiry(at time.Time, kind byte, key []byte) error {
	return tx.bucket(bucketExpiry).PutNew(expiryKey(at, kind, key), nil)
}

func expiryKey(at time.Time, kind byte, key []byte) []byte {
	k := append(putU64(uint64(at.UnixNano())), kind)
	return append(k, key...)
}

// SweepExpired removes at most max records whose retention ended at or
// before now and reports how many expiry entries it handled. Callers run it
// in small transactions until it returns less than max.
func (tx *Tx) SweepExpired(now time.Time, max int) (int, error) {
	b := tx.bucket(bucketExpiry)
	limit := putU64(uint64(now.UnixNano()))
	var due [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && len(due) < max; k, _ = c.Next() {
		if len(k) < 9 || bytes.Compare(k[:8], limit) > 0 {
			break
		}
		due = append(due, append([]byte{}, k...))
	}
	for _, k := range due {
		if expire := expirers[k[8]]; expire != nil {
			if err := expire(tx, k[9:], now); err != nil {
				return 0, err
			}
		}
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(due), nil
}
