package web

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
)

// The probe's request: about a kilobyte with a sandbox key, nested
// sections over one list, which unbounded answered 202 with a 160 MB
// message. Here every path that renders refuses it in the error envelope,
// and the answers match the OpenAPI document (e.do checks them).
func TestTemplateLimitsOverHTTP(t *testing.T) {
	const limit = 1 << 20
	e := newEnvWith(t, DefaultConfig(), func(o *app.Options) { o.MaxMessageSize = limit })
	sandbox := e.newKey(e.acct.ID, nil, true, nil)
	list := make([]int, 18)
	data := map[string]any{"a": list, "s": strings.Repeat("x", 1000)}
	bomb := strings.Repeat("{{#a}}", 4) + "{{s}}" + strings.Repeat("{{/a}}", 4) // 18⁴ × 1,000 bytes
	wide := map[string]any{"a": make([]int, 40)}
	busy := strings.Repeat("{{#a}}", 4) + "<b>{{.}}</b>" + strings.Repeat("{{/a}}", 4) // 40⁴ repeats

	details := func(r reply) map[string]any {
		t.Helper()
		return r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	}
	wantReason := func(r reply, reason, part string) {
		t.Helper()
		d := details(r)
		if d["reason"] != reason || d["part"] != part {
			t.Errorf("details %v: want reason %s, part %s", d, reason, part)
		}
	}
	msg := func(html string, data map[string]any) map[string]any {
		return map[string]any{"from": "a@acme.test", "to": []string{"x@dest.test"}, "subject": "s",
			"html": html, "template_data": data}
	}

	req, _ := json.Marshal(msg(bomb, data))
	if len(req) > 1300 {
		t.Fatalf("the request is %d bytes; the probe's was 1,225", len(req))
	}
	r := e.do("POST", "/v1/messages", sandbox, req).want(t, 422, "TEMPLATE_RENDER_FAILED")
	wantReason(r, "output_too_large", "html")
	if details(r)["limit"] != float64(limit) {
		t.Errorf("limit %v", details(r)["limit"])
	}
	r = e.do("POST", "/v1/messages", sandbox, msg(busy, wide)).want(t, 422, "TEMPLATE_RENDER_FAILED")
	wantReason(r, "too_complex", "html")

	// In a batch the failing message is named and nothing is stored.
	batch := map[string]any{"messages": []any{msg("<p>{{s}}</p>", data), msg(bomb, data)}}
	r = e.do("POST", "/v1/messages/batch", sandbox, batch).want(t, 422, "TEMPLATE_RENDER_FAILED")
	if d := details(r); d["index"] != 1.0 || d["reason"] != "output_too_large" {
		t.Errorf("batch details %v", d)
	}

	// A stored template: the render endpoint and a send.
	tpl := e.do("POST", "/v1/templates", e.key, map[string]any{"name": "t", "subject": "s", "html": bomb}).want(t, 201).json(t)
	id := tpl["id"].(string)
	r = e.do("POST", "/v1/templates/"+id+"/render", e.key, map[string]any{"data": data}).want(t, 422, "TEMPLATE_RENDER_FAILED")
	wantReason(r, "output_too_large", "html")
	r = e.do("POST", "/v1/templates/"+id+"/render", e.key, map[string]any{"data": wide}).want(t, 422, "TEMPLATE_RENDER_FAILED")
	wantReason(r, "too_complex", "html")
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "a@acme.test", "to": []string{"x@dest.test"},
		"template_id": id, "template_data": data}).want(t, 422, "TEMPLATE_RENDER_FAILED")
	wantReason(r, "output_too_large", "html")
	// Within the limits the same template renders.
	small := map[string]any{"a": make([]int, 2), "s": "ab"}
	out := e.do("POST", "/v1/templates/"+id+"/render", e.key, map[string]any{"data": small}).want(t, 200).json(t)
	if out["html"] != strings.Repeat("ab", 16) {
		t.Errorf("render %v", out)
	}

	// A plain message over the limit: invalid, whatever the body limit.
	big := map[string]any{"from": "a@acme.test", "to": []string{"x@dest.test"}, "subject": "s",
		"text": strings.Repeat("x", limit+1)}
	r = e.do("POST", "/v1/messages", sandbox, big).want(t, 400, "VALIDATION_ERROR")
	if d := details(r); d["reason"] != "message_too_large" || d["field"] != "message" || d["limit"] != float64(limit) {
		t.Errorf("details %v", d)
	}
	list2 := e.do("GET", "/v1/messages", sandbox, nil).want(t, 200).json(t)["data"].([]any)
	if len(list2) != 0 {
		t.Errorf("%d messages stored", len(list2))
	}
}

// A render past its time budget answers render_timeout. The App's clock
// moves a second at every reading here, so the 1 s budget runs out at the
// second piece of output.
func TestRenderTimeoutOverHTTP(t *testing.T) {
	var clock *testClock
	e := newEnvWith(t, DefaultConfig(), func(o *app.Options) {
		clock = &testClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
		o.Now = func() time.Time { clock.Add(time.Second); return clock.Now() }
	})
	tpl := e.do("POST", "/v1/templates", e.key, map[string]any{"name": "t", "subject": "s",
		"text": "{{#a}}line {{.}}\n{{/a}}"}).want(t, 201).json(t)
	r := e.do("POST", "/v1/templates/"+tpl["id"].(string)+"/render", e.key,
		map[string]any{"data": map[string]any{"a": []int{1, 2, 3}}}).want(t, 422, "TEMPLATE_RENDER_FAILED")
	d := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	if d["reason"] != "render_timeout" || d["part"] != "text" || d["timeout_ms"] != 1000.0 {
		t.Errorf("details %v", d)
	}
}
