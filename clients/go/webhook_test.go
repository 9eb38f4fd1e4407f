package mailbolt

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

type vector struct {
	Secret               string `json:"secret"`
	PreviousSecret       string `json:"previous_secret"`
	Timestamp            int64  `json:"timestamp"`
	Body                 string `json:"body"`
	Signature            string `json:"signature"`
	PreviousSignature    string `json:"previous_signature"`
	Header               string `json:"header"`
	HeaderDuringRotation string `json:"header_during_rotation"`
}

func loadVector(t *testing.T) vector {
	t.Helper()
	path := os.Getenv("MAILBOLT_WEBHOOK_VECTOR")
	if path == "" {
		path = filepath.Join("..", "..", "testdata", "webhooks", "signature.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the test vector: %v", err)
	}
	var v vector
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyVector(t *testing.T) {
	v := loadVector(t)
	at := func(s int64) Verifier { return Verifier{Now: func() time.Time { return time.Unix(s, 0) }} }
	body := []byte(v.Body)

	cases := []struct {
		name    string
		body    []byte
		header  string
		now     int64
		secrets []string
		want    error
	}{
		{"valid", body, v.Header, v.Timestamp, []string{v.Secret}, nil},
		{"valid at the edge of the window", body, v.Header, v.Timestamp + 300, []string{v.Secret}, nil},
		{"valid with a clock behind", body, v.Header, v.Timestamp - 300, []string{v.Secret}, nil},
		{"tampered body", append(append([]byte{}, body...), ' '), v.Header, v.Timestamp, []string{v.Secret}, ErrInvalidSignature},
		{"stale timestamp", body, v.Header, v.Timestamp + 301, []string{v.Secret}, ErrStaleTimestamp},
		{"future timestamp", body, v.Header, v.Timestamp - 301, []string{v.Secret}, ErrStaleTimestamp},
		{"wrong secret", body, v.Header, v.Timestamp, []string{v.PreviousSecret}, ErrInvalidSignature},
		{"rotation header, new secret", body, v.HeaderDuringRotation, v.Timestamp, []string{v.Secret}, nil},
		{"rotation header, old secret", body, v.HeaderDuringRotation, v.Timestamp, []string{v.PreviousSecret}, nil},
		{"receiver holds both secrets", body, "t=1795320000,v1=" + v.PreviousSignature, v.Timestamp, []string{v.Secret, v.PreviousSecret}, nil},
		{"rotation, tampered body", []byte(v.Body + "x"), v.HeaderDuringRotation, v.Timestamp, []string{v.Secret, v.PreviousSecret}, ErrInvalidSignature},
		{"no v1", body, "t=1795320000", v.Timestamp, []string{v.Secret}, ErrMissingSignature},
		{"no t", body, "v1=" + v.Signature, v.Timestamp, []string{v.Secret}, ErrMissingSignature},
		{"empty header", body, "", v.Timestamp, []string{v.Secret}, ErrMissingSignature},
		{"unknown scheme ignored", body, v.Header + ",v0=abc", v.Timestamp, []string{v.Secret}, nil},
		{"no usable secret", body, v.Header, v.Timestamp, []string{"not base64!"}, ErrNoSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("X-Service-Signature", c.header)
			err := at(c.now).Verify(c.body, h, c.secrets...)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func TestVerifyTimestampHeader(t *testing.T) {
	v := loadVector(t)
	ver := Verifier{Now: func() time.Time { return time.Unix(v.Timestamp, 0) }}
	h := http.Header{}
	h.Set("X-Service-Signature", v.Header)
	h.Set("X-Service-Timestamp", "1795320000")
	if err := ver.Verify([]byte(v.Body), h, v.Secret); err != nil {
		t.Fatalf("matching timestamp header: %v", err)
	}
	h.Set("X-Service-Timestamp", "1795320001")
	if err := ver.Verify([]byte(v.Body), h, v.Secret); err == nil {
		t.Fatal("a timestamp header unequal to t was accepted")
	}
}

func TestVerifySystemClock(t *testing.T) {
	v := loadVector(t)
	// the vector is years from now or past: the real clock finds it stale
	h := http.Header{}
	h.Set("X-Service-Signature", v.Header)
	if d := time.Now().Unix() - v.Timestamp; d > 300 || d < -300 {
		if err := Verify([]byte(v.Body), h, v.Secret); !errors.Is(err, ErrStaleTimestamp) {
			t.Fatalf("Verify of the old vector with the system clock = %v", err)
		}
	}
	sig, err := Sign([]byte(v.Body), time.Now(), v.Secret)
	if err != nil {
		t.Fatal(err)
	}
	h.Set("X-Service-Signature", sig)
	if err := Verify([]byte(v.Body), h, v.Secret); err != nil {
		t.Fatalf("a fresh signature: %v", err)
	}
}

func TestSignMatchesVector(t *testing.T) {
	v := loadVector(t)
	sig, err := Sign([]byte(v.Body), time.Unix(v.Timestamp, 0), v.Secret)
	if err != nil || sig != v.Header {
		t.Fatalf("Sign = %q, %v; want %q", sig, err, v.Header)
	}
}
