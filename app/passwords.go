package app

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Password rules: at least MinPasswordLen characters; at most
// MaxPasswordBytes bytes, so that hashing stays cheap for what a form can
// carry.
const (
	MinPasswordLen   = 12
	MaxPasswordBytes = 1024
)

// argon2id parameters: the second set recommended by OWASP's password
// storage cheat sheet (19 MiB, 2 passes, 1 lane; RFC 9106 §4 allows
// trading memory for passes). They are written into every hash, so
// raising them later leaves older hashes checkable.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// checkPasswordRules validates a new password (400 VALIDATION_ERROR naming
// field).
func checkPasswordRules(field, pw string) error {
	switch {
	case len(pw) > MaxPasswordBytes:
		return Validation(field, fmt.Sprintf("must be at most %d bytes", MaxPasswordBytes))
	case !utf8.ValidString(pw):
		return Validation(field, "must be UTF-8 text")
	case utf8.RuneCountInString(pw) < MinPasswordLen:
		return Validation(field, fmt.Sprintf("must be at least %d characters", MinPasswordLen))
	}
	return nil
}

// argonSlots bounds the argon2id computations running at once: each takes
// argonMemory KiB, and logins are open to anyone.
var argonSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// argonKey is argon2.IDKey in one of argonSlots.
func argonKey(pw, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	argonSlots <- struct{}{}
	defer func() { <-argonSlots }()
	return argon2.IDKey(pw, salt, time, memory, threads, keyLen)
}

// hashPassword is the PHC string of pw's argon2id hash with a new salt.
func hashPassword(pw string) string {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	key := argonKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		enc.EncodeToString(salt), enc.EncodeToString(key))
}

// dummyHash is checked against when there is no person, so that a wrong
// email costs the same time as a wrong password.
var dummyHash = hashPassword("no one has this password")

// checkPassword reports whether pw matches hash (a PHC argon2id string),
// comparing in constant time. A malformed hash matches nothing.
func checkPassword(hash, pw string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || len(pw) > MaxPasswordBytes {
		return false
	}
	var version int
	var memory, time uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &time, &threads); err != nil ||
		memory == 0 || memory > 1<<20 || time == 0 || time > 16 || threads == 0 {
		return false
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 64 {
		return false
	}
	got := argonKey([]byte(pw), salt, time, memory, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// NewSecretToken is a new random token (32 bytes, base64url), for the web
// layer's CSRF tokens of forms shown before a session exists.
func NewSecretToken() string { return randomToken() }

// randomToken is 32 random bytes in base64url: session ids, CSRF tokens
// and password links.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
