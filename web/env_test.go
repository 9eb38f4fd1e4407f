package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// testClock is the clock every test server runs on.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a real server on 127.0.0.1:0 over a real database (the bbolt
// file, or PostgreSQL with MAILBOLT_TEST_DATABASE=postgres), with one
// account ("acme", generous rate limit) and a key of scope "*".
type env struct {
	t     *testing.T
	app   *app.App
	srv   *httptest.Server
	clock *testClock
	zone  *dnstest.Server
	db    *storage.DB
	acct  storage.Account
	key   string
}

// appOptions are app.DefaultOptions on the clock now.
func appOptions(now func() time.Time) app.Options {
	o := app.DefaultOptions()
	o.Now = now
	return o
}

// configWith is DefaultConfig changed by tune.
func configWith(tune func(*Config)) Config {
	c := DefaultConfig()
	tune(&c)
	return c
}

// mustNew is New for tests.
func mustNew(t testing.TB, a *app.App, cfg Config) *Server {
	t.Helper()
	s, err := New(a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	return newEnvWith(t, cfg, nil)
}

// newEnvWith is newEnv with a chance to adjust the App's options. Webhooks
// may reach loopback receivers unless tune says otherwise.
func newEnvWith(t *testing.T, cfg Config, tune func(*app.Options)) *env {
	t.Helper()
	return newEnvOn(t, cfg, storagetest.Options(t), tune)
}

// newEnvOn is newEnvWith on a database opened with sopts (fault injection).
func newEnvOn(t *testing.T, cfg Config, sopts storage.Options, tune func(*app.Options)) *env {
	t.Helper()
	db, err := storage.Open(t.TempDir(), sopts)
	if err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	zone := dnstest.Start(t)
	opts := appOptions(clock.Now)
	opts.Domains.Resolver = &dns.Resolver{Server: zone.Addr, Timeout: 300 * time.Millisecond}
	opts.Domains.Hostname = "mx.mailbolt.test"
	dispatch := &opts.Webhooks.Dispatch
	dispatch.BaseDelay, dispatch.Timeout = time.Second, 2*time.Second
	dispatch.Guard = hooks.Guard{AllowPrivate: true, AllowHTTP: true}
	if tune != nil {
		tune(&opts)
	}
	a, err := app.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mustNew(t, a, cfg))
	t.Cleanup(func() {
		srv.Close()
		db.Close()
	})
	e := &env{t: t, app: a, srv: srv, clock: clock, zone: zone, db: db}
	e.acct, e.key = e.account("acme", "enterprise", 100000)
	return e
}

// runWorkers runs the App's background workers (webhook delivery among
// them) until the test ends.
func (e *env) runWorkers() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.app.Run(ctx); close(done) }()
	e.t.Cleanup(func() {
		cancel()
		<-done
		if n := e.app.Panics(); n != 0 {
			e.t.Errorf("%d worker panics", n)
		}
	})
}

// account creates an account and a key of scope "*" for it.
func (e *env) account(name, plan string, rate int) (storage.Account, string) {
	e.t.Helper()
	acct, ae := e.app.CreateAccount(app.AccountInput{Name: name, Plan: plan, RateLimit: rate})
	if ae != nil {
		e.t.Fatal(ae)
	}
	return acct, e.newKey(acct.ID, nil, false, nil)
}

func (e *env) newKey(accountID string, scopes []string, test bool, expires *time.Time) string {
	e.t.Helper()
	return issueKey(e.t, e.app, accountID, app.KeyInput{Name: "test key", Scopes: scopes, Mode: modeOf(test), ExpiresAt: expires}).Secret
}

// issueKey creates a key in the account as the operator does (the CLI's
// way), or fails the test.
func issueKey(t testing.TB, a *app.App, accountID string, in app.KeyInput) app.CreatedKey {
	t.Helper()
	op, ae := a.OperatorIn(accountID)
	if ae != nil {
		t.Fatal(ae)
	}
	k, ae := a.CreateKey(op, in)
	if ae != nil {
		t.Fatal(ae)
	}
	return k
}

func modeOf(test bool) string {
	if test {
		return app.ModeTest
	}
	return app.ModeLive
}

// reply is a response with its body read.
type reply struct {
	*http.Response
	body []byte
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// code is the error code of an error answer.
func (r reply) code(t testing.TB) string {
	t.Helper()
	errObj, _ := r.json(t)["error"].(map[string]any)
	code, _ := errObj["code"].(string)
	return code
}

// do sends a request and checks the answer against the OpenAPI document.
// body may be nil, a string (sent as is) or a value to encode as JSON.
// hdr holds header name/value pairs.
func (e *env) do(method, path, key string, body any, hdr ...string) reply {
	e.t.Helper()
	return doRequest(e.t, e.srv.URL, method, path, key, body, hdr...)
}

func doRequest(t testing.TB, base, method, path, key string, body any, hdr ...string) reply {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: no X-Request-Id", method, path)
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("%s %s: no %s", method, path, h)
		}
	}
	if resp.StatusCode >= 400 && !strings.Contains(string(data), `"code"`) {
		t.Errorf("%s %s: error %d without envelope: %s", method, path, resp.StatusCode, data)
	}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	checkOpenAPI(t, req, resp, data)
	return reply{resp, data}
}

// want fails the test unless the answer has the status (and error code).
func (r reply) want(t testing.TB, status int, code ...string) reply {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
	if len(code) > 0 && r.code(t) != code[0] {
		t.Fatalf("%s %s: code %q, want %q: %s", r.Request.Method, r.Request.URL.Path, r.code(t), code[0], r.body)
	}
	return r
}
