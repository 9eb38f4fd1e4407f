// Signing and verifying webhook requests (spec §6): an HMAC-SHA256 over
// "<t>.<body>" per valid secret, so a receiver holding either secret of a
// rotation can verify.

package hooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of a webhook request (spec §6).
const (
	HeaderSignature = "X-Service-Signature"
	HeaderTimestamp = "X-Service-Timestamp"
)

// DefaultTolerance is how far a signature's timestamp may be from the
// receiver's clock.
const DefaultTolerance = 300 * time.Second

// mac is HMAC-SHA256 over "<t>.<body>" keyed by key, hex-encoded.
func mac(key []byte, t int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strconv.FormatInt(t, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// DecodeSecret turns a webhook secret (standard Base64) into its key bytes.
func DecodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return nil, fmt.Errorf("webhook secret is not standard Base64: %w", err)
	}
	return key, nil
}

// Signature builds the X-Service-Signature value for body at time t: one
// v1 per key, so receivers holding any of the valid secrets can verify
// during a rotation.
func Signature(body []byte, t int64, keys ...[]byte) string {
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(t, 10))
	for _, k := range keys {
		b.WriteString(",v1=")
		b.WriteString(mac(k, t, body))
	}
	return b.String()
}

// Verification errors.
var (
	ErrNoSignature  = errors.New("webhook: missing or malformed signature header")
	ErrStale        = errors.New("webhook: timestamp outside the tolerance")
	ErrBadSignature = errors.New("webhook: no signature matches")
)

// Verify checks a webhook request as a receiver should: the header's
// timestamp within tolerance of now (either direction), and some v1 equal,
// in constant time, to the HMAC of the raw body under one of the secrets
// (standard Base64, as shown when the webhook was created or rotated). body
// must be the bytes received, unparsed.
func Verify(body []byte, header string, secrets []string, now time.Time, tolerance time.Duration) error {
	var t int64
	var sigs []string
	haveT := false
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return ErrNoSignature
			}
			t, haveT = n, true
		case "v1":
			sigs = append(sigs, v)
		}
	}
	if !haveT || len(sigs) == 0 {
		return ErrNoSignature
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.Unix(t, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	for _, secret := range secrets {
		key, err := DecodeSecret(secret)
		if err != nil {
			return err
		}
		want := []byte(mac(key, t, body))
		for _, s := range sigs {
			if hmac.Equal(want, []byte(s)) {
				return nil
			}
		}
	}
	return ErrBadSignature
}
