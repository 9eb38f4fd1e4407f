package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// cursorVersion is the first byte of every list cursor: its format.
const cursorVersion byte = 1

// cursorMACLen is how much of the HMAC-SHA256 a cursor carries: 96 bits.
// A cursor only says where a list continues, inside the caller's own
// account, so this guards against made-up and mixed-up cursors, not
// against a secret being guessed.
const cursorMACLen = 12

// cursorKey derives the key of the MAC in list cursors from the server
// secret: a key of its own, like the link tokens' and the return paths'.
func cursorKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mailbolt list cursors v1"))
	return m.Sum(nil)
}

func (a *App) cursorMAC(list string, after []byte) []byte {
	m := hmac.New(sha256.New, a.cursorKey)
	m.Write([]byte(list))
	m.Write([]byte{0})
	m.Write(after)
	return m.Sum(nil)[:cursorMACLen]
}

// SealCursor is the text of the cursor that continues the list named
// list (each list has its own name) after the storage key after:
// base64url(version, after, MAC), so a cursor cannot be made up or used
// with another list.
func (a *App) SealCursor(list string, after []byte) string {
	b := make([]byte, 0, 1+len(after)+cursorMACLen)
	b = append(b, cursorVersion)
	b = append(b, after...)
	b = append(b, a.cursorMAC(list, after)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// OpenCursor returns the storage key a cursor of list holds; ok is false
// for anything SealCursor did not make for that list (compared in
// constant time).
func (a *App) OpenCursor(list, cursor string) (after []byte, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) < 1+1+cursorMACLen || b[0] != cursorVersion {
		return nil, false
	}
	after, mac := b[1:len(b)-cursorMACLen], b[len(b)-cursorMACLen:]
	if !hmac.Equal(mac, a.cursorMAC(list, after)) {
		return nil, false
	}
	return after, true
}
