package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"
)

// ServerSecret is the installation's random secret (created by migration
// 7, sealed since migration 9); tracking and unsubscribe links and bounce
// addresses are signed with keys derived from it. Rotating the secret key
// re-seals it but never changes it, so links already sent keep verifying.
func (tx *Tx) ServerSecret() ([]byte, error) {
	v := tx.bucket(bucketMeta).Get(keyServerSecret)
	if v == nil {
		return nil, ErrNotFound
	}
	return tx.openValue(ctxServerSecret, v)
}

// MessageOwner is the account a message id belongs to.
func (tx *Tx) MessageOwner(messageID string) (string, error) {
	v := tx.bucket(bucketMessageOwner).Get([]byte(messageID))
	if v == nil {
		return "", ErrNotFound
	}
	return string(v), nil
}

func linkKey(messageID string, index int) []byte {
	k := append([]byte(messageID), sep, 0, 0)
	binary.BigEndian.PutUint16(k[len(k)-2:], uint16(index))
	return k
}

// PutLinks records the original URLs of a message's tracked links, by
// index: a click redirects only to the URL recorded here.
func (tx *Tx) PutLinks(messageID string, urls []string) error {
	b := tx.bucket(bucketMessageLinks)
	for i, u := range urls {
		if err := b.Put(linkKey(messageID, i), []byte(u)); err != nil {
			return err
		}
	}
	return nil
}

// Link reads the original URL of one tracked link of an account's
// message; another account's is ErrNotFound.
func (tx *Tx) Link(accountID, messageID string, index int) (string, error) {
	if !tx.ownsMessage(accountID, messageID) {
		return "", ErrNotFound
	}
	v := tx.bucket(bucketMessageLinks).Get(linkKey(messageID, index))
	if v == nil {
		return "", ErrNotFound
	}
	return string(v), nil
}

func (tx *Tx) deleteLinks(messageID string) error {
	b := tx.bucket(bucketMessageLinks)
	pfx := append([]byte(messageID), sep)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Engagement counts the opens and clicks of one message.
type Engagement struct {
	Opens        int        `json:"opens"`
	Clicks       int        `json:"clicks"`
	FirstOpenAt  *time.Time `json:"first_open_at,omitempty"`
	FirstClickAt *time.Time `json:"first_click_at,omitempty"`
	LinkClicks   []int      `json:"link_clicks,omitempty"` // by link index
}

// Engagement reads the engagement of one of an account's messages: the
// zero value when it has none yet, ErrNotFound for another account's
// message, and an error for a damaged record (which a caller adding to the
// counts must not overwrite with counts starting from zero).
func (tx *Tx) Engagement(accountID, messageID string) (Engagement, error) {
	var e Engagement
	if !tx.ownsMessage(accountID, messageID) {
		return e, ErrNotFound
	}
	err := getJSON(tx.bucket(bucketEngagement), []byte(messageID), &e)
	if errors.Is(err, ErrNotFound) {
		err = nil
	}
	return e, err
}

// PutEngagement stores a message's engagement.
func (tx *Tx) PutEngagement(messageID string, e Engagement) error {
	return putJSON(tx.bucket(bucketEngagement), []byte(messageID), e)
}

// Stat is one counter of the daily statistics.
type Stat int

// The counters kept per account, mode, dimension and day.
const (
	StatSent Stat = iota
	StatDelivered
	StatBouncedHard
	StatBouncedSoft
	StatBouncedBlock
	StatOpened
	StatUniqueOpened
	StatClicked
	StatUniqueClicked
	StatComplained
	StatUnsubscribed
	numStats
)

// Stats is one day's counters.
type Stats [numStats]uint64

// decodeStats reads stored counters; zero when absent or malformed.
func decodeStats(v []byte) Stats {
	var st Stats
	if len(v) == 8*int(numStats) {
		for i := range st {
			st[i] = binary.BigEndian.Uint64(v[8*i:])
		}
	}
	return st
}

func (st Stats) encode() []byte {
	v := make([]byte, 0, 8*int(numStats))
	for _, n := range st {
		v = binary.BigEndian.AppendUint64(v, n)
	}
	return v
}

// statKey is <account>·<mode>·<dimension>·<u32 day>: the days of one
// dimension are adjacent and in order, so a summary costs one seek and a
// walk over its days. The dimension is "" (everything), "c:<campaign>" or
// "d:<domain>".
func statKey(accountID string, test bool, dim string, day uint32) []byte {
	mode := "live"
	if test {
		mode = "test"
	}
	k := join(accountID, mode, dim, "")
	k = binary.BigEndian.AppendUint32(k, day)
	return k
}

// StatDay is the day number statistics are kept under: days since
// 1970-01-01 UTC.
func StatDay(t time.Time) uint32 { return uint32(t.UTC().Unix() / 86400) }

// AddStats adds n to counter s of the day of at, for each dimension given.
func (tx *Tx) AddStats(accountID string, test bool, dims []string, at time.Time, s Stat, n uint64) error {
	b := tx.bucket(bucketStats)
	day := StatDay(at)
	for _, dim := range dims {
		k := statKey(accountID, test, dim, day)
		st := decodeStats(b.Get(k))
		st[s] += n
		if err := b.Put(k, st.encode()); err != nil {
			return err
		}
	}
	return nil
}

// StatsRange reads the counters of days from..to (inclusive) of one
// dimension: only the days that have any.
func (tx *Tx) StatsRange(accountID string, test bool, dim string, from, to uint32) map[uint32]Stats {
	out := map[uint32]Stats{}
	c := tx.bucket(bucketStats).Cursor()
	pfx := statKey(accountID, test, dim, 0)
	pfx = pfx[:len(pfx)-4]
	for k, v := c.Seek(statKey(accountID, test, dim, from)); k != nil && bytes.HasPrefix(k, pfx) && len(k) == len(pfx)+4; k, v = c.Next() {
		day := binary.BigEndian.Uint32(k[len(pfx):])
		if day > to {
			break
		}
		out[day] = decodeStats(v)
	}
	return out
}
