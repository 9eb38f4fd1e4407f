package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// Kinds of signed link tokens.
const (
	tokenOpen        byte = 'o'
	tokenClick       byte = 'c'
	tokenUnsubscribe byte = 'u'
)

// tokenMACLen is how much of the HMAC-SHA256 a token carries: 128 bits.
const tokenMACLen = 16

// linkToken is what a tracking or unsubscribe link names: the message, its
// account, and a link or recipient index.
type linkToken struct {
	kind      byte
	accountID string
	messageID string
	index     int
}

// tokenKey derives the key that signs link tokens from the server secret.
func tokenKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mailbolt link tokens v1"))
	return m.Sum(nil)
}

// returnPathKey derives the key of the MAC in bounce addresses
// (queue.ReturnPath) from the server secret: a key of its own, so that no
// link token is ever a valid bounce-address MAC or the reverse.
func returnPathKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mailbolt return paths v1"))
	return m.Sum(nil)
}

// recordReturnPathSince returns when this database's bounce addresses
// started carrying a MAC, recording now at the first start that makes
// them: from then on, only mail accepted earlier can have the old form.
func recordReturnPathSince(db *storage.DB, now time.Time) (time.Time, error) {
	var since time.Time
	err := db.Update(func(tx *storage.Tx) error {
		if since = tx.ReturnPathMACSince(); since.IsZero() {
			since = now.UTC()
			return tx.SetReturnPathMACSince(since)
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("record when bounce addresses started carrying a MAC: %w", err)
	}
	return since, nil
}

// signToken encodes t as an unguessable, tamper-evident URL path segment:
// base64url(kind, account uuid, message uuid, index, MAC).
func (a *App) signToken(t linkToken) string {
	acct, err1 := uuid.Parse(t.accountID)
	msg, err2 := uuid.Parse(t.messageID)
	if err1 != nil || err2 != nil {
		panic("link token for a non-UUID id")
	}
	b := make([]byte, 0, 1+16+16+2+tokenMACLen)
	b = append(b, t.kind)
	b = append(b, acct[:]...)
	b = append(b, msg[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(t.index))
	m := hmac.New(sha256.New, a.tokenKey)
	m.Write(b)
	b = append(b, m.Sum(nil)[:tokenMACLen]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// verifyToken decodes a token of the expected kind; ok is false for anything
// malformed, of another kind, or with a MAC that does not match (compared
// in constant time).
func (a *App) verifyToken(kind byte, s string) (linkToken, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 1+16+16+2+tokenMACLen || b[0] != kind {
		return linkToken{}, false
	}
	body, mac := b[:len(b)-tokenMACLen], b[len(b)-tokenMACLen:]
	m := hmac.New(sha256.New, a.tokenKey)
	m.Write(body)
	if !hmac.Equal(mac, m.Sum(nil)[:tokenMACLen]) {
		return linkToken{}, false
	}
	var acct, msg uuid.UUID
	copy(acct[:], body[1:17])
	copy(msg[:], body[17:33])
	return linkToken{kind: kind, accountID: acct.String(), messageID: msg.String(),
		index: int(binary.BigEndian.Uint16(body[33:35]))}, true
}
