package web

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/grader"
	"mailbolt/mta/dns"
)

// newGraderEnv is a test server whose grader resolves names through the
// env's loopback DNS server, which holds one well-configured domain,
// good.test (MX, SPF, DMARC p=reject). Blocklists are off: the loopback
// server would be asked about them.
func newGraderEnv(t *testing.T, cfg Config, tune func(*app.Options)) *env {
	t.Helper()
	if cfg.IPRateLimit == 0 {
		cfg.IPRateLimit = 100000
	}
	e := newEnvWith(t, cfg, func(o *app.Options) {
		// newEnvWith points the domain resolver at its zone; the grader
		// uses the same server.
		o.Grader.Config = grader.Config{
			Resolver:     &dns.Resolver{Server: o.Domains.Resolver.(*dns.Resolver).Server, Timeout: time.Second},
			IPBlocklists: []string{}, DomainBlocklists: []string{}}
		o.Grader.CacheTTL = time.Minute
		if tune != nil {
			tune(o)
		}
	})
	e.zone.MX("good.test", 10, "mx.good.test")
	e.zone.A("mx.good.test", "127.0.0.1")
	e.zone.TXT("good.test", "v=spf1 ip4:127.0.0.1 -all")
	e.zone.TXT("_dmarc.good.test", "v=DMARC1; p=reject; rua=mailto:dmarc@good.test")
	return e
}

func goodSubmission() map[string]any {
	return map[string]any{
		"from":      "News <news@good.test>",
		"to":        []string{"someone@example.test"},
		"subject":   "Your November newsletter",
		"body_text": strings.Repeat("Here is what happened this month at Good. ", 10),
		"headers":   map[string]string{"List-Unsubscribe": "<https://good.test/u/1>"},
		"mail_from": "bounce@good.test",
	}
}

// doHost is e.do with the request's Host set (the Go client ignores a
// "Host" header field).
func (e *env) doHost(host, method, path, key string, body any, headers ...string) reply {
	e.t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			e.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = host
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-API-Key", key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		e.t.Fatal(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	checkOpenAPI(e.t, req, resp, data)
	return reply{resp, data}
}

func TestGraderCheckPublic(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), nil)
	m := e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}).want(t, 200).json(t)
	if m["domain"] != "good.test" {
		t.Errorf("domain = %v", m["domain"])
	}
	score, _ := m["score"].(float64)
	if score < 0 || score > 100 || score != float64(int(score)) {
		t.Errorf("score = %v", m["score"])
	}
	if g, _ := m["grade"].(string); !strings.Contains("ABCDF", g) || len(g) != 1 {
		t.Errorf("grade = %v", m["grade"])
	}
	bd, _ := m["breakdown"].(map[string]any)
	for _, k := range []string{"dns_health", "authentication", "spam_likelihood", "content_quality", "reputation"} {
		if _, ok := bd[k].(map[string]any); !ok {
			t.Errorf("breakdown has no %s: %v", k, bd)
		}
	}
	if cq, _ := bd["content_quality"].(map[string]any); cq["score"] != 0.0 || cq["max"] != 0.0 {
		t.Errorf("domain-only content_quality = %v, want {0, 0}", cq)
	}
	if _, ok := m["authentication_results"]; ok {
		t.Error("a domain check has authentication_results")
	}
	// A well-configured domain does not score like a missing one.
	bad := e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "nothing.test"}).want(t, 200).json(t)
	if bs, _ := bad["score"].(float64); bs >= score {
		t.Errorf("nothing.test scored %v, good.test %v", bs, score)
	}
	// A key is accepted but not needed; selectors are optional.
	e.do("POST", "/v1/grader/check", e.key, map[string]any{"domain": "good.test", "selectors": []string{"s1"}}).want(t, 200)
}

func TestGraderCheckRateLimited(t *testing.T) {
	e := newGraderEnv(t, configWith(func(c *Config) { c.GraderRateLimit = 2 }), nil)
	e.clock.Add(47*time.Minute + 38*time.Second) // not on the hour
	for i := 0; i < 2; i++ {
		e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}).want(t, 200)
	}
	r := e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}).want(t, 429, "RATE_LIMITED")
	// An hour after the first check, not until the clock's hour ends (742 s).
	if ra := r.Header.Get("Retry-After"); ra != "3600" {
		t.Errorf("Retry-After = %q, want 3600", ra)
	}
	// Authenticated routes are not limited by the public check's budget.
	e.do("GET", "/v1/grader/history", e.key, nil).want(t, 200)
	// The window passes.
	e.clock.Add(time.Hour)
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}).want(t, 200)
}

// The public check's limit is a sliding window: GRADER_RATE_LIMIT checks
// in any GRADER_RATE_WINDOW, across the clock's windows too, and
// Retry-After is the time until the oldest counted check leaves it.
func TestGraderCheckRateLimitSlides(t *testing.T) {
	e := newGraderEnv(t, configWith(func(c *Config) { c.GraderRateLimit, c.GraderRateWindow = 3, 10*time.Second }), nil)
	check := func() reply { return e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}) }
	e.clock.Add(9*time.Second + 500*time.Millisecond) // half a second before the clock's 10 s window ends
	for range 3 {
		check().want(t, 200)
	}
	e.clock.Add(600 * time.Millisecond) // the clock's next window
	if ra := check().want(t, 429, "RATE_LIMITED").Header.Get("Retry-After"); ra != "10" {
		t.Errorf("Retry-After = %q, want 10 (9.4 s rounded up)", ra)
	}
	e.clock.Add(9300 * time.Millisecond)
	if ra := check().want(t, 429, "RATE_LIMITED").Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1 (0.1 s rounded up)", ra)
	}
	e.clock.Add(100 * time.Millisecond) // 10 s after the first three
	for range 3 {
		check().want(t, 200)
	}
	check().want(t, 429, "RATE_LIMITED")
}

func TestGraderForwardedFor(t *testing.T) {
	// Untrusted: X-Forwarded-For does not buy a fresh budget.
	e := newGraderEnv(t, configWith(func(c *Config) { c.GraderRateLimit = 1 }), nil)
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "192.0.2.1").want(t, 200)
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "192.0.2.2").want(t, 429, "RATE_LIMITED")
	// Trusted: each forwarded address has its own budget.
	e = newGraderEnv(t, configWith(func(c *Config) { c.GraderRateLimit, c.TrustForwardedFor = 1, true }), nil)
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "192.0.2.1").want(t, 200)
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "192.0.2.2, 10.0.0.1").want(t, 200)
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "192.0.2.1").want(t, 429, "RATE_LIMITED")
	// IPv6 is counted by /64: another address of the same /64 buys no
	// fresh budget, one of another /64 has its own.
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "2001:db8:1:2::1").want(t, 200)
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "2001:db8:1:2:ffff::9").want(t, 429, "RATE_LIMITED")
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", "2001:db8:1:3::1").want(t, 200)
}

func TestGraderInvalidInput(t *testing.T) {
	e := newGraderEnv(t, configWith(func(c *Config) { c.GraderRateLimit = 100 }), nil)
	// Each names the field at fault and says why (docs/errors.md).
	for _, c := range []struct{ path, body, field string }{
		{"check", `{"domain":`, "body"},
		{"check", `not json`, "body"},
		{"check", ``, "body"},
		{"check", `["good.test"]`, "body"},
		{"check", `{"domain":"good.test","colour":"red"}`, "colour"},
		{"check", `{"domain":42}`, "domain"},
		{"check", `{}`, "domain"},
		{"check", `{"domain":"  "}`, "domain"},
		{"check", `{"domain":"not a domain"}`, "domain"},
		{"check", `{"domain":"192.0.2.1"}`, "domain"},
		{"check", `{"domain":"good.test","selectors":["default","bad selector"]}`, "selectors[1]"},
		{"submit", `{"subject":`, "body"},
		{"submit", `{"subject":"hi","colour":"red"}`, "colour"},
		{"submit", `{}`, "from"},
		{"submit", `{"to":"a@b.test"}`, "from"},
		{"submit", `{"headers":{"X-A":1}}`, "headers.X-A"},
		{"submit", `{"from":"news@bad_domain","subject":"hi","body_text":"x"}`, "from"},
		{"submit", `{"from":"news@good.test","to":["a@b.test","nobody"],"subject":"hi","body_text":"x"}`, "to[1]"},
		{"submit", `{"from":"news@good.test","subject":"hi","body_text":"x","sender_ip":"192.0.2.300"}`, "sender_ip"},
		{"submit", `{"from":"news@good.test","subject":"hi","body_text":"x","sender_ip":"192.0.2.1","helo_hostname":"bad helo"}`, "helo_hostname"},
		{"submit", `{"from":"news@good.test","subject":"hi","body_text":"x","mail_from":"bounces@localhost"}`, "mail_from"},
		{"submit", `{"from":"news@good.test","subject":"hi","body_text":"x","headers":{"X-A":"b\r\nBcc: c@evil.test"}}`, "headers.X-A"},
	} {
		key := ""
		if c.path == "submit" {
			key = e.key
		}
		r := e.do("POST", "/v1/grader/"+c.path, key, c.body).want(t, 400, "INVALID_INPUT")
		if d := errDetails(t, r); d["field"] != c.field || d["reason"] == nil || d["reason"] == "" {
			t.Errorf("%s %s: details %v, want field %q and a reason", c.path, c.body, d, c.field)
		}
	}
	for _, subject := range []string{"Hello\r\nBcc: x@evil.test", "Hello\nthere", "Hello\rthere"} {
		s := goodSubmission()
		s["subject"] = subject
		r := e.do("POST", "/v1/grader/submit", e.key, s).want(t, 400, "INVALID_INPUT")
		if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["field"] != "subject" {
			t.Errorf("details = %v, want field subject", d)
		}
	}
	e.do("GET", "/v1/grader/history?page=0", e.key, nil).want(t, 400, "INVALID_INPUT")
	e.do("GET", "/v1/grader/history?per_page=x", e.key, nil).want(t, 400, "INVALID_INPUT")
	// Nothing was stored by the refused submissions.
	h := e.do("GET", "/v1/grader/history", e.key, nil).want(t, 200).json(t)
	if h["total"] != 0.0 {
		t.Errorf("total = %v after refused submissions", h["total"])
	}
}

// TestGraderRepeatedHeader: a header name given twice in a submission's
// headers, in any letter case, is refused naming it, with the reasons of
// POST /v1/messages (the same decoding) under the grader's code, not kept
// with one of its values lost. A check has no headers field at all.
func TestGraderRepeatedHeader(t *testing.T) {
	e := newGraderEnv(t, configWith(func(c *Config) { c.GraderRateLimit = 100 }), nil)
	for _, c := range []struct{ headers, field, reason string }{
		{`{"Subject":"a","subject":"b"}`, "headers.subject", "appears more than once (header names are case-insensitive)"},
		{`{"X-A":"1","X-A":"2"}`, "headers.X-A", "appears more than once"},
		{`{"List-Unsubscribe":"<https://good.test/u/1>","LIST-UNSUBSCRIBE":"<https://good.test/u/2>"}`,
			"headers.LIST-UNSUBSCRIBE", "appears more than once (header names are case-insensitive)"},
		{`{"X-A":null}`, "headers.X-A", "must not be null"},
	} {
		body := `{"from":"news@good.test","to":"someone@example.test","subject":"hi","body_text":"hello","headers":` + c.headers + `}`
		r := e.do("POST", "/v1/grader/submit", e.key, body).want(t, 400, "INVALID_INPUT")
		if d := errDetails(t, r); d["field"] != c.field || d["reason"] != c.reason {
			t.Errorf("%s: field %q reason %q, want %q %q", c.headers, d["field"], d["reason"], c.field, c.reason)
		}
	}
	e.do("POST", "/v1/grader/submit", e.key, `{"from":"news@good.test","subject":"hi","body_text":"hello",`+
		`"headers":{"X-A":"1","X-B":"2"}}`).want(t, 201)
	r := e.do("POST", "/v1/grader/check", "", `{"domain":"good.test","headers":{"Subject":"a","subject":"b"}}`).want(t, 400, "INVALID_INPUT")
	if d := errDetails(t, r); d["field"] != "headers" || d["reason"] != "unknown field" {
		t.Errorf("check with headers: details %v, want field headers, unknown field", d)
	}
	// Nothing was stored by the refused submissions.
	if h := e.do("GET", "/v1/grader/history", e.key, nil).want(t, 200).json(t); h["total"] != 1.0 {
		t.Errorf("total = %v, want 1 (the one accepted submission)", h["total"])
	}
}

// GRADER_MAX_BODY_SIZE caps the email's combined body (body_text and raw,
// in bytes of UTF-8), not the JSON request: the request itself is read
// under the general cap, as on every route. A check has no email body.
func TestGraderBodyTooLarge(t *testing.T) {
	e := newGraderEnv(t, configWith(func(c *Config) { c.GraderMaxBody, c.GraderRateLimit = 100, 100 }), nil)
	// A check whose JSON is over 100 bytes is read whole.
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test",
		"selectors": []string{"default", "google", "dkim", "selector1", "s2026", "mailbolt", "k1", "k2"}}).want(t, 200)
	r := e.do("POST", "/v1/grader/submit", e.key, goodSubmission()).want(t, 413, "BODY_TOO_LARGE")
	if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["limit"] != 100.0 || d["size"] != 420.0 {
		t.Errorf("details = %v, want limit 100, size 420", d)
	}
	for _, sub := range []map[string]any{
		{"from": "a@good.test", "subject": "hi", "body_text": strings.Repeat("b", 60), "raw": "Subject: hi\r\n\r\n" + strings.Repeat("r", 30)},
		{"raw": "From: a@good.test\r\nSubject: hi\r\n\r\n" + strings.Repeat("r", 80)},
	} {
		e.do("POST", "/v1/grader/submit", e.key, sub).want(t, 413, "BODY_TOO_LARGE")
	}
	e.do("POST", "/v1/grader/submit", e.key, map[string]any{"from": "a@good.test", "subject": strings.Repeat("s", 120),
		"body_text": strings.Repeat("b", 100)}).want(t, 201)

	// The defaults: 256 KB of body, whatever its JSON takes.
	e = newGraderEnv(t, DefaultConfig(), nil)
	submit := func(bodyJSON string) reply {
		return e.do("POST", "/v1/grader/submit", e.key, `{"from":"a@good.test","subject":"hi","body_text":"`+bodyJSON+`"}`)
	}
	submit(strings.Repeat("a", 262134)).want(t, 201)
	submit(strings.Repeat("a", 262144)).want(t, 201)
	submit(strings.Repeat(`\u00e9`, 50000)).want(t, 201) // 100 KB of body, 300 KB of JSON
	r = submit(strings.Repeat("a", 262145)).want(t, 413, "BODY_TOO_LARGE")
	if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["limit"] != 262144.0 {
		t.Errorf("details = %v, want limit 262144", d)
	}
	submit(strings.Repeat(`\u00e9`, 131073)).want(t, 413, "BODY_TOO_LARGE") // 262,146 bytes once decoded

	// Over the general cap, the request is not read, grader route or not.
	e = newGraderEnv(t, configWith(func(c *Config) { c.MaxBodyBytes, c.GraderRateLimit = 1000, 100 }), nil)
	for _, r := range []reply{
		e.do("POST", "/v1/grader/submit", e.key, map[string]any{"from": "a@good.test", "subject": strings.Repeat("s", 1000)}),
		e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test", "selectors": []string{strings.Repeat("s", 1000)}}),
	} {
		r.want(t, 413, "BODY_TOO_LARGE")
		if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["max_bytes"] != 1000.0 {
			t.Errorf("details = %v, want max_bytes 1000", d)
		}
	}
}

func TestGraderSubmitAndRead(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), nil)
	r := e.do("POST", "/v1/grader/submit", e.key, goodSubmission()).want(t, 201)
	m := r.json(t)
	id, _ := m["id"].(string)
	if id == "" {
		t.Fatalf("no id: %s", r.body)
	}
	if loc := r.Header.Get("Location"); loc != "/v1/grader/results/"+id {
		t.Errorf("Location = %q", loc)
	}
	if _, err := time.Parse(time.RFC3339, m["created_at"].(string)); err != nil {
		t.Errorf("created_at = %v", m["created_at"])
	}
	if m["domain"] != "good.test" || m["grade"] == nil || m["score"] == nil {
		t.Errorf("result = %s", r.body)
	}
	// Without sender_ip and helo_hostname, only DNS readiness is scored,
	// and a finding says so.
	says := false
	for _, f := range m["findings"].([]any) {
		msg := strings.ToLower(f.(map[string]any)["message"].(string))
		if strings.Contains(msg, "sender_ip") || strings.Contains(msg, "readiness") {
			says = true
		}
	}
	if !says {
		t.Errorf("no finding about the missing sender_ip/helo_hostname: %v", m["findings"])
	}

	got := e.do("GET", "/v1/grader/results/"+id, e.key, nil).want(t, 200).json(t)
	for _, k := range []string{"id", "created_at", "domain", "score", "grade", "breakdown", "findings", "recommendations"} {
		a, _ := json.Marshal(m[k])
		b, _ := json.Marshal(got[k])
		if !bytes.Equal(a, b) {
			t.Errorf("stored %s = %s, submit answered %s", k, b, a)
		}
	}
	e.do("GET", "/v1/grader/results/nope", e.key, nil).want(t, 404, "NOT_FOUND")

	// Another tenant sees neither the result nor the history entry.
	other, otherKey := e.account("other", "enterprise", 100000)
	_ = other
	e.do("GET", "/v1/grader/results/"+id, otherKey, nil).want(t, 404, "NOT_FOUND")
	oh := e.do("GET", "/v1/grader/history", otherKey, nil).want(t, 200).json(t)
	if oh["total"] != 0.0 || len(oh["data"].([]any)) != 0 {
		t.Errorf("other tenant's history = %v", oh)
	}

	// History, newest first.
	e.clock.Add(time.Second)
	s2 := goodSubmission()
	s2["from"] = "x@nothing.test"
	id2 := e.do("POST", "/v1/grader/submit", e.key, s2).want(t, 201).json(t)["id"].(string)
	h := e.do("GET", "/v1/grader/history", e.key, nil).want(t, 200).json(t)
	data := h["data"].([]any)
	if h["total"] != 2.0 || len(data) != 2 || h["page"] != 1.0 {
		t.Fatalf("history = %v", h)
	}
	first, second := data[0].(map[string]any), data[1].(map[string]any)
	if first["id"] != id2 || second["id"] != id || second["domain"] != "good.test" || second["grade"] != m["grade"] || second["score"] != m["score"] {
		t.Errorf("history = %v", data)
	}
	for q, want := range map[string]float64{"per_page=1000": 100, "per_page=0": 1, "per_page=-5": 1, "per_page=7": 7} {
		if got := e.do("GET", "/v1/grader/history?"+q, e.key, nil).want(t, 200).json(t)["per_page"]; got != want {
			t.Errorf("%s: per_page %v, want %v", q, got, want)
		}
	}
	p2 := e.do("GET", "/v1/grader/history?page=2&per_page=1", e.key, nil).want(t, 200).json(t)
	if d := p2["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != id || p2["total"] != 2.0 {
		t.Errorf("page 2 = %v", p2)
	}
}

func TestGraderSubmitAuthenticationResults(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), nil)
	s := goodSubmission()
	s["sender_ip"] = "127.0.0.1"
	s["helo_hostname"] = "mx.good.test"
	m := e.do("POST", "/v1/grader/submit", e.key, s).want(t, 201).json(t)
	ar, ok := m["authentication_results"].(map[string]any)
	if !ok {
		t.Fatalf("no authentication_results: %v", m)
	}
	spf, _ := ar["spf"].(map[string]any)
	if spf["result"] != "pass" || spf["domain"] != "good.test" {
		t.Errorf("spf = %v", spf)
	}
	dmarc, _ := ar["dmarc"].(map[string]any)
	if dmarc["spf_aligned"] != true || dmarc["policy"] != "reject" {
		t.Errorf("dmarc = %v", dmarc)
	}
	// The stored copy keeps them.
	got := e.do("GET", "/v1/grader/results/"+m["id"].(string), e.key, nil).want(t, 200).json(t)
	if _, ok := got["authentication_results"]; !ok {
		t.Errorf("stored result lost authentication_results: %v", got)
	}
}

func TestGraderScopes(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), nil)
	id := e.do("POST", "/v1/grader/submit", e.key, goodSubmission()).want(t, 201).json(t)["id"].(string)
	read := e.newKey(e.acct.ID, []string{"grader:read"}, false, nil)
	write := e.newKey(e.acct.ID, []string{"grader:write"}, false, nil)
	other := e.newKey(e.acct.ID, []string{"account:read"}, false, nil)

	r := e.do("POST", "/v1/grader/submit", read, goodSubmission()).want(t, 403, "INSUFFICIENT_SCOPE")
	if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["required_scope"] != "grader:write" {
		t.Errorf("details = %v", d)
	}
	e.do("GET", "/v1/grader/results/"+id, read, nil).want(t, 200)
	e.do("GET", "/v1/grader/history", read, nil).want(t, 200)

	e.do("POST", "/v1/grader/submit", write, goodSubmission()).want(t, 201)
	e.do("GET", "/v1/grader/results/"+id, write, nil).want(t, 403, "INSUFFICIENT_SCOPE")
	e.do("GET", "/v1/grader/history", write, nil).want(t, 403, "INSUFFICIENT_SCOPE")

	e.do("POST", "/v1/grader/submit", other, goodSubmission()).want(t, 403, "INSUFFICIENT_SCOPE")
	e.do("GET", "/v1/grader/history", other, nil).want(t, 403, "INSUFFICIENT_SCOPE")

	// No key or a bad key: 401, the public check excepted.
	e.do("POST", "/v1/grader/submit", "", goodSubmission()).want(t, 401, "UNAUTHORIZED")
	e.do("GET", "/v1/grader/history", "svc_live_nope", nil).want(t, 401)
	e.do("POST", "/v1/grader/check", other, map[string]any{"domain": "good.test"}).want(t, 200)
}

func TestGraderDisabled(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), func(o *app.Options) { o.Grader.Disabled = true })
	for _, key := range []string{e.key, ""} {
		e.do("POST", "/v1/grader/check", key, map[string]any{"domain": "good.test"}).want(t, 503, "GRADER_DISABLED")
		e.do("POST", "/v1/grader/submit", key, goodSubmission()).want(t, 503, "GRADER_DISABLED")
		e.do("GET", "/v1/grader/results/abc", key, nil).want(t, 503, "GRADER_DISABLED")
		e.do("GET", "/v1/grader/history", key, nil).want(t, 503, "GRADER_DISABLED")
	}
	// The rest of the API is unaffected.
	e.do("GET", "/v1/account", e.key, nil).want(t, 200)
}

func TestGraderAuthHostname(t *testing.T) {
	e := newGraderEnv(t, configWith(func(c *Config) { c.GraderAuthHostname = "grader.example" }), nil)
	// Requests for another host name (here 127.0.0.1:port) do not reach
	// the authenticated routes.
	e.do("POST", "/v1/grader/submit", e.key, goodSubmission()).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/grader/history", e.key, nil).want(t, 404, "NOT_FOUND")
	e.doHost("api.example", "GET", "/v1/grader/history", e.key, nil).want(t, 404, "NOT_FOUND")
	// Whatever the key holds: the host is checked before the scope, and a
	// 404 for the wrong host is not stored under an Idempotency-Key.
	reader := e.newKey(e.acct.ID, []string{app.ScopeMessagesRead}, false, nil)
	e.do("GET", "/v1/grader/history", reader, nil).want(t, 404, "NOT_FOUND")
	e.do("POST", "/v1/grader/submit", reader, "not JSON", "Idempotency-Key", "h1").want(t, 404, "NOT_FOUND")
	e.do("POST", "/v1/grader/submit", e.key, goodSubmission(), "Idempotency-Key", "h2").want(t, 404, "NOT_FOUND")
	e.doHost("grader.example", "POST", "/v1/grader/submit", e.key, goodSubmission(), "Idempotency-Key", "h2").want(t, 201)

	r := e.doHost("grader.example", "POST", "/v1/grader/submit", e.key, goodSubmission()).want(t, 201)
	id := r.json(t)["id"].(string)
	e.doHost("GRADER.example:443", "GET", "/v1/grader/results/"+id, e.key, nil).want(t, 200)
	e.doHost("grader.example", "GET", "/v1/grader/history", e.key, nil).want(t, 200)
	e.do("GET", "/v1/grader/results/"+id, e.key, nil).want(t, 404, "NOT_FOUND")
	// The public check answers on any host name.
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}).want(t, 200)
}

func TestGraderSubmitIdempotent(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), nil)
	a := e.do("POST", "/v1/grader/submit", e.key, goodSubmission(), "Idempotency-Key", "g1").want(t, 201)
	b := e.do("POST", "/v1/grader/submit", e.key, goodSubmission(), "Idempotency-Key", "g1").want(t, 201)
	if b.Header.Get("Idempotent-Replayed") != "true" || a.json(t)["id"] != b.json(t)["id"] {
		t.Errorf("replay: %s / %s", a.body, b.body)
	}
	s := goodSubmission()
	s["subject"] = "other"
	e.do("POST", "/v1/grader/submit", e.key, s, "Idempotency-Key", "g1").want(t, 409, "IDEMPOTENCY_CONFLICT")
	if h := e.do("GET", "/v1/grader/history", e.key, nil).want(t, 200).json(t); h["total"] != 1.0 {
		t.Errorf("total = %v, want 1", h["total"])
	}
}
