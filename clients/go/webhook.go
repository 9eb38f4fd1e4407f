package mailbolt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Webhook signature headers (spec §6).
const (
	SignatureHeader = "X-Service-Signature"
	TimestampHeader = "X-Service-Timestamp"
)

// DefaultTolerance is the largest accepted distance between the signature's
// timestamp and the receiver's clock.
const DefaultTolerance = 300 * time.Second

// Verification errors. A receiver answers ErrStaleTimestamp with 400 and the
// others with 401.
var (
	ErrMissingSignature = errors.New("mailbolt: webhook signature header missing or malformed")
	ErrStaleTimestamp   = errors.New("mailbolt: webhook timestamp outside the tolerance")
	ErrInvalidSignature = errors.New("mailbolt: webhook signature does not match")
	ErrNoSecret         = errors.New("mailbolt: no usable webhook secret (Base64)")
)

// Verifier checks webhook signatures. The zero value uses the system clock
// and DefaultTolerance.
type Verifier struct {
	// Now is the receiver's clock; nil means time.Now.
	Now func() time.Time
	// Tolerance is the accepted clock distance; 0 means DefaultTolerance.
	Tolerance time.Duration
}

// Verify checks a webhook request with the system clock: body is the raw
// request body, headers its headers, secrets the webhook's secrets as shown
// by the API (Base64; two during a rotation). It returns nil when any v1
// value of the signature matches any secret.
func Verify(body []byte, headers http.Header, secrets ...string) error {
	return Verifier{}.Verify(body, headers, secrets...)
}

// Verify checks a webhook request as the package-level Verify, with v's clock.
func (v Verifier) Verify(body []byte, headers http.Header, secrets ...string) error {
	return v.VerifySignature(body, headers.Get(SignatureHeader), headers.Get(TimestampHeader), secrets...)
}

// VerifySignature checks the values of X-Service-Signature and (optional, ""
// to skip) X-Service-Timestamp.
func (v Verifier) VerifySignature(body []byte, signature, timestamp string, secrets ...string) error {
	var t string
	var sigs [][]byte
	for part := range strings.SplitSeq(signature, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			t = val
		case "v1":
			if d, err := hex.DecodeString(val); err == nil && len(d) == sha256.Size {
				sigs = append(sigs, d)
			}
		}
	}
	if t == "" || len(sigs) == 0 || strings.Trim(t, "0123456789") != "" {
		return ErrMissingSignature
	}
	if timestamp != "" && strings.TrimSpace(timestamp) != t {
		return ErrInvalidSignature
	}
	ts, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return ErrMissingSignature
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	diff := now().Unix() - ts
	if diff < 0 {
		diff = -diff
	}
	if time.Duration(diff)*time.Second > tol {
		return ErrStaleTimestamp
	}
	usable := false
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
		if err != nil || len(key) == 0 {
			continue
		}
		usable = true
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(t))
		mac.Write([]byte{'.'})
		mac.Write(body)
		want := mac.Sum(nil)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				return nil
			}
		}
	}
	if !usable {
		return ErrNoSecret
	}
	return ErrInvalidSignature
}

// Sign returns the X-Service-Signature value for body at time t under secret
// (Base64), as the server computes it: for tests of a receiver.
func Sign(body []byte, t time.Time, secret string) (string, error) {
	key, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return "", ErrNoSecret
	}
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil)), nil
}
