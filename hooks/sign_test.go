package hooks

import (
	"encoding/json"
	"errors"
	"os"
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
		{503, "Sun, 22 Nov 2026 12:05:00 GMT", 5 * time.Minute, true},
		{500, "120", 0, false},
		{429, "", 0, false},
		{429, "soon", 0, false},
	} {
		got, ok := RetryAfter(c.status, c.header, now)
		if got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%d, %q) = %v %v", c.status, c.header, got, ok)
		}
	}
}
