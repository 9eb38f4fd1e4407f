package web

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/grader"
	"mailbolt/mta/dns"
	"mailbolt/storage/storagetest"
)

// crashAfter is a storage write fault that fails the write after the next
// n: what a crash between two commits leaves behind.
type crashAfter struct{ writes, failAt atomic.Int32 }

func (c *crashAfter) fault() error {
	if c.writes.Add(1) == c.failAt.Load() {
		return errors.New("injected: the process died here")
	}
	return nil
}

func (c *crashAfter) arm(n int32) { c.failAt.Store(c.writes.Load() + n + 1) }
func (c *crashAfter) disarm()     { c.failAt.Store(0) }

// markerWrites is how many writes an idempotent request makes before its
// effect's: on a database shared by nodes, the one of its in-flight marker
// (app/idempotency.go); none on the embedded file.
func markerWrites(e *env) int32 {
	if e.db.Shared() {
		return 1
	}
	return 0
}

// Every write route stores its idempotent answer in the transaction of its
// effect (issue 13, item 12). The fault fails the first write after the
// effect's: where the answer was stored by a second write, that write is
// lost, as in a crash, and the retry runs the request again; now the retry
// replays the first answer.
func TestWriteRoutesCommitTheAnswerWithTheEffect(t *testing.T) {
	crash := &crashAfter{}
	sopts := storagetest.Options(t)
	sopts.WriteFault = crash.fault
	e := newEnvOn(t, DefaultConfig(), sopts, func(o *app.Options) {
		o.Grader.Config = grader.Config{
			Resolver:     &dns.Resolver{Server: o.Domains.Resolver.(*dns.Resolver).Server, Timeout: time.Second},
			IPBlocklists: []string{}, DomainBlocklists: []string{}}
	})
	e.zone.MX("good.test", 10, "mx.good.test")
	e.zone.A("mx.good.test", "127.0.0.1")
	e.zone.TXT("good.test", "v=spf1 ip4:127.0.0.1 -all")
	e.verifiedDomain("acme.test")
	id := func(method, path, body string) string {
		t.Helper()
		r := e.do(method, path, e.key, body)
		if r.StatusCode != 201 && r.StatusCode != 202 {
			t.Fatalf("%s %s: %d %s", method, path, r.StatusCode, r.body)
		}
		return r.json(t)["id"].(string)
	}
	domain := id("POST", "/v1/domains", `{"name":"other.test"}`)
	template := id("POST", "/v1/templates", `{"name":"t","subject":"s","text":"hi"}`)
	hook := id("POST", "/v1/webhooks", `{"url":"http://127.0.0.1:1/h","events":["message.delivered"]}`)
	key := id("POST", "/v1/api-keys", `{"name":"old","scopes":["suppressions:read"]}`)
	later := e.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	scheduled := id("POST", "/v1/messages", `{"from":"a@acme.test","to":["x@dest.test"],"subject":"s","text":"t","send_at":"`+later+`"}`)
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"gone@dest.test"}`).want(t, 201)
	removable := id("POST", "/v1/domains", `{"name":"removable.test"}`)
	hook2 := id("POST", "/v1/webhooks", `{"url":"http://127.0.0.1:1/h2","events":["message.delivered"]}`)
	inDomain := id("POST", "/v1/inbound/domains", `{"name":"in.acme.test"}`)
	inRemovable := id("POST", "/v1/inbound/domains", `{"name":"gone.acme.test"}`)
	inRoute := id("POST", "/v1/inbound/routes", `{"domain_id":"`+inDomain+`","pattern":"old","webhook_id":"`+hook+`"}`)

	var verified string
	for _, d := range e.do("GET", "/v1/domains", e.key, nil).want(t, 200).json(t)["data"].([]any) {
		if d := d.(map[string]any); d["name"] == "acme.test" {
			verified = d["id"].(string)
		}
	}
	send := `{"from":"a@acme.test","to":["x@dest.test"],"subject":"s","text":"t"}`
	cases := []struct{ method, path, body string }{
		{"POST", "/v1/messages", send},
		{"POST", "/v1/messages/batch", `{"messages":[` + send + `,` + send + `]}`},
		{"POST", "/v1/messages/" + scheduled + "/cancel", ``},
		{"POST", "/v1/api-keys", `{"name":"ci","scopes":["suppressions:read"]}`},
		{"DELETE", "/v1/api-keys/" + key, ``},
		{"POST", "/v1/suppressions", `{"recipient":"new@dest.test"}`},
		{"DELETE", "/v1/suppressions/gone@dest.test", ``},
		{"POST", "/v1/suppressions/import", `{"suppressions":[{"recipient":"imp1@dest.test"},{"recipient":"imp2@dest.test"}]}`},
		{"POST", "/v1/domains", `{"name":"new.test"}`},
		{"DELETE", "/v1/domains/" + removable, ``},
		{"POST", "/v1/domains/" + domain + "/verify", ``},
		{"POST", "/v1/domains/" + verified + "/dkim/rotate", ``},
		{"POST", "/v1/templates", `{"name":"t2","subject":"s","text":"hi"}`},
		{"PUT", "/v1/templates/" + template, `{"subject":"s2"}`},
		{"POST", "/v1/webhooks", `{"url":"http://127.0.0.1:1/h3","events":["message.delivered"]}`},
		{"DELETE", "/v1/webhooks/" + hook2, ``},
		{"POST", "/v1/webhooks/" + hook + "/rotate-secret", ``},
		{"PATCH", "/v1/webhooks/" + hook, `{"description":"patched","enabled":false}`},
		{"POST", "/v1/webhooks/" + hook + "/test", ``},
		{"POST", "/v1/team/invite", `{"email":"new@acme.test","role":"developer"}`},
		{"POST", "/v1/grader/submit", `{"from":"n@good.test","to":["s@example.test"],"subject":"hello","body_text":"a newsletter body"}`},
		{"POST", "/v1/inbound/domains", `{"name":"new.acme.test"}`},
		{"DELETE", "/v1/inbound/domains/" + inRemovable, ``},
		{"POST", "/v1/inbound/domains/" + inDomain + "/verify", ``},
		{"POST", "/v1/inbound/routes", `{"domain_id":"` + inDomain + `","pattern":"support","webhook_id":"` + hook + `"}`},
		{"DELETE", "/v1/inbound/routes/" + inRoute, ``},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		crash.arm(markerWrites(e) + 1)
		first := e.do(tc.method, tc.path, e.key, tc.body, "Idempotency-Key", "crash-"+tc.path)
		crash.disarm()
		if first.StatusCode >= 300 {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, first.StatusCode, first.body)
			continue
		}
		again := e.do(tc.method, tc.path, e.key, tc.body, "Idempotency-Key", "crash-"+tc.path)
		if again.Header.Get("Idempotent-Replayed") != "true" || again.StatusCode != first.StatusCode || string(again.body) != string(first.body) {
			t.Errorf("%s %s ran again after the crash: %d %s (first %d %s)", tc.method, tc.path,
				again.StatusCode, again.body, first.StatusCode, first.body)
		}
		covered[tc.method+" "+routePattern(tc.path)] = true
	}
	if list := e.do("GET", "/v1/messages?limit=50", e.key, nil).want(t, 200).json(t)["data"].([]any); len(list) != 1+1+2 {
		t.Errorf("%d messages, want 4 (the scheduled one, one sent, a batch of two)", len(list))
	}

	// Every write route with an effect is in the table above. Render
	// writes nothing; a replay needs a failed delivery (TestReplayRoute…).
	exempt := map[string]bool{"POST /v1/templates/:id/render": true, "POST /v1/webhooks/:id/events/:event_id/replay": true}
	for _, rt := range (&Server{}).routes() {
		if rt.Method == http.MethodGet || rt.Public || exempt[rt.Method+" "+rt.Path] {
			continue
		}
		if !covered[rt.Method+" "+rt.Path] {
			t.Errorf("%s %s is not checked for a crash between its effect and its answer", rt.Method, rt.Path)
		}
	}
}

// routePattern maps a request path back to the route pattern it matches.
func routePattern(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if len(s) == 36 && strings.Count(s, "-") == 4 {
			segs[i] = ":id"
		}
	}
	p := strings.Join(segs, "/")
	if strings.HasPrefix(p, "/v1/suppressions/") && p != "/v1/suppressions/import" {
		return "/v1/suppressions/:recipient"
	}
	return p
}
