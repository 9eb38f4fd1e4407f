package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/mta/dns"
)

// verifyForever checks a signature made on the test clock, whatever the
// real time.
func verifyForever(t *testing.T, body []byte, sig, secret string) {
	t.Helper()
	if err := hooks.Verify(body, sig, []string{secret}, time.Now(), 24*365*10*time.Hour); err != nil {
		t.Fatalf("signature does not verify with the secret shown at creation: %v", err)
	}
}

// PATCH changes the URL, events, description and enabled flag and keeps
// the secret: a delivery after the change verifies with the secret shown
// at creation. A disabled webhook is matched to no new event.
func TestPatchWebhookKeepsTheSecret(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.runWorkers()
	before, after := newHookReceiver(t, 200), newHookReceiver(t, 200)
	created := e.do("POST", "/v1/webhooks", e.key, `{"url":"`+before.URL+`","events":["message.sent"],"description":"old"}`).want(t, 201).json(t)
	id, secret := created["id"].(string), created["secret"].(string)
	if created["enabled"] != true {
		t.Fatalf("a new webhook is not enabled: %v", created)
	}

	patched := e.do("PATCH", "/v1/webhooks/"+id, e.key, `{"url":"`+after.URL+`/in","events":["message.bounced","message.accepted","message.bounced"],"description":"  new  "}`).want(t, 200)
	w := patched.json(t)
	if w["url"] != after.URL+"/in" || w["description"] != "new" || w["enabled"] != true || w["secret"] != nil ||
		strings.Contains(string(patched.body), secret) {
		t.Fatalf("patched %s", patched.body)
	}
	if evs := w["events"].([]any); len(evs) != 2 || evs[0] != "message.bounced" || evs[1] != "message.sent" {
		t.Fatalf("events %v", evs)
	}
	if got := e.do("GET", "/v1/webhooks/"+id, e.key, nil).want(t, 200).json(t); got["url"] != after.URL+"/in" {
		t.Fatalf("GET after PATCH %v", got)
	}
	ev, err := e.app.RecordEvent(e.acct.ID, false, app.EventBounced, map[string]any{"messageId": "m1"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitDelivery(e.key, id, ev.ID, "delivered")
	after.mu.Lock()
	if len(after.bodies) != 1 || string(after.bodies[0]) != string(ev.Envelope) {
		t.Fatalf("the new URL got %d bodies", len(after.bodies))
	}
	verifyForever(t, after.bodies[0], after.sigs[0], secret)
	after.mu.Unlock()
	before.mu.Lock()
	if len(before.bodies) != 0 {
		t.Fatalf("the old URL got %d requests after the change", len(before.bodies))
	}
	before.mu.Unlock()

	// Disabled: an event matched meanwhile is not sent to it. A second
	// webhook subscribed to the same type shows the event was matched
	// (every webhook is matched in the same pass).
	witness := e.do("POST", "/v1/webhooks", e.key, `{"url":"`+before.URL+`","events":["message.bounced"]}`).want(t, 201).json(t)["id"].(string)
	if w := e.do("PATCH", "/v1/webhooks/"+id, e.key, `{"enabled":false}`).want(t, 200).json(t); w["enabled"] != false || w["url"] != after.URL+"/in" {
		t.Fatalf("disabled %v", w)
	}
	skipped, _ := e.app.RecordEvent(e.acct.ID, false, app.EventBounced, map[string]any{"messageId": "m2"})
	e.waitDelivery(e.key, witness, skipped.ID, "delivered")
	if list := e.do("GET", "/v1/webhooks/"+id+"/deliveries", e.key, nil).want(t, 200).json(t)["data"].([]any); len(list) != 1 {
		t.Fatalf("the disabled webhook has %d deliveries, want only the one from before", len(list))
	}
	e.do("PATCH", "/v1/webhooks/"+id, e.key, `{"enabled":true}`).want(t, 200)
	resumed, _ := e.app.RecordEvent(e.acct.ID, false, app.EventBounced, map[string]any{"messageId": "m3"})
	e.waitDelivery(e.key, id, resumed.ID, "delivered")

	// An empty change is no change.
	if w := e.do("PATCH", "/v1/webhooks/"+id, e.key, `{}`).want(t, 200).json(t); w["description"] != "new" || w["enabled"] != true {
		t.Fatalf("empty PATCH %v", w)
	}
}

// A description's limit is 500 bytes of UTF-8, not characters, and the
// refusal says bytes: 250 × "é" (500 bytes) is taken, 251 (502 bytes) is
// refused, on create and on PATCH alike.
func TestWebhookDescriptionLimitIsBytes(t *testing.T) {
	e := newEnvWith(t, DefaultConfig(), func(o *app.Options) { o.Webhooks.Dispatch.Guard = hooks.Guard{} })
	fits, over := strings.Repeat("é", 250), strings.Repeat("é", 251)
	created := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": "https://93.184.216.34/hook", "events": []string{"message.sent"},
		"description": fits}).want(t, 201).json(t)
	id := created["id"].(string)
	refused := []reply{
		e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": "https://93.184.216.34/hook", "events": []string{"message.sent"}, "description": over}),
		e.do("PATCH", "/v1/webhooks/"+id, e.key, map[string]any{"description": over}),
	}
	for _, r := range refused {
		r.want(t, 400, "VALIDATION_ERROR")
		env := r.json(t)["error"].(map[string]any)
		if d, _ := env["details"].(map[string]any); d["field"] != "description" {
			t.Errorf("details %v, want field description", env["details"])
		}
		if msg, _ := env["message"].(string); !strings.Contains(msg, "500 bytes") || strings.Contains(msg, "characters") {
			t.Errorf("message %q: the limit is in bytes", msg)
		}
	}
	e.do("PATCH", "/v1/webhooks/"+id, e.key, map[string]any{"description": fits}).want(t, 200)
}

// PATCH validates as create does, and only the owner (with its key's mode
// and webhooks:write) may change a webhook.
func TestPatchWebhookValidation(t *testing.T) {
	e := newEnvWith(t, DefaultConfig(), func(o *app.Options) { o.Webhooks.Dispatch.Guard = hooks.Guard{} })
	id := e.do("POST", "/v1/webhooks", e.key, `{"url":"https://93.184.216.34/hook","events":["message.sent"]}`).want(t, 201).json(t)["id"].(string)
	for _, c := range []struct{ body, field string }{
		{`{"url":"not a url"}`, "url"},
		{`{"url":"http://93.184.216.34/hook"}`, "url"},
		{`{"url":"https://127.0.0.1/hook"}`, "url"},
		{`{"url":"https://169.254.169.254/latest"}`, "url"},
		{`{"url":"https://user:pw@93.184.216.34/hook"}`, "url"},
		{`{"url":"https://93.184.216.34/` + strings.Repeat("a", 2048) + `"}`, "url"},
		{`{"events":[]}`, "events"},
		{`{"events":["message.exploded"]}`, "events"},
		{`{"events":["webhook.test"]}`, "events"},
		{`{"description":"` + strings.Repeat("d", 501) + `"}`, "description"},
		{`{"secret":"mine"}`, "secret"},
		{`{"enabled":"no"}`, "enabled"},
	} {
		r := e.do("PATCH", "/v1/webhooks/"+id, e.key, c.body).want(t, 400, "VALIDATION_ERROR")
		if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["field"] != c.field {
			t.Errorf("%s: details %v, want field %s", c.body, d, c.field)
		}
	}
	r := e.do("PATCH", "/v1/webhooks/"+id, e.key, `{"events":["message.exploded"]}`).want(t, 400)
	if d := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["allowed"] == nil {
		t.Errorf("no allowed list: %v", d)
	}
	if w := e.do("GET", "/v1/webhooks/"+id, e.key, nil).want(t, 200).json(t); w["url"] != "https://93.184.216.34/hook" || len(w["events"].([]any)) != 1 {
		t.Fatalf("a refused PATCH changed the webhook: %v", w)
	}
	_, other := e.account("other", "enterprise", 100000)
	e.do("PATCH", "/v1/webhooks/"+id, other, `{"description":"x"}`).want(t, 404, "NOT_FOUND")
	e.do("PATCH", "/v1/webhooks/"+id, e.newKey(e.acct.ID, nil, true, nil), `{"description":"x"}`).want(t, 404, "NOT_FOUND")
	e.do("PATCH", "/v1/webhooks/"+id, e.newKey(e.acct.ID, []string{"webhooks:read"}, false, nil), `{"description":"x"}`).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("PATCH", "/v1/webhooks/01900000-0000-7000-8000-000000000000", e.key, `{"description":"x"}`).want(t, 404, "NOT_FOUND")
}

// POST /v1/webhooks/{id}/test sends a signed webhook.test event now and
// answers what the receiver said; nothing is stored.
func TestWebhookTestEvent(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.runWorkers()
	var mu sync.Mutex
	var got [][]byte
	var hdrs []http.Header
	code := 201
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 0, 512)
		buf := make([]byte, 512)
		for {
			n, err := r.Body.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				break
			}
		}
		mu.Lock()
		got, hdrs = append(got, b), append(hdrs, r.Header.Clone())
		c := code
		mu.Unlock()
		w.WriteHeader(c)
		w.Write([]byte("é" + strings.Repeat("x", 2000)))
	}))
	t.Cleanup(rec.Close)
	created := e.do("POST", "/v1/webhooks", e.key, `{"url":"`+rec.URL+`/hook","events":["message.sent"]}`).want(t, 201).json(t)
	id, secret := created["id"].(string), created["secret"].(string)
	e.do("PATCH", "/v1/webhooks/"+id, e.key, `{"enabled":false}`).want(t, 200) // a test goes out anyway

	res := e.do("POST", "/v1/webhooks/"+id+"/test", e.key, nil).want(t, 200).json(t)
	if res["success"] != true || res["status_code"] != 201.0 || res["error"] != nil || res["event"] != "webhook.test" ||
		res["url"] != rec.URL+"/hook" || res["latency_ms"].(float64) < 0 {
		t.Fatalf("answer %v", res)
	}
	if body := res["response"].(string); len(body) != 1024 || !strings.HasPrefix(body, "éxxx") {
		t.Fatalf("response: %d bytes, want the first 1024 of the answer: %q", len(body), body)
	}
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d requests", len(got))
	}
	verifyForever(t, got[0], hdrs[0].Get(hooks.HeaderSignature), secret)
	var env struct {
		ID, Event, Timestamp string
		Data                 map[string]any
	}
	if err := json.Unmarshal(got[0], &env); err != nil || env.ID != res["event_id"] || env.Event != "webhook.test" ||
		env.Data["webhookId"] != id || hdrs[0].Get("X-Service-Event") != "webhook.test" || hdrs[0].Get("X-Service-Event-Id") != env.ID {
		t.Fatalf("body %s (%v), headers %v", got[0], err, hdrs[0])
	}
	code = 503
	mu.Unlock()

	// Not stored: neither in the event history nor in the delivery log.
	if strings.Contains(string(e.do("GET", "/v1/events?limit=200", e.key, nil).want(t, 200).body), env.ID) {
		t.Fatal("the test event is in the event history")
	}
	if list := e.do("GET", "/v1/webhooks/"+id+"/deliveries", e.key, nil).want(t, 200).json(t)["data"].([]any); len(list) != 0 {
		t.Fatalf("the test event is in the delivery log: %v", list)
	}
	// A failing receiver is reported, with its status.
	if res := e.do("POST", "/v1/webhooks/"+id+"/test", e.key, `{}`).want(t, 200).json(t); res["success"] != false || res["status_code"] != 503.0 {
		t.Fatalf("answer to a 503: %v", res)
	}
	// An unreachable receiver is in the answer, not a 5xx.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	gone := e.do("POST", "/v1/webhooks", e.key, `{"url":"`+closed.URL+`","events":["message.sent"]}`).want(t, 201).json(t)["id"].(string)
	if res := e.do("POST", "/v1/webhooks/"+gone+"/test", e.key, nil).want(t, 200).json(t); res["success"] != false ||
		res["status_code"] != nil || res["error"] == nil || res["error"] == "" {
		t.Fatalf("answer for an unreachable receiver: %v", res)
	}
	_, other := e.account("other", "enterprise", 100000)
	e.do("POST", "/v1/webhooks/"+id+"/test", other, nil).want(t, 404, "NOT_FOUND")
	e.do("POST", "/v1/webhooks/"+id+"/test", e.newKey(e.acct.ID, []string{"webhooks:read"}, false, nil), nil).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("POST", "/v1/webhooks/"+id+"/test", e.key, `{"x":1}`).want(t, 400, "VALIDATION_ERROR")
}

// The test request goes through the address guard of deliveries: a name
// that resolved to nothing when the webhook was made and now resolves to
// loopback is refused when dialled, and reported in the answer.
func TestWebhookTestIsGuarded(t *testing.T) {
	rec := newHookReceiver(t, 200)
	port := rec.URL[strings.LastIndexByte(rec.URL, ':'):]
	e := newEnvWith(t, DefaultConfig(), func(o *app.Options) {
		o.Webhooks.Dispatch.Guard = hooks.Guard{AllowHTTP: true}
		o.Webhooks.Dispatch.Lookup = o.Domains.Resolver.(*dns.Resolver).LookupIPAddr
	})
	id := e.do("POST", "/v1/webhooks", e.key, `{"url":"http://hook.rebind.test`+port+`/in","events":["message.sent"]}`).want(t, 201).json(t)["id"].(string)
	e.zone.A("hook.rebind.test", "127.0.0.1")
	res := e.do("POST", "/v1/webhooks/"+id+"/test", e.key, nil).want(t, 200).json(t)
	if res["success"] != false || res["status_code"] != nil || !strings.Contains(res["error"].(string), "not allowed") {
		t.Fatalf("answer %v", res)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies) != 0 {
		t.Fatal("the guard let the request through")
	}
}

// TestWebhookURLsThatCannotBeReached: POST and PATCH refuse, as 400 on
// url, a port outside 1–65535 and a host in a numeric form of IPv4 that
// connections would look up as a name, even where loopback targets are
// allowed (this env is --dev); the webhook keeps its URL.
func TestWebhookURLsThatCannotBeReached(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	id := e.do("POST", "/v1/webhooks", e.key, `{"url":"https://hooks.example.com/x","events":["message.sent"]}`).want(t, 201).json(t)["id"].(string)
	for _, url := range []string{"https://hooks.example.com:99999/x", "https://hooks.example.com:0/x", "https://127.1/x",
		"https://2130706433/x", "https://0x7f000001/x", "https://0177.0.0.1/x"} {
		for _, r := range []reply{
			e.do("POST", "/v1/webhooks", e.key, `{"url":"`+url+`","events":["message.sent"]}`),
			e.do("PATCH", "/v1/webhooks/"+id, e.key, `{"url":"`+url+`"}`),
		} {
			r.want(t, 400, "VALIDATION_ERROR")
			if d := errDetails(t, r); d["field"] != "url" {
				t.Errorf("%s %s: details %v", r.Request.Method, url, d)
			}
		}
	}
	if got := e.do("GET", "/v1/webhooks/"+id, e.key, nil).want(t, 200).json(t); got["url"] != "https://hooks.example.com/x" {
		t.Fatalf("a refused PATCH changed the URL: %v", got)
	}
}
