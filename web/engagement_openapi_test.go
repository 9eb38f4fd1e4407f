package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-message"

	"mailbolt/app"
	"mailbolt/mta"
	"mailbolt/storage"
)

// The engagement routes (open pixel, tracked links, unsubscribe) and the
// analytics summary, driven over HTTP with real tokens, every answer checked
// against the OpenAPI document: images, redirects and HTML pages included.

// captureSender is a delivery Sender that accepts every recipient and keeps
// what it was given.
type captureSender struct {
	mu   sync.Mutex
	envs []mta.Envelope
}

func (c *captureSender) Send(_ context.Context, env mta.Envelope) []mta.RecipientResult {
	c.mu.Lock()
	c.envs = append(c.envs, env)
	c.mu.Unlock()
	out := make([]mta.RecipientResult, len(env.To))
	for i, r := range env.To {
		out[i] = mta.RecipientResult{Recipient: r, Status: mta.StatusDelivered, Code: 250, Enhanced: "2.0.0", Text: "ok", Host: "mx.dest.test"}
	}
	return out
}

func (c *captureSender) sent() []mta.Envelope {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.envs)
}

var (
	openTokenRe  = regexp.MustCompile(`/v1/t/o/([A-Za-z0-9_-]+)`)
	clickTokenRe = regexp.MustCompile(`/v1/t/c/([A-Za-z0-9_-]+)`)
	unsubTokenRe = regexp.MustCompile(`/v1/u/([A-Za-z0-9_-]+)>`)
)

// htmlOf returns the decoded text/html part of a built message.
func htmlOf(t *testing.T, raw []byte) string {
	t.Helper()
	ent, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out string
	ent.Walk(func(_ []int, part *message.Entity, _ error) error {
		if ct, _, _ := part.Header.ContentType(); ct == "text/html" {
			b, _ := io.ReadAll(part.Body)
			out = string(b)
		}
		return nil
	})
	if out == "" {
		t.Fatalf("no HTML part in\n%s", raw)
	}
	return out
}

// public sends a request without a key and without following redirects,
// and checks the answer against the OpenAPI document.
func (e *env) public(method, path, contentType, body string, hdr ...string) reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		e.t.Fatal(err)
	}
	req.Body = io.NopCloser(strings.NewReader(body))
	checkOpenAPI(e.t, req, resp, data)
	return reply{resp, data}
}

// events lists the data of the events of one type, oldest first.
func (e *env) eventsOf(key, typ string) []map[string]any {
	e.t.Helper()
	var list struct {
		Data []struct {
			Data map[string]any `json:"data"`
		} `json:"data"`
	}
	r := e.do("GET", "/v1/events?limit=200&type="+typ, key, nil).want(e.t, 200)
	if err := json.Unmarshal(r.body, &list); err != nil {
		e.t.Fatal(err)
	}
	var out []map[string]any
	for i := len(list.Data) - 1; i >= 0; i-- {
		out = append(out, list.Data[i].Data)
	}
	return out
}

// verifiedDomain adds a domain and publishes its records, so live keys may
// send from it.
func (e *env) verifiedDomain(name string) {
	e.t.Helper()
	d := e.do("POST", "/v1/domains", e.key, `{"name":"`+name+`"}`).want(e.t, 201).json(e.t)
	dkim := record(e.t, d, "dkim", "")
	e.zone.LongTXT(dkim["name"].(string), joinTXT(dkim["value"].(string)))
	spf := record(e.t, d, "spf", "")
	e.zone.TXT(spf["name"].(string), spf["value"].(string))
	if v := e.do("POST", "/v1/domains/"+d["id"].(string)+"/verify", e.key, nil).want(e.t, 200).json(e.t); v["status"] != "verified" {
		e.t.Fatalf("domain not verified: %v", v)
	}
}

const (
	appleMailUA = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"
	formType    = "application/x-www-form-urlencoded"
	trackedHTML = `<p>Hi <a href="https://shop.test/a?x=1&amp;y=2">shop</a> <a href="https://shop.test/b" data-mb-notrack>raw</a></p></body>`
)

func TestEngagementRoutesAgainstOpenAPI(t *testing.T) {
	sink := &captureSender{}
	e := newEnvWith(t, configWith(func(c *Config) { c.IPRateLimit = 100000 }), func(o *app.Options) {
		o.PublicURL = "https://mail.acme.test"
		o.Delivery.Sender = sink
	})
	e.runWorkers()
	e.verifiedDomain("acme.test")

	// A live message to two recipients, both tracked: one copy per
	// recipient, each with its own List-Unsubscribe.
	sent := e.do("POST", "/v1/messages", e.key, map[string]any{
		"from": "news@acme.test", "to": []string{"ann@dest.test"}, "cc": []string{"bob@dest.test"},
		"subject": "November", "html": trackedHTML, "campaign_id": "nov", "stream": "broadcast",
		"tracking": map[string]bool{"opens": true, "clicks": true}}).want(t, 202).json(t)
	msgID := sent["id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for len(sink.sent()) < 2 || e.do("GET", "/v1/messages/"+msgID, e.key, nil).want(t, 200).json(t)["status"] != "delivered" {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %d copies sent", len(sink.sent()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	copies := sink.sent()
	if len(copies) != 2 || len(copies[0].To) != 1 || len(copies[1].To) != 1 {
		t.Fatalf("want one copy per recipient, got %d", len(copies))
	}
	unsub := map[string]string{}
	var html string
	for _, c := range copies {
		m, err := mail.ReadMessage(bytes.NewReader(c.Data))
		if err != nil {
			t.Fatal(err)
		}
		lu := m.Header.Get("List-Unsubscribe")
		tok := unsubTokenRe.FindStringSubmatch(lu)
		if tok == nil || !strings.Contains(lu, "<https://mail.acme.test/v1/u/") || !strings.Contains(lu, "<mailto:u+"+tok[1]+"@bounces.acme.test>") ||
			m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
			t.Fatalf("List-Unsubscribe %q, List-Unsubscribe-Post %q", lu, m.Header.Get("List-Unsubscribe-Post"))
		}
		unsub[c.To[0]] = tok[1]
		html = htmlOf(t, c.Data)
	}
	if len(unsub) != 2 || unsub["ann@dest.test"] == unsub["bob@dest.test"] {
		t.Fatalf("unsubscribe tokens %v", unsub)
	}
	open := openTokenRe.FindStringSubmatch(html)
	clicks := clickTokenRe.FindAllStringSubmatch(html, -1)
	if open == nil || len(clicks) != 1 || !strings.Contains(html, `href="https://shop.test/b" data-mb-notrack`) {
		t.Fatalf("tracked HTML:\n%s", html)
	}
	openTok, clickTok := open[1], clicks[0][1]
	tamper := func(tok string) string {
		b := []byte(tok)
		if b[10] == 'A' {
			b[10] = 'B'
		} else {
			b[10] = 'A'
		}
		return string(b)
	}

	// The pixel: always the image with no-cache headers; only a verified
	// token records an open.
	for _, path := range []string{openTok, openTok + ".gif", tamper(openTok), "garbage", clickTok} {
		r := e.public("GET", "/v1/t/o/"+path, "", "", "User-Agent", appleMailUA).want(t, 200)
		if r.Header.Get("Content-Type") != "image/gif" || !bytes.HasPrefix(r.body, []byte("GIF89a")) || len(r.body) != 43 ||
			!strings.Contains(r.Header.Get("Cache-Control"), "no-store") || r.Header.Get("Pragma") != "no-cache" {
			t.Fatalf("pixel %s: %v %q", path, r.Header, r.body)
		}
	}
	e.public("POST", "/v1/t/o/"+openTok, "", "").want(t, 405, "METHOD_NOT_ALLOWED")
	opens := e.eventsOf(e.key, app.EventOpened)
	if len(opens) != 2 || opens[0]["isFirstOpen"] != true || opens[1]["isFirstOpen"] != false || opens[1]["openCount"] != 2.0 ||
		opens[0]["to"] != "ann@dest.test" || opens[0]["messageId"] != msgID {
		t.Fatalf("opens %v", opens)
	}
	ctx := opens[0]["context"].(map[string]any)
	if ctx["device"] != "mobile" || ctx["os"] != "iOS" || ctx["client"] != "Apple Mail" || ctx["userAgent"] != appleMailUA ||
		ctx["ip"] != "127.0.0.1" || ctx["geo"].(map[string]any)["country"] != "" {
		t.Errorf("open context %v", ctx)
	}

	// Tracked links: a verified token redirects to the recorded URL; any
	// other token is 404 and records nothing.
	r := e.public("GET", "/v1/t/c/"+clickTok, "", "", "User-Agent", "curl/8.5.0").want(t, 302)
	if r.Header.Get("Location") != "https://shop.test/a?x=1&y=2" || !strings.Contains(r.Header.Get("Cache-Control"), "no-store") {
		t.Fatalf("redirect: %v", r.Header)
	}
	e.public("GET", "/v1/t/c/"+clickTok+"?u=https://evil.test/", "", "").want(t, 302)
	e.public("GET", "/v1/t/c/"+tamper(clickTok), "", "").want(t, 404, "NOT_FOUND")
	e.public("GET", "/v1/t/c/"+openTok, "", "").want(t, 404, "NOT_FOUND")
	e.public("GET", "/v1/t/c/"+unsub["ann@dest.test"], "", "").want(t, 404, "NOT_FOUND")
	e.public("DELETE", "/v1/t/c/"+clickTok, "", "").want(t, 405, "METHOD_NOT_ALLOWED")
	cl := e.eventsOf(e.key, app.EventClicked)
	if len(cl) != 2 || cl[0]["url"] != "https://shop.test/a?x=1&y=2" || cl[0]["linkId"] != app.LinkID("https://shop.test/a?x=1&y=2") ||
		cl[0]["isFirstClick"] != true || cl[1]["isFirstClick"] != false || cl[1]["clickCount"] != 2.0 {
		t.Fatalf("clicks %v", cl)
	}
	if c := cl[0]["context"].(map[string]any); c["device"] != "bot" {
		t.Errorf("click context %v", c)
	}

	// Unsubscribe: GET shows a page and changes nothing; POST unsubscribes
	// once, one-click or through the page's button.
	ann, bob := unsub["ann@dest.test"], unsub["bob@dest.test"]
	page := e.public("GET", "/v1/u/"+ann, "", "").want(t, 200)
	if !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(page.body), "ann@dest.test") ||
		!strings.Contains(string(page.body), `<form method="post">`) {
		t.Fatalf("page %v\n%s", page.Header, page.body)
	}
	if n := len(e.eventsOf(e.key, app.EventUnsubscribed)); n != 0 {
		t.Fatalf("GET unsubscribed: %d events", n)
	}
	done := e.public("POST", "/v1/u/"+ann, formType, "List-Unsubscribe=One-Click").want(t, 200)
	if !strings.Contains(string(done.body), "You are unsubscribed") {
		t.Fatalf("one-click answer:\n%s", done.body)
	}
	e.public("POST", "/v1/u/"+ann, formType, "List-Unsubscribe=One-Click").want(t, 200) // a repeat
	e.public("POST", "/v1/u/"+bob, formType, "confirm=1").want(t, 200)
	e.public("GET", "/v1/u/"+tamper(ann), "", "").want(t, 404, "NOT_FOUND")
	e.public("POST", "/v1/u/"+tamper(ann), formType, "List-Unsubscribe=One-Click").want(t, 404, "NOT_FOUND")
	e.public("POST", "/v1/u/"+clickTok, formType, "List-Unsubscribe=One-Click").want(t, 404, "NOT_FOUND")
	e.public("PUT", "/v1/u/"+ann, "", "").want(t, 405, "METHOD_NOT_ALLOWED")
	un := e.eventsOf(e.key, app.EventUnsubscribed)
	if len(un) != 2 || un[0]["email"] != "ann@dest.test" || un[0]["method"] != "one-click" || un[1]["email"] != "bob@dest.test" ||
		un[1]["method"] != "link" || un[0]["reason"] != "unsubscribe" || !slices.Equal(un[0]["listIds"].([]any), []any{"nov"}) {
		t.Fatalf("unsubscribes %v", un)
	}
	supp := summarise(t, e.do("GET", "/v1/suppressions", e.key, nil).want(t, 200), "recipient", "reason", "source_message_id")
	if want := []string{"recipient=ann@dest.test reason=unsubscribe source_message_id=" + msgID,
		"recipient=bob@dest.test reason=unsubscribe source_message_id=" + msgID}; !slices.Equal(supp, want) {
		t.Errorf("suppressions %v", supp)
	}

	// The summary counts recipients: two sent and delivered, one message
	// opened and clicked (twice each), two unsubscribes.
	sum := e.do("GET", "/v1/analytics/summary", e.key, nil).want(t, 200).json(t)
	tot := sum["totals"].(map[string]any)
	if sum["from"] != "2026-10-24" || sum["to"] != "2026-11-22" || sum["mode"] != "live" || sum["campaign_id"] != nil ||
		len(sum["daily"].([]any)) != 30 || tot["sent"] != 2.0 || tot["delivered"] != 2.0 || tot["opened"] != 2.0 ||
		tot["unique_opened"] != 1.0 || tot["clicked"] != 2.0 || tot["unique_clicked"] != 1.0 || tot["unsubscribed"] != 2.0 {
		t.Fatalf("summary %v", sum)
	}
	if rates := sum["rates"].(map[string]any); rates["delivery"] != 1.0 || rates["open"] != 0.5 || rates["click"] != 0.5 || rates["bounce"] != 0.0 {
		t.Errorf("rates %v", rates)
	}
	for _, q := range []string{"campaign_id=nov", "domain=ACME.test", "from=2026-11-22&to=2026-11-22", "from=2026-11-22T23:59:59Z&to=2026-11-22T00:00:00%2B00:00"} {
		s := e.do("GET", "/v1/analytics/summary?"+q, e.key, nil).want(t, 200).json(t)
		if s["totals"].(map[string]any)["sent"] != 2.0 {
			t.Errorf("%s: %v", q, s)
		}
	}
	if s := e.do("GET", "/v1/analytics/summary?campaign_id=other", e.key, nil).want(t, 200).json(t); s["campaign_id"] != "other" ||
		s["totals"].(map[string]any)["sent"] != 0.0 || s["rates"].(map[string]any)["open"] != 0.0 {
		t.Errorf("another campaign: %v", s)
	}
	// By stream: the broadcast above is in broadcast's counts, none is transactional.
	if s := e.do("GET", "/v1/analytics/summary?stream=broadcast", e.key, nil).want(t, 200).json(t); s["stream"] != "broadcast" ||
		s["totals"].(map[string]any)["sent"].(float64) == 0 {
		t.Errorf("broadcast summary: %v", s)
	}
	if s := e.do("GET", "/v1/analytics/summary?stream=transactional", e.key, nil).want(t, 200).json(t); s["totals"].(map[string]any)["sent"].(float64) != 0 {
		t.Errorf("transactional summary: %v", s)
	}
	for _, q := range []string{"campaign_id=nov&domain=acme.test", "stream=newsletters", "stream=broadcast&campaign_id=nov", "from=2026-11-23&to=2026-11-22", "from=yesterday",
		"to=22.11.2026", "from=2025-01-01&to=2026-11-22", "domain=not%20a%20domain"} {
		e.do("GET", "/v1/analytics/summary?"+q, e.key, nil).want(t, 400, "VALIDATION_ERROR")
	}
	// Two dimensions: details.field names one that was given (the second,
	// in the order campaign_id, domain, stream).
	for q, field := range map[string]string{"campaign_id=a&stream=broadcast": "stream", "campaign_id=a&domain=acme.test": "domain",
		"domain=acme.test&stream=broadcast": "stream", "stream=broadcast&domain=acme.test&campaign_id=a": "domain"} {
		r := e.do("GET", "/v1/analytics/summary?"+q, e.key, nil).want(t, 400, "VALIDATION_ERROR")
		if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["field"] != field {
			t.Errorf("%s: details %v, want field %s", q, d, field)
		}
	}
	e.do("GET", "/v1/analytics/summary", "", nil).want(t, 401, "UNAUTHORIZED")
	e.do("GET", "/v1/analytics/summary", e.newKey(e.acct.ID, []string{"messages:read"}, false, nil), nil).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("POST", "/v1/analytics/summary", e.key, nil).want(t, 405, "METHOD_NOT_ALLOWED")
	e.do("GET", "/v1/analytics/summary", e.newKey(e.acct.ID, []string{"analytics:read"}, false, nil), nil).want(t, 200)
}

// TestTrackingInTestModeAndOverTheLimit tracks a sandbox message (its
// tokens read from the stored message) on a server whose per-IP limit is
// one request per second: tracking is still answered over the limit but
// records nothing, and unsubscribe pages get 429.
func TestTrackingInTestModeAndOverTheLimit(t *testing.T) {
	e := newEnv(t, configWith(func(c *Config) { c.IPRateLimit = 1 }))
	sandbox := e.newKey(e.acct.ID, nil, true, nil)
	id := e.do("POST", "/v1/messages", sandbox, map[string]any{
		"from": "news@unverified.test", "to": []string{"ann@dest.test"}, "subject": "s", "html": trackedHTML,
		"tracking": map[string]bool{"opens": true, "clicks": true}}).want(t, 202).json(t)["id"].(string)
	var raw []byte
	if err := e.app.DB().View(func(tx *storage.Tx) error { raw = tx.MessageRaw(e.acct.ID, id); return nil }); err != nil || raw == nil {
		t.Fatalf("no stored message: %v", err)
	}
	html := htmlOf(t, raw)
	open, click := openTokenRe.FindStringSubmatch(html), clickTokenRe.FindStringSubmatch(html)
	if open == nil || click == nil {
		t.Fatalf("tracked HTML:\n%s", html)
	}

	e.public("GET", "/v1/t/o/"+open[1], "", "").want(t, 200) // within the limit: recorded
	r := e.public("GET", "/v1/t/o/"+open[1], "", "").want(t, 200)
	if r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("Content-Type") != "image/gif" {
		t.Fatalf("over the limit: %v", r.Header)
	}
	if r := e.public("GET", "/v1/t/c/"+click[1], "", "").want(t, 302); r.Header.Get("Location") != "https://shop.test/a?x=1&y=2" {
		t.Fatalf("over the limit: %v", r.Header)
	}
	e.public("GET", "/v1/t/c/nope", "", "").want(t, 404, "NOT_FOUND")
	if r := e.public("GET", "/v1/u/nope", "", "").want(t, 429, "RATE_LIMIT_EXCEEDED"); r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	e.public("POST", "/v1/u/nope", formType, "List-Unsubscribe=One-Click").want(t, 429, "RATE_LIMIT_EXCEEDED")

	if n := len(e.eventsOf(sandbox, app.EventOpened)); n != 1 {
		t.Errorf("%d opens recorded, want 1", n)
	}
	if n := len(e.eventsOf(sandbox, app.EventClicked)); n != 0 {
		t.Errorf("%d clicks recorded over the limit", n)
	}
	if n := len(e.eventsOf(e.key, app.EventOpened)); n != 0 {
		t.Errorf("a live key sees %d test-mode opens", n)
	}
	s := e.do("GET", "/v1/analytics/summary", sandbox, nil).want(t, 200).json(t)
	if tot := s["totals"].(map[string]any); s["mode"] != "test" || tot["opened"] != 1.0 || tot["clicked"] != 0.0 {
		t.Errorf("test-mode summary %v", s)
	}
	if tot := e.do("GET", "/v1/analytics/summary", e.key, nil).want(t, 200).json(t)["totals"].(map[string]any); tot["opened"] != 0.0 {
		t.Errorf("live summary counts test-mode opens: %v", tot)
	}
}

// TestOpenAPIEngagementAnswersArePrecise shows that the document describes
// the engagement answers exactly: images, redirects and pages by media type
// and headers, the event payloads and the summary field by field.
func TestOpenAPIEngagementAnswersArePrecise(t *testing.T) {
	const gif = "GIF89a\x01\x00\x01\x00"
	noCache := []string{"Cache-Control", "no-store, no-cache, must-revalidate, private, max-age=0", "Pragma", "no-cache", "Expires", "0"}
	with := func(base []string, more ...string) []string { return append(slices.Clone(base), more...) }
	const ctx = `{"ip":"192.0.2.7","userAgent":"Mozilla/5.0","device":"mobile","os":"iOS","client":"Apple Mail","geo":{"country":"DE","region":"BE","city":"Berlin"}}`
	event := func(typ, data string) string {
		return `{"data":[{"id":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a11","event":"` + typ + `","timestamp":"2026-11-22T12:00:00Z","data":` + data + `}],"limit":50,"has_more":false}`
	}
	opened := `{"messageId":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a12","to":"ann@dest.test, bob@dest.test","openedAt":"2026-11-22T12:00:00.5Z","isFirstOpen":true,"openCount":1,"context":` + ctx + `}`
	clicked := `{"messageId":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a12","to":"ann@dest.test","clickedAt":"2026-11-22T12:00:00Z","url":"https://shop.test/a","linkId":"0123456789ab","isFirstClick":false,"clickCount":3,"context":` + ctx + `}`
	unsubscribed := `{"email":"ann@dest.test","unsubscribedAt":"2026-11-22T12:00:00Z","reason":"unsubscribe","method":"one-click","listIds":[]}`
	counts := `"sent":2,"delivered":2,"bounced":{"total":0,"hard":0,"soft":0,"block":0},"opened":1,"unique_opened":1,"clicked":0,"unique_clicked":0,"complained":0,"unsubscribed":0`
	summary := `{"from":"2026-11-21","to":"2026-11-22","mode":"live","campaign_id":null,"domain":"acme.test","stream":null,"totals":{` + counts + `},` +
		`"rates":{"delivery":1,"open":0.5,"click":0,"bounce":0,"complaint":0},"daily":[{"date":"2026-11-21",` + counts + `},{"date":"2026-11-22",` + counts + `}]}`

	cases := []struct {
		name   string
		method string
		path   string
		status int
		body   string
		hdr    []string
		ok     bool
	}{
		{"pixel", "GET", "/v1/t/o/tok", 200, gif, with(noCache, "Content-Type", "image/gif"), true},
		{"pixel without no-cache", "GET", "/v1/t/o/tok", 200, gif, []string{"Content-Type", "image/gif"}, false},
		{"pixel as html", "GET", "/v1/t/o/tok", 200, "<p>", with(noCache, "Content-Type", "text/html"), false},
		{"pixel 404", "GET", "/v1/t/o/tok", 404, `{"error":{"code":"NOT_FOUND","message":"x"}}`, nil, false},
		{"pixel 429", "GET", "/v1/t/o/tok", 429, `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"x"}}`, []string{"Retry-After", "1"}, false},
		{"redirect", "GET", "/v1/t/c/tok", 302, "", with(noCache, "Location", "https://shop.test/a?x=1&y=2"), true},
		{"redirect without Location", "GET", "/v1/t/c/tok", 302, "", noCache, false},
		{"click 200", "GET", "/v1/t/c/tok", 200, gif, with(noCache, "Content-Type", "image/gif"), false},
		{"bad click token", "GET", "/v1/t/c/tok", 404, `{"error":{"code":"NOT_FOUND","message":"no such link"}}`, nil, true},
		{"unsubscribe page", "GET", "/v1/u/tok", 200, "<!doctype html>", with(noCache, "Content-Type", "text/html; charset=utf-8"), true},
		{"unsubscribe page as JSON", "GET", "/v1/u/tok", 200, `{}`, noCache, false},
		{"unsubscribed page", "POST", "/v1/u/tok", 200, "<!doctype html>", with(noCache, "Content-Type", "text/html; charset=utf-8"), true},
		{"unsubscribe 202", "POST", "/v1/u/tok", 202, "", nil, false},
		{"unsubscribe over the limit", "POST", "/v1/u/tok", 429, `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"x"}}`, []string{"Retry-After", "1"}, true},
		{"opened", "GET", "/v1/events", 200, event("message.opened", opened), nil, true},
		{"opened count as string", "GET", "/v1/events", 200, event("message.opened", strings.Replace(opened, `"openCount":1`, `"openCount":"1"`, 1)), nil, false},
		{"opened without context", "GET", "/v1/events", 200, event("message.opened", strings.Replace(opened, `,"context":`+ctx, "", 1)), nil, false},
		{"opened without geo", "GET", "/v1/events", 200, event("message.opened", strings.Replace(opened, `,"geo":{"country":"DE","region":"BE","city":"Berlin"}`, "", 1)), nil, false},
		{"opened extra field", "GET", "/v1/events", 200, event("message.opened", strings.Replace(opened, `"to"`, `"colour":"red","to"`, 1)), nil, false},
		{"opened unknown device", "GET", "/v1/events", 200, event("message.opened", strings.Replace(opened, `"mobile"`, `"phone"`, 1)), nil, false},
		{"clicked", "GET", "/v1/events", 200, event("message.clicked", clicked), nil, true},
		{"clicked with a made-up link id", "GET", "/v1/events", 200, event("message.clicked", strings.Replace(clicked, "0123456789ab", "l1", 1)), nil, false},
		{"clicked first as string", "GET", "/v1/events", 200, event("message.clicked", strings.Replace(clicked, `"isFirstClick":false`, `"isFirstClick":"false"`, 1)), nil, false},
		{"unsubscribed", "GET", "/v1/events", 200, event("recipient.unsubscribed", unsubscribed), nil, true},
		{"unsubscribed method one_click", "GET", "/v1/events", 200, event("recipient.unsubscribed", strings.Replace(unsubscribed, "one-click", "one_click", 1)), nil, false},
		{"unsubscribed list ids null", "GET", "/v1/events", 200, event("recipient.unsubscribed", strings.Replace(unsubscribed, "[]", "null", 1)), nil, false},
		{"summary", "GET", "/v1/analytics/summary", 200, summary, nil, true},
		{"summary without rates", "GET", "/v1/analytics/summary", 200, strings.Replace(summary, `"rates":{"delivery":1,"open":0.5,"click":0,"bounce":0,"complaint":0},`, "", 1), nil, false},
		{"summary bad mode", "GET", "/v1/analytics/summary", 200, strings.Replace(summary, `"live"`, `"sandbox"`, 1), nil, false},
		{"summary day as time", "GET", "/v1/analytics/summary", 200, strings.Replace(summary, `"date":"2026-11-21"`, `"date":"2026-11-21T00:00:00Z"`, 1), nil, false},
		{"summary fractional count", "GET", "/v1/analytics/summary", 200, strings.Replace(summary, `"sent":2,`, `"sent":2.5,`, 1), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, resp, body := fakeAnswer(c.method, c.path, c.status, c.body, c.hdr...)
			rec := &recordingTB{TB: t}
			checkOpenAPI(rec, req, resp, body)
			if c.ok && len(rec.failures) > 0 {
				t.Errorf("checkOpenAPI rejected a documented answer:\n%s", strings.Join(rec.failures, "\n"))
			}
			if !c.ok && len(rec.failures) == 0 {
				t.Errorf("checkOpenAPI accepted an undocumented answer: %d %s", c.status, c.body)
			}
		})
	}
}
