package web

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
)

// TestOpenAPIFuzz sends every operation of the OpenAPI document requests
// generated from its own schemas — valid ones and spoiled ones (wrong
// types, missing fields, huge and odd strings, CR/LF, bad ids and query
// parameters, odd headers) — to a live server holding two tenants, as
// tenant A (and as nobody). It holds that:
//
//   - no answer is a 5xx;
//   - every answer is one the document describes (checkOpenAPI);
//   - naming tenant B's resource never succeeds, and no answer to a
//     request that did not name B's data carries B's ids or secrets;
//   - tenant B's data, read through the API before and after, is unchanged.
//
// The run is deterministic. By default it sends a few requests per
// operation; MAILBOLT_FUZZ_REQUESTS sets how many, MAILBOLT_FUZZ_SEED the
// seed (docs/security.md reports a long run).
func TestOpenAPIFuzz(t *testing.T) {
	perOp := envInt(t, "MAILBOLT_FUZZ_REQUESTS", 6)
	seed := envInt(t, "MAILBOLT_FUZZ_SEED", 1)
	spec, err := loadFuzzSpec()
	if err != nil {
		t.Fatal(err)
	}
	f := newFuzzRun(t, uint64(seed))
	before := f.snapshotB()

	ops := spec.operations()
	// Deletions last, so the rest meet A's resources still in place.
	slices.SortStableFunc(ops, func(a, b fuzzOp) int {
		return boolInt(a.method == http.MethodDelete) - boolInt(b.method == http.MethodDelete)
	})
	gen := &fuzzGen{spec: spec, rnd: f.rnd, now: f.e.clock.Now(), hints: f.hints()}
	for _, op := range ops {
		for range perOp {
			f.send(op, gen)
		}
	}
	f.rawHeaders()

	after := f.snapshotB()
	for _, p := range sortedKeys(before) {
		if before[p] != after[p] {
			f.finding("tenant B", "GET "+p+" changed:\nbefore: "+truncate([]byte(before[p]), 600)+"\nafter:  "+truncate([]byte(after[p]), 600))
		}
	}
	f.report(len(ops), seed)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tenantData is what a tenant was given at setup: ids by kind (the pools
// path parameters are drawn from) and its secrets.
type tenantData struct {
	key, domain string
	ids         map[string][]string
}

// fuzzRun is one fuzz run: the server, the two tenants, what was sent and
// what was found.
type fuzzRun struct {
	t      *testing.T
	e      *env
	rnd    *rand.Rand
	client *http.Client
	a, b   tenantData
	// aKeys are A's other keys: test mode, one narrow scope.
	aTest, aNarrow string
	hook           string // a webhook receiver URL
	// bSecrets are strings of B's that no answer to A may carry.
	bSecrets []string

	sent      int
	byStatus  map[int]int
	byMut     map[mutation]int
	findings  []string
	seenFinds map[string]bool
}

func newFuzzRun(t *testing.T, seed uint64) *fuzzRun {
	sink := &captureSender{}
	cfg := configWith(func(c *Config) { c.IPRateLimit, c.GraderRateLimit = 1000000, 1000000 })
	e := newGraderEnv(t, cfg, func(o *app.Options) {
		o.PublicURL = "https://mail.acme.test"
		o.Delivery.Sender = sink
	})
	e.runWorkers()
	f := &fuzzRun{t: t, e: e, rnd: rand.New(rand.NewPCG(seed, 0x6d61696c626f6c74)),
		client:   &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		byStatus: map[int]int{}, byMut: map[mutation]int{}, seenFinds: map[string]bool{}}
	f.hook = newHookReceiver(t, 200).URL + "/hook"
	bAcct, bKey := e.account("beta", "enterprise", 100000)
	f.a = f.seed(e.key, "acme.test", sink)
	f.b = f.seed(bKey, "beta.test", sink)
	f.aTest = e.newKey(e.acct.ID, nil, true, nil)
	f.aNarrow = e.newKey(e.acct.ID, []string{"messages:read"}, false, nil)
	f.bSecrets = append([]string{bKey, bAcct.ID, "beta.test"}, f.b.ids["all"]...)
	return f
}

// seed gives a tenant one of each resource: a verified domain, a
// template, a suppression, a second key, an invitation, a delivered
// tracked message and its tokens, a scheduled message, a webhook, a
// grader result.
func (f *fuzzRun) seed(key, domain string, sink *captureSender) tenantData {
	t, e := f.t, f.e
	td := tenantData{key: key, domain: domain, ids: map[string][]string{}}
	add := func(kind, id string) {
		td.ids[kind] = append(td.ids[kind], id)
		td.ids["all"] = append(td.ids["all"], id)
	}
	post := func(path string, body any) map[string]any {
		r := e.do("POST", path, key, body)
		if r.StatusCode >= 300 {
			t.Fatalf("seed %s %s: %d %s", domain, path, r.StatusCode, r.body)
		}
		return r.json(t)
	}
	d := post("/v1/domains", map[string]any{"name": domain})
	dk := record(t, d, "dkim", "")
	e.zone.LongTXT(dk["name"].(string), joinTXT(dk["value"].(string)))
	spf := record(t, d, "spf", "")
	e.zone.TXT(spf["name"].(string), spf["value"].(string))
	add("domain", d["id"].(string))
	if v := post("/v1/domains/"+d["id"].(string)+"/verify", nil); v["status"] != "verified" {
		t.Fatalf("seed %s: domain not verified: %v", domain, v)
	}
	add("template", post("/v1/templates", map[string]any{"name": "welcome", "subject": "Hi {{name}}", "html": "<p>Hi {{name}}</p>", "text": "Hi {{name}}"})["id"].(string))
	post("/v1/suppressions", map[string]any{"recipient": "sup@" + domain})
	add("suppression", "sup@"+domain)
	add("key", post("/v1/api-keys", map[string]any{"name": "second"})["id"].(string))
	add("invite", post("/v1/team/invite", map[string]any{"email": "dev@" + domain, "role": "admin"})["accept_token"].(string))
	add("grader", post("/v1/grader/submit", goodSubmission())["id"].(string))
	add("message", post("/v1/messages", map[string]any{"from": "news@" + domain, "to": "ann@dest.test", "subject": "Later",
		"text": "later", "send_at": e.clock.Now().Add(time.Hour).Format(time.RFC3339)})["id"].(string))

	msg := post("/v1/messages", map[string]any{"from": "news@" + domain, "to": "ann@dest.test", "subject": "News",
		"html": trackedHTML, "campaign_id": "seed", "stream": "broadcast", "tracking": map[string]bool{"opens": true, "clicks": true}})["id"].(string)
	add("message", msg)
	deadline := time.Now().Add(10 * time.Second)
	for e.do("GET", "/v1/messages/"+msg, key, nil).want(t, 200).json(t)["status"] != "delivered" {
		if time.Now().After(deadline) {
			t.Fatalf("seed %s: message not delivered", domain)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range sink.sent() {
		m, err := mail.ReadMessage(bytes.NewReader(c.Data))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(strings.TrimSuffix(m.Header.Get("From"), ">"), "@"+domain) {
			continue
		}
		if tok := unsubTokenRe.FindStringSubmatch(m.Header.Get("List-Unsubscribe")); tok != nil {
			add("unsub", tok[1])
		}
		html := htmlOf(t, c.Data)
		if tok := openTokenRe.FindStringSubmatch(html); tok != nil {
			add("open", tok[1])
		}
		for _, tok := range clickTokenRe.FindAllStringSubmatch(html, -1) {
			add("click", tok[1])
		}
	}
	for _, k := range []string{"unsub", "open", "click"} {
		if len(td.ids[k]) == 0 {
			t.Fatalf("seed %s: no %s token in the sent message", domain, k)
		}
	}
	events := e.do("GET", "/v1/events?limit=200", key, nil).want(t, 200).json(t)["data"].([]any)
	for _, ev := range events {
		add("event", ev.(map[string]any)["id"].(string))
	}
	// The webhook comes after the message's events, so that nothing is
	// delivered to it while the fuzzer runs.
	add("webhook", post("/v1/webhooks", map[string]any{"url": f.hook, "events": []string{"message.delivered", "message.bounced"}})["id"].(string))
	return td
}

// hints are plausible values by property name.
func (f *fuzzRun) hints() map[string][]any {
	addrs := []any{"ann@dest.test", []any{"ann@dest.test", "Bob <bob@dest.test>"}}
	h := map[string][]any{
		"from":             {"news@acme.test", "Acme <news@acme.test>", "news@beta.test"},
		"to":               addrs,
		"cc":               addrs,
		"bcc":              addrs,
		"reply_to":         addrs,
		"recipient":        {"ann@dest.test", "x@dest.test"},
		"email":            {"dev2@dest.test"},
		"url":              {f.hook, "https://hooks.acme.test/x", "http://127.0.0.1:1/x"},
		"template_id":      {f.a.ids["template"][0], f.a.ids["template"][0], f.b.ids["template"][0]},
		"domain":           {"good.test", "acme.test", "nonexistent.test"},
		"name":             {"fz1.acme.test", "fz2.acme.test", "key name"},
		"message_id":       {f.a.ids["message"][1]},
		"subject":          {"Hello {{name}}"},
		"html":             {trackedHTML},
		"template_version": {0},
		"template_data":    {map[string]any{"name": "Ann"}},
	}
	return h
}

// pathPools names, for each path parameter, the kind of id it takes.
func pathPool(op fuzzOp, param string) string {
	switch {
	case param == "event_id":
		return "event"
	case strings.HasPrefix(op.path, "/v1/messages/"):
		return "message"
	case strings.HasPrefix(op.path, "/v1/api-keys/"):
		return "key"
	case strings.HasPrefix(op.path, "/v1/domains/"):
		return "domain"
	case strings.HasPrefix(op.path, "/v1/templates/"):
		return "template"
	case strings.HasPrefix(op.path, "/v1/webhooks/"):
		return "webhook"
	case strings.HasPrefix(op.path, "/v1/suppressions/"):
		return "suppression"
	case strings.HasPrefix(op.path, "/v1/grader/results/"):
		return "grader"
	case strings.HasPrefix(op.path, "/v1/t/o/"):
		return "open"
	case strings.HasPrefix(op.path, "/v1/t/c/"):
		return "click"
	case strings.HasPrefix(op.path, "/v1/u/"):
		return "unsub"
	case strings.HasPrefix(op.path, "/v1/team/accept/"):
		return "invite"
	}
	return ""
}

// badIDs are path segments no id looks like, already escaped.
var badIDs = []string{"0", "-1", "none", "00000000-0000-7000-8000-000000000000", strings.Repeat("a", 5000),
	"%2e%2e", "..%2f..%2fetc", "%0d%0aX-Injected:%201", "%F0%9F%92%A9", "a%00b", "%ff%fe", "null", "%20", "%2F"}

// tokenPools are paths whose tokens act for whichever tenant they name:
// they are never given B's.
var tokenPools = map[string]bool{"open": true, "click": true, "unsub": true, "invite": true}

// send generates one request for op, sends it and judges the answer.
func (f *fuzzRun) send(op fuzzOp, g *fuzzGen) {
	path, namesB, mentionsB := op.path, false, false
	for _, p := range op.params {
		if p.in != "path" {
			continue
		}
		pool := pathPool(op, p.name)
		var seg string
		switch r := f.rnd.IntN(10); {
		case r < 5 && len(f.a.ids[pool]) > 0:
			seg = url.PathEscape(pick(f.rnd, f.a.ids[pool]))
		case r < 7 && !tokenPools[pool] && len(f.b.ids[pool]) > 0:
			seg, namesB = url.PathEscape(pick(f.rnd, f.b.ids[pool])), true
		case r < 8:
			seg = url.PathEscape(pick(f.rnd, f.a.ids["all"])) // an id of another kind
		default:
			seg = pick(f.rnd, badIDs)
		}
		path = strings.Replace(path, "{"+p.name+"}", seg, 1)
	}

	q := url.Values{}
	hdr := http.Header{}
	spoilParams := f.rnd.IntN(3) == 0
	for _, p := range op.params {
		if p.in == "path" || (!p.required && f.rnd.IntN(2) == 0) {
			continue
		}
		spoil := spoilParams && f.rnd.IntN(2) == 0
		switch p.in {
		case "query":
			q.Add(p.name, g.queryValue(p, spoil))
			if spoil && f.rnd.IntN(3) == 0 {
				q.Add(p.name, g.queryValue(p, false)) // repeated
			}
		case "header":
			hdr.Set(p.name, f.headerValue(spoil))
		}
	}
	if spoilParams && f.rnd.IntN(3) == 0 {
		q.Set("fuzz_unknown", "1")
	}
	target := f.e.srv.URL + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}

	mut := mutNone
	var raw []byte
	if op.body != nil {
		mut = pick(f.rnd, bodyMutations)
		body, rawBody := g.mutate(g.value(op.body, "", 0), mut)
		switch {
		case mut == mutNoBody:
		case rawBody != nil:
			raw = rawBody
		default:
			raw = encodeBody(body, op.bodyType)
		}
		if tpl := f.b.ids["template"][0]; bytes.Contains(raw, []byte(tpl)) {
			namesB = true
		}
		for _, s := range f.bSecrets {
			mentionsB = mentionsB || bytes.Contains(raw, []byte(s))
		}
		f.byMut[mut]++
	}

	req, err := http.NewRequest(op.method, target, bytes.NewReader(raw))
	if err != nil {
		f.finding(op.String(), fmt.Sprintf("cannot build request %q: %v", target, err))
		return
	}
	req.Header = hdr
	if raw != nil {
		ct := op.bodyType
		if f.rnd.IntN(12) == 0 {
			ct = pick(f.rnd, []string{"text/plain", "application/json; charset=latin1", "multipart/form-data", ""})
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
	}
	switch r := f.rnd.IntN(20); {
	case r == 0:
	case r == 1:
		req.Header.Set("X-API-Key", "svc_live_"+strings.Repeat("A", 43))
	case r == 2:
		req.Header.Set("X-API-Key", f.aTest)
	case r == 3:
		req.Header.Set("X-API-Key", f.aNarrow)
	case r == 4:
		req.Header.Set("X-API-Key", "\u00e9\u00e9"+f.e.key)
	default:
		if !op.public || f.rnd.IntN(2) == 0 {
			req.Header.Set("X-API-Key", f.e.key)
		}
	}
	if f.rnd.IntN(8) == 0 {
		req.Header.Set("X-Request-Id", f.headerValue(true))
	}

	resp, err := f.client.Do(req)
	if err != nil {
		f.finding(op.String(), fmt.Sprintf("%s %s: transport error: %v", op.method, truncate([]byte(path), 120), err))
		return
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		f.finding(op.String(), fmt.Sprintf("reading the answer: %v", err))
		return
	}
	f.sent++
	f.byStatus[resp.StatusCode]++
	what := fmt.Sprintf("%s %s (%s)", op.method, truncate([]byte(path), 120), mut)
	if resp.StatusCode >= 500 {
		f.finding(op.String(), fmt.Sprintf("%s answered %d: %s\nrequest body: %s", what, resp.StatusCode, truncate(data, 400), truncate(raw, 400)))
	}
	if namesB && resp.StatusCode < 300 {
		f.finding(op.String(), fmt.Sprintf("%s named tenant B's resource and got %d: %s", what, resp.StatusCode, truncate(data, 400)))
	}
	if !namesB && !mentionsB {
		for _, s := range f.bSecrets {
			if bytes.Contains(data, []byte(s)) {
				f.finding(op.String(), fmt.Sprintf("%s: the answer carries tenant B's %q", what, s))
			}
		}
	}
	// Judge the path as the router sees it: decoded, so that an encoded
	// slash separates segments (see docs/security.md, "Results").
	req.URL.RawPath = ""
	rec := &recordingTB{TB: f.t}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	checkOpenAPI(rec, req, resp, data)
	for _, m := range rec.failures {
		f.finding(op.String(), m+"\nrequest body: "+truncate(raw, 300))
	}
}

// headerValue is a valid Idempotency-Key-like value, or an odd one that a
// client can still send (no CR, LF or NUL: those are rawHeaders' part).
func (f *fuzzRun) headerValue(odd bool) string {
	if !odd {
		return fmt.Sprintf("fuzz-%d", f.rnd.IntN(1<<30))
	}
	return pick(f.rnd, []string{"", " ", strings.Repeat("k", 300), "\u00e9t\u00e9", "a\tb", "123", "true", "null",
		"\"quoted\"", strings.Repeat("\U0001F4A9", 80)})
}

func pick[T any](rnd *rand.Rand, xs []T) T { return xs[rnd.IntN(len(xs))] }

// rawHeaders sends requests no Go client would: CR, LF and NUL inside
// header values, obsolete line folding, a CR/LF in the request target.
// The HTTP layer refuses these before any handler runs, so only the
// status is judged.
func (f *fuzzRun) rawHeaders() {
	host := strings.TrimPrefix(f.e.srv.URL, "http://")
	for _, head := range []string{
		"GET /v1/account HTTP/1.1\r\nHost: x\r\nX-API-Key: " + f.e.key + "\r\nX-Request-Id: a\rb\r\n\r\n",
		"GET /v1/account HTTP/1.1\r\nHost: x\r\nX-API-Key: " + f.e.key + "\r\nX-Request-Id: a\x00b\r\n\r\n",
		"GET /v1/account HTTP/1.1\r\nHost: x\r\nX-API-Key: " + f.e.key + "\r\nX-Request-Id: a\r\n folded\r\n\r\n",
		"POST /v1/suppressions HTTP/1.1\r\nHost: x\r\nX-API-Key: " + f.e.key + "\r\nIdempotency-Key: a\nBcc: x\r\nContent-Length: 2\r\n\r\n{}",
		"GET /v1/acc\rount HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/account HTTP/1.1\r\nHost: x\r\nX-API-Key: " + f.e.key + "\n\n",
		"POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-API-Key: " + f.e.key + "\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	} {
		conn, err := net.DialTimeout("tcp", host, 5*time.Second)
		if err != nil {
			f.t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, head); err != nil {
			conn.Close()
			f.t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		f.sent++
		if err != nil {
			f.finding("raw request", fmt.Sprintf("%q: no answer: %v", head, err))
			continue
		}
		resp.Body.Close()
		f.byStatus[resp.StatusCode]++
		if resp.StatusCode >= 500 || resp.StatusCode < 400 && strings.ContainsAny(head, "\x00") {
			f.finding("raw request", fmt.Sprintf("%q answered %d", head, resp.StatusCode))
		}
	}
}

// snapshotB reads everything of tenant B's through the API, keyed by path.
func (f *fuzzRun) snapshotB() map[string]string {
	paths := []string{"/v1/account", "/v1/messages?limit=200", "/v1/events?limit=200", "/v1/api-keys?limit=200",
		"/v1/suppressions?limit=200", "/v1/domains?limit=200", "/v1/templates?limit=200", "/v1/webhooks?limit=200",
		"/v1/team?limit=200", "/v1/grader/history", "/v1/ips", "/v1/ips/pools", "/v1/analytics/summary"}
	for _, kind := range []string{"message", "key", "domain", "template", "webhook", "grader"} {
		for _, id := range f.b.ids[kind] {
			switch kind {
			case "message":
				paths = append(paths, "/v1/messages/"+id)
			case "key":
				paths = append(paths, "/v1/api-keys/"+id)
			case "domain":
				paths = append(paths, "/v1/domains/"+id)
			case "template":
				paths = append(paths, "/v1/templates/"+id, "/v1/templates/"+id+"/versions")
			case "webhook":
				paths = append(paths, "/v1/webhooks/"+id, "/v1/webhooks/"+id+"/deliveries")
			case "grader":
				paths = append(paths, "/v1/grader/results/"+id)
			}
		}
	}
	out := map[string]string{}
	for _, p := range paths {
		out[p] = string(f.e.do("GET", p, f.b.key, nil).want(f.t, 200).body)
	}
	return out
}

// finding records a failure once per operation and text.
func (f *fuzzRun) finding(op, text string) {
	k := op + "\x00" + firstLine(text)
	if f.seenFinds[k] {
		return
	}
	f.seenFinds[k] = true
	f.findings = append(f.findings, op+": "+text)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// report logs the run's numbers and fails the test with its findings.
func (f *fuzzRun) report(ops, seed int) {
	var statuses, muts []string
	for _, s := range sortedKeys(intKeys(f.byStatus)) {
		n, _ := strconv.Atoi(s)
		statuses = append(statuses, fmt.Sprintf("%s:%d", s, f.byStatus[n]))
	}
	for _, m := range sortedKeys(mutKeys(f.byMut)) {
		muts = append(muts, fmt.Sprintf("%s:%d", m, f.byMut[mutation(m)]))
	}
	f.t.Logf("openapi fuzz: seed %d, %d requests over %d operations, %d findings\nstatuses %s\nbodies %s",
		seed, f.sent, ops, len(f.findings), strings.Join(statuses, " "), strings.Join(muts, " "))
	for i, s := range f.findings {
		if i == 40 {
			f.t.Errorf("… and %d more findings", len(f.findings)-40)
			break
		}
		f.t.Error(s)
	}
}

func intKeys(m map[int]int) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[strconv.Itoa(k)] = true
	}
	return out
}

func mutKeys(m map[mutation]int) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[string(k)] = true
	}
	return out
}
