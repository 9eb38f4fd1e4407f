package mailbolt

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is a scripted server: each request gets the next answer.
type fake struct {
	mu      sync.Mutex
	answers []fakeAnswer
	reqs    []*http.Request
	bodies  []string
}

type fakeAnswer struct {
	status int
	header map[string]string
	body   string
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := io.ReadAll(r.Body)
	f.reqs = append(f.reqs, r)
	f.bodies = append(f.bodies, string(b))
	a := fakeAnswer{status: 500, body: `{"error":{"code":"INTERNAL_ERROR","message":"script ran out"}}`}
	if len(f.answers) > 0 {
		a, f.answers = f.answers[0], f.answers[1:]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", len(f.reqs)))
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func newFake(t *testing.T, answers ...fakeAnswer) (*fake, *Client) {
	t.Helper()
	f := &fake{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL + "/v1/", APIKey: "svc_test_x", RetryBaseDelay: time.Millisecond, RetryMaxDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

const accepted = `{"id":"m1","status":"queued","message_id_header":"<m1@example.com>","created_at":"2026-11-22T12:00:00Z"}`

func errAnswer(status int, code string, hdr map[string]string) fakeAnswer {
	return fakeAnswer{status: status, header: hdr, body: fmt.Sprintf(`{"error":{"code":%q,"message":"m","details":{"field":"f"}}}`, code)}
}

func TestTransientRetriedWithOneIdempotencyKey(t *testing.T) {
	for _, a := range []fakeAnswer{
		errAnswer(429, "RATE_LIMIT_EXCEEDED", map[string]string{"Retry-After": "0"}),
		errAnswer(503, "SERVICE_UNAVAILABLE", nil),
		errAnswer(504, "GATEWAY_TIMEOUT", nil),
	} {
		f, c := newFake(t, a, a, fakeAnswer{status: 202, body: accepted, header: map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "7", "X-RateLimit-Reset": "1795320001"}})
		m, err := c.Messages.Send(context.Background(), &SendMessageRequest{From: "a@example.com", To: []string{"b@example.net"}, Subject: "s", Text: "t"})
		if err != nil {
			t.Fatalf("%d: %v", a.status, err)
		}
		if m.ID != "m1" || m.Attempts != 3 || len(f.reqs) != 3 {
			t.Fatalf("%d: id %q after %d attempts (%d requests)", a.status, m.ID, m.Attempts, len(f.reqs))
		}
		key := f.reqs[0].Header.Get("Idempotency-Key")
		if len(key) != 36 {
			t.Fatalf("generated Idempotency-Key %q", key)
		}
		for i, r := range f.reqs {
			if r.Header.Get("Idempotency-Key") != key || f.bodies[i] != f.bodies[0] {
				t.Fatalf("attempt %d sent key %q body %q; the first %q %q", i, r.Header.Get("Idempotency-Key"), f.bodies[i], key, f.bodies[0])
			}
		}
		if m.RateLimit.Limit != 10 || m.RateLimit.Remaining != 7 || m.RateLimit.Reset.Unix() != 1795320001 || m.RequestID != "req-3" {
			t.Fatalf("response meta %+v", m.Response)
		}
	}
}

func TestNonTransientNotRetried(t *testing.T) {
	for _, a := range []fakeAnswer{
		errAnswer(500, "INTERNAL_ERROR", nil),
		errAnswer(409, "IDEMPOTENCY_CONFLICT", nil),
		errAnswer(422, "DOMAIN_NOT_VERIFIED", nil),
		errAnswer(429, "QUOTA_EXCEEDED", map[string]string{"Retry-After": "0"}),
		errAnswer(400, "VALIDATION_ERROR", nil),
	} {
		f, c := newFake(t, a, fakeAnswer{status: 202, body: accepted})
		_, err := c.Messages.Send(context.Background(), &SendMessageRequest{From: "a@example.com", To: []string{"b@example.net"}}, WithIdempotencyKey("k-1"))
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%d: error %v is not an *Error", a.status, err)
		}
		if len(f.reqs) != 1 {
			t.Fatalf("%s was sent %d times", e.Code, len(f.reqs))
		}
		if e.StatusCode != a.status || e.Code == "" || e.Message != "m" || e.Details["field"] != "f" || e.RequestID != "req-1" {
			t.Fatalf("error %+v", e)
		}
		if f.reqs[0].Header.Get("Idempotency-Key") != "k-1" {
			t.Fatalf("caller's key not sent: %q", f.reqs[0].Header.Get("Idempotency-Key"))
		}
	}
}

func TestRetriesExhausted(t *testing.T) {
	a := errAnswer(503, "SERVICE_UNAVAILABLE", map[string]string{"Retry-After": "0"})
	f, c := newFake(t, a, a, a, a, a, a)
	_, err := c.Account.Get(context.Background())
	if ErrorCode(err) != "SERVICE_UNAVAILABLE" || len(f.reqs) != 1+DefaultMaxRetries {
		t.Fatalf("err %v after %d requests", err, len(f.reqs))
	}
	f, c = newFake(t, a, a)
	c.maxRetries = 0
	if _, err := c.Account.Get(context.Background()); err == nil || len(f.reqs) != 1 {
		t.Fatalf("retries off: err %v after %d requests", err, len(f.reqs))
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	var slept []time.Duration
	f, c := newFake(t, errAnswer(429, "RATE_LIMIT_EXCEEDED", map[string]string{"Retry-After": "2"}), fakeAnswer{status: 200, body: `{"id":"a"}`})
	c.maxDelay = time.Minute
	c.sleep = func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	if _, err := c.Account.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(slept) != 1 || slept[0] < 2*time.Second || slept[0] > 3*time.Second || len(f.reqs) != 2 {
		t.Fatalf("slept %v", slept)
	}
	// without Retry-After: exponential, growing
	c2 := *c
	slept = nil
	c2.baseDelay = 100 * time.Millisecond
	for i := range 4 {
		slept = append(slept, c2.backoff(i, 0))
	}
	for i, d := range slept {
		lo, hi := (100*time.Millisecond<<i)/2, 100*time.Millisecond<<i
		if d < lo || d > hi {
			t.Fatalf("backoff %d = %v, want in [%v, %v]", i, d, lo, hi)
		}
	}
}

func TestRequestHeadersAndPaths(t *testing.T) {
	f, c := newFake(t, fakeAnswer{status: 204}, fakeAnswer{status: 200, body: `{"domain":"example.com","score":90,"grade":"A"}`})
	if _, err := c.Suppressions.Delete(context.Background(), "bob+x@example.com"); err != nil {
		t.Fatal(err)
	}
	r := f.reqs[0]
	if r.Method != "DELETE" || r.URL.EscapedPath() != "/v1/suppressions/bob+x@example.com" {
		t.Fatalf("%s %s", r.Method, r.URL.EscapedPath())
	}
	if r.Header.Get("User-Agent") != "mailbolt-go/0.1.0" || r.Header.Get("X-API-Key") != "svc_test_x" || r.Header.Get("Idempotency-Key") == "" {
		t.Fatalf("headers %v", r.Header)
	}
	g, err := c.Grader.Check(context.Background(), &GraderCheckRequest{Domain: "example.com"})
	if err != nil || g.Grade != "A" {
		t.Fatalf("%+v %v", g, err)
	}
	if f.reqs[1].Header.Get("X-API-Key") != "" {
		t.Fatal("the public check sent the API key")
	}
}

func TestPageModeFollowsLinks(t *testing.T) {
	f, c := newFake(t,
		fakeAnswer{status: 200, header: map[string]string{"Link": `</v1/suppressions?limit=1&page=2>; rel="next", </v1/suppressions?limit=1&page=1>; rel="first", </v1/suppressions?limit=1&page=2>; rel="last"`}, body: `{"data":[{"recipient":"a@x"}],"page":1,"limit":1,"total":2}`},
		fakeAnswer{status: 200, header: map[string]string{"Link": `</v1/suppressions?limit=1&page=1>; rel="prev", </v1/suppressions?limit=1&page=1>; rel="first", </v1/suppressions?limit=1&page=2>; rel="last"`}, body: `{"data":[{"recipient":"b@x"}],"page":2,"limit":1,"total":2}`},
	)
	var got []string
	for s, err := range c.Suppressions.All(context.Background(), &ListParams{Page: 1, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.Recipient)
	}
	if strings.Join(got, ",") != "a@x,b@x" || len(f.reqs) != 2 || f.reqs[1].URL.Query().Get("page") != "2" {
		t.Fatalf("got %v in %d requests", got, len(f.reqs))
	}
}

func TestIteratorYieldsError(t *testing.T) {
	_, c := newFake(t, errAnswer(403, "INSUFFICIENT_SCOPES", nil))
	n := 0
	for _, err := range c.Messages.All(context.Background(), nil) {
		n++
		if ErrorCode(err) != "INSUFFICIENT_SCOPES" {
			t.Fatalf("err %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("%d yields", n)
	}
}

func TestConfiguration(t *testing.T) {
	t.Setenv("MAILBOLT_API_KEY", "svc_live_env")
	t.Setenv("MAILBOLT_BASE_URL", "https://mail.example.com/v1")
	t.Setenv("MAILBOLT_CA_FILE", "")
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.apiKey != "svc_live_env" || c.baseURL != "https://mail.example.com" || c.maxRetries != DefaultMaxRetries {
		t.Fatalf("%q %q %d", c.apiKey, c.baseURL, c.maxRetries)
	}
	if v := c.http.Transport.(*http.Transport).TLSClientConfig.MinVersion; v != tls.VersionTLS12 {
		t.Fatalf("TLS minimum %x", v)
	}
	bad := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	t.Setenv("MAILBOLT_CA_FILE", bad)
	if _, err := New(Options{}); err == nil {
		t.Fatal("a CA file without a certificate was accepted")
	}
	if _, err := New(Options{BaseURL: "ftp://x"}); err == nil {
		t.Fatal("an ftp base URL was accepted")
	}
}

func TestCAFileTrusted(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || r.TLS.Version < tls.VersionTLS12 {
			t.Errorf("TLS %v", r.TLS)
		}
		io.WriteString(w, `{"id":"acc"}`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted handshake below is expected
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writePEM(t, ca, srv.Certificate().Raw)
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k", CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Account.Get(context.Background())
	if err != nil || a.ID != "acc" {
		t.Fatalf("%+v %v", a, err)
	}
	c2, _ := New(Options{BaseURL: srv.URL, APIKey: "k"})
	if _, err := c2.Account.Get(context.Background()); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
}

// A recipient's TLS session decodes into its typed model; absent, it is nil.
func TestRecipientTLSDecodes(t *testing.T) {
	var r MessageRecipient
	if err := json.Unmarshal([]byte(`{"email":"a@b.test","tls":true,"tls_details":{"version":"TLS 1.3","verified":true,"policy":"mta-sts"}}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.TLSDetails == nil || r.TLSDetails.Version != "TLS 1.3" || !r.TLSDetails.Verified || r.TLSDetails.Policy != "mta-sts" {
		t.Fatalf("%+v", r.TLSDetails)
	}
	r = MessageRecipient{}
	if err := json.Unmarshal([]byte(`{"email":"a@b.test","tls":false}`), &r); err != nil || r.TLSDetails != nil {
		t.Fatalf("%+v %v", r.TLSDetails, err)
	}
}
