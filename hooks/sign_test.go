package hooks

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

type vector struct {
	Secret, PreviousSecret, Body string
	Timestamp                    int64
	Signature, PreviousSignature string
	Header, HeaderDuringRotation string
}

func loadVector(t *testing.T) vector {
	t.Helper()
	data, err := os.ReadFile("../testdata/webhooks/signature.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	json.Unmarshal(data, &raw)
	return vector{Secret: raw["secret"].(string), PreviousSecret: raw["previous_secret"].(string), Body: raw["body"].(string),
		Timestamp: int64(raw["timestamp"].(float64)), Signature: raw["signature"].(string),
		PreviousSignature: raw["previous_signature"].(string), Header: raw["header"].(string),
		HeaderDuringRotation: raw["header_during_rotation"].(string)}
}

func TestSignatureVector(t *testing.T) {
	v := loadVector(t)
	key, _ := DecodeSecret(v.Secret)
	old, _ := DecodeSecret(v.PreviousSecret)
	if got := Signature([]byte(v.Body), v.Timestamp, key); got != v.Header {
		t.Fatalf("Signature = %s\nwant        %s", got, v.Header)
	}
	if got := Signature([]byte(v.Body), v.Timestamp, key, old); got != v.HeaderDuringRotation {
		t.Fatalf("rotation header = %s\nwant             %s", got, v.HeaderDuringRotation)
	}
}

func TestVerify(t *testing.T) {
	v := loadVector(t)
	now := time.Unix(v.Timestamp, 0)
	body := []byte(v.Body)
	cases := []struct {
		name    string
		body    []byte
		header  string
		secrets []string
		now     time.Time
		want    error
	}{
		{"current secret", body, v.Header, []string{v.Secret}, now, nil},
		{"old secret during rotation", body, v.HeaderDuringRotation, []string{v.PreviousSecret}, now, nil},
		{"either secret held", body, v.HeaderDuringRotation, []string{"AAAA", v.Secret}, now, nil},
		{"299 s late", body, v.Header, []string{v.Secret}, now.Add(299 * time.Second), nil},
		{"301 s late", body, v.Header, []string{v.Secret}, now.Add(301 * time.Second), ErrStale},
		{"301 s early", body, v.Header, []string{v.Secret}, now.Add(-301 * time.Second), ErrStale},
		{"body changed", append([]byte(" "), body...), v.Header, []string{v.Secret}, now, ErrBadSignature},
		{"wrong secret", body, v.Header, []string{v.PreviousSecret}, now, ErrBadSignature},
		{"no v1", body, "t=1795320000", []string{v.Secret}, now, ErrNoSignature},
		{"no t", body, "v1=" + v.Signature, []string{v.Secret}, now, ErrNoSignature},
		{"garbage", body, "nonsense", []string{v.Secret}, now, ErrNoSignature},
	}
	for _, c := range cases {
		if err := Verify(c.body, c.header, c.secrets, c.now, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestClassifyAndBackoff(t *testing.T) {
	for status, want := range map[int]Outcome{
		0: Retry, 200: Delivered, 204: Delivered, 299: Delivered, 301: Fail, 302: Fail, 400: Fail, 401: Fail,
		404: Fail, 408: Retry, 410: Fail, 429: Retry, 500: Retry, 502: Retry, 503: Retry,
	} {
		if got := Classify(status); got != want {
			t.Errorf("Classify(%d) = %v, want %v", status, got, want)
		}
	}
	base, maxDelay := 30*time.Second, time.Hour
	for n, want := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute} {
		if got := Backoff(n, base, maxDelay); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
	if got := Backoff(20, base, maxDelay); got != time.Hour {
		t.Errorf("Backoff is not capped: %v", got)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		status int
		header string
		want   time.Duration
		ok     bool
	}{
		{429, "120", 2 * time.Minute, true},
		{429, " 0 ", 0, true},
		{429, "0007", 7 * time.Second, true},
		{503, "Sun, 22 Nov 2026 12:05:00 GMT", 5 * time.Minute, true},
		{500, "120", 0, false},
		{429, "", 0, false},
		{429, "soon", 0, false},
		// delay-seconds is 1*DIGIT (RFC 9110 §10.2.3): no sign, no fraction.
		{429, "-5", 0, false},
		{429, "+5", 0, false},
		{429, "-0", 0, false},
		{429, "1.5", 0, false},
		{429, "5s", 0, false},
		{429, "0x10", 0, false},
		{429, "1 2", 0, false},
		// Longer than the longest wait: that wait, never a wrapped one.
		{429, "3600", time.Hour, true},
		{429, "3601", time.Hour, true},
		{503, "9300000000", time.Hour, true},             // × time.Second overflows int64
		{503, "18446744074", time.Hour, true},            // × time.Second wraps uint64
		{503, strings.Repeat("9", 400), time.Hour, true}, // more digits than any integer
		// An HTTP date: already past is a retry at once; far off, the longest wait.
		{503, "Sun, 22 Nov 2026 11:00:00 GMT", 0, true},
		{503, "Mon, 01 Jan 0001 00:00:00 GMT", 0, true},
		{503, "Fri, 31 Dec 9999 23:59:59 GMT", time.Hour, true},
		{503, "Sunday, 22-Nov-26 12:00:30 GMT", 30 * time.Second, true}, // RFC 850, obsolete but allowed
	} {
		got, ok := RetryAfter(c.status, c.header, now, time.Hour)
		if got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%d, %q) = %v %v", c.status, c.header, got, ok)
		}
	}
}
