package queue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"strconv"
	"strings"

	"mailbolt/storage"
)

// ReturnPathLabel is the label of each sending domain's bounce subdomain,
// bounces.<domain>, whose CNAME points at this server: the envelope sender
// of its mail and the address of its unsubscribe mail.
const ReturnPathLabel = "bounces"

// ReturnPathMACLen is how much of the HMAC-SHA256 a bounce address
// carries: 120 bits, 24 base32 characters.
const ReturnPathMACLen = 15

// macEncoding is lowercase base32 without padding: a MAC in an address
// survives MTAs that change the case of a local part (RFC 5321 §2.4 lets
// them, and some do), and is compared case-insensitively.
var macEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// ReturnPath is the VERP envelope sender (RFC 5321 MAIL FROM) of recipient
// i of message m: b+<message id hex>.<i>.<MAC>@bounces.<domain>. Each
// recipient gets its own, so a DSN sent back to it can speak only for that
// recipient; the MAC (key: Options.ReturnPathKey) binds the message, the
// recipient index and the domain, so no one can make up an address for
// another recipient or message. Its local part is at most 62 octets for
// the 50 recipients a message may have (RFC 5321 §4.5.3.1.1: 64).
func ReturnPath(key []byte, m storage.Message, i int) string {
	return "b+" + strings.ReplaceAll(m.ID, "-", "") + "." + strconv.Itoa(i) + "." +
		ReturnPathMAC(key, m.ID, i, m.Domain) + "@" + ReturnPathLabel + "." + m.Domain
}

// ReturnPathMAC is the MAC of ReturnPath for message id (with or without
// its dashes, any case), recipient index i and sending domain (any case):
// lowercase base32. Compare it with hmac.Equal against the lowercased MAC
// of an address.
func ReturnPathMAC(key []byte, messageID string, i int, domain string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("mailbolt return path v1\x00"))
	m.Write([]byte(strings.ToLower(strings.ReplaceAll(messageID, "-", ""))))
	m.Write([]byte{0})
	m.Write([]byte(strconv.Itoa(i)))
	m.Write([]byte{0})
	m.Write([]byte(strings.ToLower(domain)))
	return macEncoding.EncodeToString(m.Sum(nil)[:ReturnPathMACLen])
}
