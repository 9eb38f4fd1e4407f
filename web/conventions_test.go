package web

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/storage"
)

func TestUnversionedPathsAreRejected(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	// "/" is the dashboard's redirect (dashboard_test.go), the one
	// unversioned path besides /dashboard/, /healthz and /readyz.
	for _, p := range []string{"/account", "/v2/account", "/api/v1/account", "/dashboardx", "/index.html"} {
		r := e.do("GET", p, e.key, nil).want(t, 404, "NOT_FOUND")
		if !strings.Contains(r.json(t)["error"].(map[string]any)["message"].(string), "/v1") {
			t.Errorf("%s: message does not name /v1: %s", p, r.body)
		}
	}
	e.do("GET", "/v1/nope", e.key, nil).want(t, 404, "NOT_FOUND")
}

func TestMethodNotAllowed(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	r := e.do("DELETE", "/v1/account", e.key, nil).want(t, 405, "METHOD_NOT_ALLOWED")
	if r.Header.Get("Allow") != "GET" {
		t.Errorf("Allow = %q", r.Header.Get("Allow"))
	}
	r = e.do("PUT", "/v1/suppressions", e.key, "{}").want(t, 405)
	if allow := r.Header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow = %q", allow)
	}
}

func TestStrictJSON(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	cases := []struct {
		body, field string
	}{
		{`{"recipient":"a@b.test","colour":"red"}`, "colour"},
		{`{"recipient":42}`, "recipient"},
		{`{"recipient":"a@b.test","reason":["manual"]}`, "reason"},
		{`["a@b.test"]`, "body"},
		{`{"recipient":"a@b.test"`, "body"},
		{`{"recipient":"a@b.test"} {}`, "body"},
		{``, "body"},
		{`{"recipient": }`, "body"},
		{`{}`, "recipient"},
	}
	for _, c := range cases {
		r := e.do("POST", "/v1/suppressions", e.key, c.body).want(t, 400, "VALIDATION_ERROR")
		details, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
		if details["field"] != c.field {
			t.Errorf("%s: details %v, want field %q", c.body, details, c.field)
		}
	}
	e.do("POST", "/v1/api-keys", e.key, `{"name":"x","scopes":"*"}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/api-keys", e.key, `{"name":"x","expires_at":"tomorrow"}`).want(t, 400, "VALIDATION_ERROR")
}

func TestBodyTooLarge(t *testing.T) {
	e := newEnv(t, configWith(func(c *Config) { c.MaxBodyBytes = 1024 }))
	big := fmt.Sprintf(`{"recipient":"a@b.test","reason":"%s"}`, strings.Repeat("x", 2000))
	e.do("POST", "/v1/suppressions", e.key, big).want(t, 413, "BODY_TOO_LARGE")
	e.do("POST", "/v1/suppressions", e.key, big, "Idempotency-Key", "k1").want(t, 413, "BODY_TOO_LARGE")
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"a@b.test"}`).want(t, 201)
}

func TestDefaultBodyCapIs10MiB(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	big := `{"recipient":"a@b.test","reason":"` + strings.Repeat("x", 10<<20) + `"}`
	e.do("POST", "/v1/suppressions", e.key, big).want(t, 413, "BODY_TOO_LARGE")
}

func TestRequestID(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	r := e.do("GET", "/v1/account", e.key, nil, "X-Request-Id", "trace-123")
	if r.Header.Get("X-Request-Id") != "trace-123" {
		t.Errorf("caller's request id not kept: %q", r.Header.Get("X-Request-Id"))
	}
	r = e.do("GET", "/v1/account", e.key, nil, "X-Request-Id", "bad id\twith tabs")
	if id := r.Header.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") {
		t.Errorf("unsafe request id echoed: %q", id)
	}
}

func TestDeprecationHeaders(t *testing.T) {
	sunset := time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)
	e := newEnv(t, configWith(func(c *Config) { c.Deprecated, c.Sunset = true, sunset }))
	for _, r := range []reply{
		e.do("GET", "/v1/account", e.key, nil).want(t, 200),
		e.do("GET", "/v1/account", "", nil).want(t, 401),
		e.do("GET", "/v1/openapi.json", "", nil).want(t, 200),
	} {
		if r.Header.Get("Deprecation") != "true" {
			t.Errorf("Deprecation = %q", r.Header.Get("Deprecation"))
		}
		if r.Header.Get("Sunset") != "Wed, 30 Jun 2027 00:00:00 GMT" {
			t.Errorf("Sunset = %q", r.Header.Get("Sunset"))
		}
		if w := r.Header.Get("Warning"); !strings.HasPrefix(w, `299 - "`) || !strings.Contains(w, "deprecated") {
			t.Errorf("Warning = %q", w)
		}
	}
	e.clock.Add(sunset.Sub(e.clock.Now()))
	r := e.do("GET", "/v1/account", e.key, nil).want(t, 410, "VERSION_SUNSET")
	if r.Header.Get("Sunset") == "" {
		t.Error("410 without Sunset header")
	}
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"a@b.test"}`).want(t, 410, "VERSION_SUNSET")
}

func TestNoDeprecationHeadersByDefault(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	r := e.do("GET", "/v1/account", e.key, nil).want(t, 200)
	if r.Header.Get("Deprecation") != "" || r.Header.Get("Sunset") != "" {
		t.Error("deprecation headers on a current version")
	}
}

func TestRateLimitPerKey(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	_, key := e.account("small", "free", 0)
	for i := 1; i <= 10; i++ {
		r := e.do("GET", "/v1/account", key, nil).want(t, 200)
		if r.Header.Get("X-RateLimit-Limit") != "10" || r.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(10-i) {
			t.Fatalf("request %d: limit %s remaining %s", i, r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"))
		}
		if r.Header.Get("X-RateLimit-Reset") != fmt.Sprint(e.clock.Now().Unix()+1) {
			t.Fatalf("reset = %s", r.Header.Get("X-RateLimit-Reset"))
		}
	}
	r := e.do("GET", "/v1/account", key, nil).want(t, 429, "RATE_LIMIT_EXCEEDED")
	if r.Header.Get("Retry-After") != "1" || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("Retry-After %q remaining %q", r.Header.Get("Retry-After"), r.Header.Get("X-RateLimit-Remaining"))
	}
	// Another key is counted on its own.
	e.do("GET", "/v1/account", e.key, nil).want(t, 200)
	// The next second opens a new window.
	e.clock.Add(time.Second)
	e.do("GET", "/v1/account", key, nil).want(t, 200)
}

func TestRateLimitPerIPWithoutKey(t *testing.T) {
	e := newEnv(t, configWith(func(c *Config) { c.IPRateLimit = 3 }))
	for range 3 {
		e.do("GET", "/v1/openapi.json", "", nil).want(t, 200)
	}
	e.do("GET", "/v1/openapi.json", "", nil).want(t, 429, "RATE_LIMIT_EXCEEDED")
	// Bad keys are counted against the IP too, so guessing is throttled.
	e.do("GET", "/v1/account", "svc_live_guess", nil).want(t, 429)
	// A valid key has its own budget.
	e.do("GET", "/v1/account", e.key, nil).want(t, 200)
}

func TestAuthenticationCodes(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	exp := e.clock.Now().Add(time.Hour)
	expiring := e.newKey(e.acct.ID, nil, false, &exp)
	revokedKey := e.newKey(e.acct.ID, nil, false, nil)
	var revokedID string
	e.app.DB().View(func(tx *storage.Tx) error {
		keys, _, _ := tx.APIKeys(e.acct.ID, storage.ListOptions{Limit: 10})
		revokedID = keys[len(keys)-1].ID
		return nil
	})
	e.do("GET", "/v1/account", revokedKey, nil).want(t, 200)
	e.do("DELETE", "/v1/api-keys/"+revokedID, e.key, nil).want(t, 200)

	e.do("GET", "/v1/account", "", nil).want(t, 401, "UNAUTHORIZED")
	e.do("GET", "/v1/account", "Bearer something", nil).want(t, 401, "INVALID_API_KEY")
	e.do("GET", "/v1/account", "svc_live_"+strings.Repeat("a", 43), nil).want(t, 401, "INVALID_API_KEY")
	e.do("GET", "/v1/account", revokedKey, nil).want(t, 401, "INVALID_API_KEY")
	e.do("GET", "/v1/account", expiring, nil).want(t, 200)
	e.clock.Add(2 * time.Hour)
	e.do("GET", "/v1/account", expiring, nil).want(t, 401, "TOKEN_EXPIRED")

	// A key whose account id is not a UUID (a corrupted or foreign record).
	secret := "svc_live_" + strings.Repeat("Z", 43)
	err := e.app.DB().Update(func(tx *storage.Tx) error {
		return tx.InsertAPIKey(storage.APIKey{ID: "01900000-0000-7000-8000-000000000001", AccountID: "not-a-uuid",
			Name: "odd", Hash: hashOf(secret), Scopes: []string{"*"}, CreatedAt: e.clock.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/v1/account", secret, nil).want(t, 400, "INVALID_TENANT")
}

func TestScopes(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	readOnly := e.newKey(e.acct.ID, []string{"suppressions:read", "api_keys:write"}, false, nil)
	e.do("GET", "/v1/suppressions", readOnly, nil).want(t, 200)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/suppressions", `{"recipient":"a@b.test"}`},
		{"DELETE", "/v1/suppressions/a@b.test", ""},
		{"GET", "/v1/account", ""},
		{"GET", "/v1/api-keys", ""},
		{"GET", "/v1/team", ""},
		{"POST", "/v1/team/invite", `{"email":"a@b.test","role":"viewer"}`},
	} {
		r := e.do(c.method, c.path, readOnly, nilIfEmpty(c.body)).want(t, 403, "INSUFFICIENT_SCOPES")
		if r.json(t)["error"].(map[string]any)["details"].(map[string]any)["required_scope"] == nil {
			t.Errorf("%s %s: no required_scope", c.method, c.path)
		}
	}
	// No escalation: the key may only hand out what it holds.
	e.do("POST", "/v1/api-keys", readOnly, `{"name":"more","scopes":["suppressions:write"]}`).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("POST", "/v1/api-keys", readOnly, `{"name":"all","scopes":["*"]}`).want(t, 403, "INSUFFICIENT_SCOPES")
	r := e.do("POST", "/v1/api-keys", readOnly, `{"name":"same"}`).want(t, 201)
	if got := r.json(t)["scopes"].([]any); len(got) != 2 {
		t.Errorf("default scopes = %v, want the creator's", got)
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestCrossTenantIsNotFound(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	_, other := e.account("other", "enterprise", 100000)
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"shared@b.test"}`).want(t, 201)
	created := e.do("POST", "/v1/api-keys", e.key, `{"name":"mine"}`).want(t, 201).json(t)
	e.do("POST", "/v1/team/invite", e.key, `{"email":"dev@b.test","role":"admin"}`).want(t, 201)

	e.do("DELETE", "/v1/api-keys/"+created["id"].(string), other, nil).want(t, 404, "NOT_FOUND")
	e.do("DELETE", "/v1/suppressions/shared@b.test", other, nil).want(t, 404, "NOT_FOUND")
	for _, p := range []string{"/v1/suppressions", "/v1/team"} {
		if got := e.do("GET", p, other, nil).want(t, 200).json(t)["data"].([]any); len(got) != 0 {
			t.Errorf("%s leaks: %v", p, got)
		}
	}
	keys := e.do("GET", "/v1/api-keys", other, nil).want(t, 200).json(t)["data"].([]any)
	if len(keys) != 1 {
		t.Errorf("other sees %d keys", len(keys))
	}
	// The key still works for its owner.
	e.do("GET", "/v1/account", created["key"].(string), nil).want(t, 200)
	// Idempotency keys are per API key: the same key string from another
	// tenant runs its own request.
	a := e.do("POST", "/v1/suppressions", e.key, `{"recipient":"x@b.test"}`, "Idempotency-Key", "same").want(t, 201)
	b := e.do("POST", "/v1/suppressions", other, `{"recipient":"x@b.test"}`, "Idempotency-Key", "same").want(t, 201)
	if b.Header.Get("Idempotent-Replayed") != "" || a.Header.Get("Idempotent-Replayed") != "" {
		t.Error("replayed across tenants")
	}
}

func TestStrictJSONFieldNamesAndTimes(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	for body, field := range map[string]string{
		`{"Recipient":"a@b.test"}`:                        "Recipient",
		`{"recipient":"a@b.test","recipient":"c@d.test"}`: "recipient",
		`{"name":"x","expires_at":"tomorrow"}`:            "expires_at",
		`{"name":"x","scopes":[1]}`:                       "scopes[0]", // an item by its index
	} {
		path := "/v1/suppressions"
		if strings.Contains(body, "name") {
			path = "/v1/api-keys"
		}
		r := e.do("POST", path, e.key, body).want(t, 400, "VALIDATION_ERROR")
		if got := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"]; got != field {
			t.Errorf("%s: field %v, want %s", body, got, field)
		}
	}
}

func TestAccessLog(t *testing.T) {
	var buf syncLog
	e := newEnv(t, configWith(func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) }))
	r := e.do("GET", "/v1/account", e.key, nil, "X-Request-Id", "log-test-1").want(t, 200)
	_ = r
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(l, "log-test-1") {
			json.Unmarshal([]byte(l), &line)
		}
	}
	if line["msg"] != "request" || line["method"] != "GET" || line["route"] != "/v1/account" || line["status"] != 200.0 ||
		line["account"] != e.acct.ID || line["duration_ms"] == nil {
		t.Fatalf("access log line %v in:\n%s", line, buf.String())
	}
	if strings.Contains(buf.String(), e.key) {
		t.Fatal("the API key was logged")
	}
}

// syncLog is a log sink safe for concurrent writes.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLog) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncLog) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
