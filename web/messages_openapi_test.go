package web

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestMessagesAPIAgainstOpenAPI drives every messages and events route
// through a real server with the delivery workers running (test keys
// deliver through the sandbox), through their answers and main errors;
// e.do checks each answer against the OpenAPI document.
func TestMessagesAPIAgainstOpenAPI(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.runWorkers()
	live := e.key
	sandbox := e.newKey(e.acct.ID, nil, true, nil)
	narrow := e.newKey(e.acct.ID, []string{"account:read"}, false, nil)

	type recipient struct {
		Email          string
		Type           string
		Status         string
		Attempts       int
		BounceType     string `json:"bounce_type"`
		BounceCategory string `json:"bounce_category"`
		LastResponse   *struct {
			Code    int
			Message string
		} `json:"last_response"`
	}
	type message struct {
		ID         string
		Status     string
		Mode       string
		Subject    string
		SendAt     *string `json:"send_at"`
		Template   *struct{ ID string }
		Recipients []recipient
		Content    *struct {
			HTML        string
			Text        string
			Headers     map[string]string
			Attachments []struct {
				Filename string
				Size     int
			}
		}
	}
	decode := func(r reply, v any) {
		t.Helper()
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("%s: %v", r.body, err)
		}
	}
	accepted := func(r reply) (id, status string) {
		t.Helper()
		var a struct{ ID, Status string }
		decode(r, &a)
		return a.ID, a.Status
	}
	get := func(key, id string) message {
		t.Helper()
		var m message
		decode(e.do("GET", "/v1/messages/"+id, key, nil).want(t, 200), &m)
		return m
	}
	// waitFor polls a message until it reaches a final status.
	waitFor := func(key, id, status string) message {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			m := get(key, id)
			if m.Status == status {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %s stayed %s, want %s: %+v", id, m.Status, status, m)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	details := func(r reply) map[string]any {
		t.Helper()
		d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
		return d
	}
	wantDetails := func(r reply, key string, want any) {
		t.Helper()
		if got := details(r)[key]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %s: details.%s = %v, want %v: %s", r.Request.Method, r.Request.URL.Path, key, got, want, r.body)
		}
	}

	// A full single send through the sandbox: every field.
	b64 := base64.StdEncoding.EncodeToString
	full := map[string]any{
		"from":        "Shop <shop@Unverified.TEST>",
		"to":          "Ann <ann@example.com>",
		"cc":          []string{"cc@example.com"},
		"bcc":         []string{"bcc@example.com"},
		"reply_to":    "help@unverified.test",
		"subject":     "Your order",
		"html":        `<p>Thanks</p><img src="cid:logo">`,
		"text":        "Thanks",
		"headers":     map[string]string{"X-Order": "1234"},
		"attachments": []map[string]any{{"filename": "receipt.txt", "content": b64([]byte("paid")), "content_type": "text/plain"}, {"filename": "logo.png", "content": b64([]byte{0x89, 'P', 'N', 'G'}), "content_id": "logo"}},
		"campaign_id": "spring",
		"metadata":    map[string]any{"order": "1234"},
		"tags":        []string{"receipt", "shop"},
		"tracking":    map[string]any{"opens": true},
	}
	r := e.do("POST", "/v1/messages", sandbox, full, "Idempotency-Key", "send-1").want(t, 202)
	first, status := accepted(r)
	if status != "queued" || r.Header.Get("Location") != "/v1/messages/"+first {
		t.Fatalf("accepted: %s, Location %q", r.body, r.Header.Get("Location"))
	}
	again := e.do("POST", "/v1/messages", sandbox, full, "Idempotency-Key", "send-1").want(t, 202)
	if id, _ := accepted(again); id != first || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %s %v", again.body, again.Header)
	}
	m := waitFor(sandbox, first, "delivered")
	if m.Mode != "test" || len(m.Recipients) != 3 || m.Recipients[0].Email != "ann@example.com" || m.Recipients[2].Type != "bcc" ||
		m.Recipients[0].LastResponse == nil || m.Recipients[0].LastResponse.Code != 250 || m.Recipients[0].Attempts != 1 {
		t.Errorf("delivered message: %+v", m)
	}
	if m.Content == nil || m.Content.Text != "Thanks" || m.Content.Headers["X-Order"] != "1234" || len(m.Content.Attachments) != 2 || m.Content.Attachments[0].Size != 4 {
		t.Errorf("content: %+v", m.Content)
	}

	// The sandbox outcomes, as one batch: data in input order.
	batch := map[string]any{"messages": []map[string]any{
		{"from": "shop@unverified.test", "to": "bounce@example.com", "subject": "b", "text": "t"},
		{"from": "shop@unverified.test", "to": "softbounce@example.com", "subject": "s", "text": "t"},
		{"from": "shop@unverified.test", "to": "blocked@example.com", "subject": "x", "text": "t"},
		{"from": "shop@unverified.test", "to": "complaint@example.com", "subject": "c", "text": "t"},
	}}
	var list struct {
		Data []struct{ ID, Status string }
	}
	decode(e.do("POST", "/v1/messages/batch", sandbox, batch, "Idempotency-Key", "batch-1").want(t, 202), &list)
	if len(list.Data) != 4 {
		t.Fatalf("batch: %+v", list)
	}
	outcomes := []struct{ status, bounceType string }{{"bounced", "hard"}, {"bounced", "soft"}, {"bounced", "block"}, {"delivered", ""}}
	for i, want := range outcomes {
		m := waitFor(sandbox, list.Data[i].ID, want.status)
		if m.Recipients[0].BounceType != want.bounceType {
			t.Errorf("message %d: recipient %+v, want bounce type %q", i, m.Recipients[0], want.bounceType)
		}
	}
	bounced, complained := list.Data[0].ID, list.Data[3].ID
	// Hard bounces and complaints suppress; soft bounces and blocks do not.
	var sup struct {
		Data []struct {
			Recipient, Reason string
			Source            *string `json:"source_message_id"`
		}
	}
	decode(e.do("GET", "/v1/suppressions", live, nil).want(t, 200), &sup)
	got := map[string]string{}
	for _, s := range sup.Data {
		if s.Source != nil {
			got[s.Recipient] = s.Reason + " " + *s.Source
		}
	}
	if got["bounce@example.com"] != "hard_bounce "+bounced || got["complaint@example.com"] != "complaint "+complained || len(got) != 2 {
		t.Errorf("suppressions: %v", got)
	}
	// A suppressed recipient is recorded, never sent to.
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "bounce@example.com", "subject": "s", "text": "t"}).want(t, 202)
	suppressedID, status := accepted(r)
	if status != "suppressed" {
		t.Errorf("to a suppressed recipient: %s", r.body)
	}
	if m := get(sandbox, suppressedID); m.Recipients[0].Status != "suppressed" || m.Recipients[0].LastResponse == nil || m.Recipients[0].LastResponse.Code != 0 {
		t.Errorf("suppressed message: %+v", m)
	}

	// Scheduling and cancel.
	at := e.clock.Now().Add(time.Hour).Format(time.RFC3339)
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com", "subject": "later", "text": "t", "send_at": at}).want(t, 202)
	scheduled, status := accepted(r)
	if status != "scheduled" || !strings.Contains(string(r.body), `"send_at"`) {
		t.Errorf("scheduled: %s", r.body)
	}
	if m := get(sandbox, scheduled); m.Status != "scheduled" || m.SendAt == nil || m.Recipients[0].Status != "queued" {
		t.Errorf("scheduled message: %+v", m)
	}
	e.do("POST", "/v1/messages/"+scheduled+"/cancel", narrow, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	c := e.do("POST", "/v1/messages/"+scheduled+"/cancel", sandbox, nil, "Idempotency-Key", "cancel-1").want(t, 200)
	if m := c.json(t); m["status"] != "cancelled" || m["cancelled_at"] == nil || m["content"] != nil {
		t.Errorf("cancelled: %s", c.body)
	}
	e.do("POST", "/v1/messages/"+scheduled+"/cancel", sandbox, nil, "Idempotency-Key", "cancel-1").want(t, 200) // replayed
	gone := e.do("GET", "/v1/messages/"+scheduled, sandbox, nil).want(t, 410, "GONE")
	wantDetails(gone, "id", scheduled)
	e.do("POST", "/v1/messages/"+scheduled+"/cancel", sandbox, nil).want(t, 410, "GONE")
	conflict := e.do("POST", "/v1/messages/"+first+"/cancel", sandbox, nil).want(t, 409, "CONFLICT")
	wantDetails(conflict, "status", "delivered")
	e.do("POST", "/v1/messages/"+scheduled+"/cancel", live, nil).want(t, 404, "NOT_FOUND") // the other mode
	e.do("POST", "/v1/messages/nope/cancel", sandbox, nil).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/messages/nope", sandbox, nil).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/messages/"+first, live, nil).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/messages/"+first, narrow, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("GET", "/v1/messages/"+first, "", nil).want(t, 401, "UNAUTHORIZED")

	// Templates: stored (strict), overridden, inline.
	var tpl struct{ ID string }
	decode(e.do("POST", "/v1/templates", live, `{"name":"Welcome","subject":"Hi {{name}}","html":"<p>Hello {{name}}</p>","text":"Hello {{name}}"}`).want(t, 201), &tpl)
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com", "template_id": tpl.ID, "template_data": map[string]any{"name": "Ann"}}).want(t, 202)
	id, _ := accepted(r)
	if m := get(sandbox, id); m.Subject != "Hi Ann" || m.Template == nil || m.Template.ID != tpl.ID || m.Content.Text != "Hello Ann" {
		t.Errorf("from a stored template: %+v", m)
	}
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com", "template_id": tpl.ID, "template_version": 1, "template_data": map[string]any{"name": "Ann"}, "subject": "Custom"}).want(t, 202)
	id, _ = accepted(r)
	if m := get(sandbox, id); m.Subject != "Custom" || m.Content.Text != "Hello Ann" {
		t.Errorf("a template with an overridden subject: %+v", m)
	}
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com", "subject": "Hi {{name}}{{missing}}", "html": "<p>{{name}}</p>", "template_data": map[string]any{"name": "<Ann>"}}).want(t, 202)
	id, _ = accepted(r)
	if m := get(sandbox, id); m.Subject != "Hi <Ann>" || m.Template != nil || m.Content.HTML != "<p>&lt;Ann&gt;</p>" {
		t.Errorf("an inline template: %+v", m)
	}
	render := e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com", "template_id": tpl.ID, "template_data": map[string]any{}}).want(t, 422, "TEMPLATE_RENDER_FAILED")
	wantDetails(render, "variable", "name")
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com", "template_id": "nope"}).want(t, 400, "INVALID_TEMPLATE")
	wantDetails(r, "field", "template_id")
	r = e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com", "subject": "s", "html": "{{#open}}", "template_data": map[string]any{}}).want(t, 400, "INVALID_TEMPLATE")
	wantDetails(r, "part", "html")

	// Validation: 400 with details.field.
	base := func(over map[string]any) map[string]any {
		m := map[string]any{"from": "shop@unverified.test", "to": []string{"ann@example.com"}, "subject": "s", "text": "t"}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf("r%d@example.com", i)
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{base(map[string]any{"to": []string{}}), "to"},
		{base(map[string]any{"to": nil}), "to"},
		{base(map[string]any{"to": many}), "to"},
		{base(map[string]any{"to": []string{"ann@example.com", "not an address"}}), "to[1]"},
		{base(map[string]any{"to": 7}), "to"},
		{base(map[string]any{"from": nil}), "from"},
		{base(map[string]any{"subject": "a\r\nBcc: x@example.com"}), "subject"},
		{base(map[string]any{"subject": nil}), "subject"},
		{base(map[string]any{"text": nil}), "html"},
		{base(map[string]any{"headers": map[string]string{"From": "x@example.com"}}), "headers.From"},
		{base(map[string]any{"headers": map[string]string{"X-A": "a\nb"}}), "headers.X-A"},
		{base(map[string]any{"send_at": e.clock.Now().Add(31 * 24 * time.Hour).Format(time.RFC3339)}), "send_at"},
		{base(map[string]any{"send_at": "tomorrow"}), "send_at"},
		{base(map[string]any{"metadata": []int{1}}), "metadata"},
		{base(map[string]any{"template_version": 2}), "template_version"},
		{base(map[string]any{"tags": []string{""}}), "tags[0]"},
		{base(map[string]any{"attachments": []map[string]any{{"filename": "a.bin", "content": "***"}}}), "attachments[0].content"},
		{base(map[string]any{"tracking": map[string]any{"views": true}}), "tracking.views"},
		{base(map[string]any{"priority": "high"}), "priority"},
		{base(map[string]any{"ip_pool": "nowhere"}), "ip_pool"},
	} {
		r := e.do("POST", "/v1/messages", sandbox, c.body).want(t, 400, "VALIDATION_ERROR")
		wantDetails(r, "field", c.field)
	}

	// Batch errors: the index of the failing message, nothing stored.
	countTest := func() int {
		var p struct{ Total int }
		decode(e.do("GET", "/v1/messages?page=1", sandbox, nil).want(t, 200), &p)
		return p.Total
	}
	n := countTest()
	bad := map[string]any{"messages": []map[string]any{base(nil), base(map[string]any{"to": "broken"})}}
	r = e.do("POST", "/v1/messages/batch", sandbox, bad).want(t, 400, "VALIDATION_ERROR")
	wantDetails(r, "index", 1)
	wantDetails(r, "field", "messages[1].to[0]")
	bad = map[string]any{"messages": []map[string]any{base(map[string]any{"colour": "red"})}}
	r = e.do("POST", "/v1/messages/batch", sandbox, bad).want(t, 400, "VALIDATION_ERROR")
	wantDetails(r, "index", 0)
	wantDetails(r, "field", "messages[0].colour")
	e.do("POST", "/v1/messages/batch", sandbox, `{"messages":[]}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/messages/batch", sandbox, `{}`).want(t, 400, "VALIDATION_ERROR")
	r = e.do("POST", "/v1/messages/batch", sandbox, map[string]any{"messages": []map[string]any{base(nil), base(map[string]any{"template_id": tpl.ID, "template_data": map[string]any{}, "subject": nil, "text": nil})}}).want(t, 422, "TEMPLATE_RENDER_FAILED")
	wantDetails(r, "index", 1)
	if countTest() != n {
		t.Error("a refused batch stored messages")
	}
	// The plan's batch size.
	free, _ := e.account("small", "free", 100000)
	freeKey := e.newKey(free.ID, nil, true, nil)
	big := make([]map[string]any, 101)
	for i := range big {
		big[i] = base(nil)
	}
	r = e.do("POST", "/v1/messages/batch", freeKey, map[string]any{"messages": big}).want(t, 400, "VALIDATION_ERROR")
	wantDetails(r, "limit", 100)
	e.do("POST", "/v1/messages/batch", freeKey, map[string]any{"messages": big[:100]}).want(t, 202)

	// Live keys: the sending domain must be verified.
	nv := e.do("POST", "/v1/messages", live, base(nil)).want(t, 422, "DOMAIN_NOT_VERIFIED")
	wantDetails(nv, "domain", "unverified.test")
	r = e.do("POST", "/v1/messages/batch", live, map[string]any{"messages": []map[string]any{base(nil)}}).want(t, 422, "DOMAIN_NOT_VERIFIED")
	wantDetails(r, "index", 0)
	e.do("POST", "/v1/messages", narrow, base(nil)).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("POST", "/v1/messages/batch", "", `{"messages":[]}`).want(t, 401, "UNAUTHORIZED")
	// From a verified domain a live message is queued; with no outbound
	// delivery configured in this test server it is deferred, and a
	// deferred message can no longer be cancelled.
	d := e.do("POST", "/v1/domains", live, `{"name":"mail.example.test"}`).want(t, 201).json(t)
	dkim := record(t, d, "dkim", "")
	e.zone.LongTXT(dkim["name"].(string), joinTXT(dkim["value"].(string)))
	spf := record(t, d, "spf", "")
	e.zone.TXT(spf["name"].(string), spf["value"].(string))
	e.do("POST", "/v1/domains/"+d["id"].(string)+"/verify", live, nil).want(t, 200)
	r = e.do("POST", "/v1/messages", live, base(map[string]any{"from": "shop@mail.example.test"})).want(t, 202)
	liveID, _ := accepted(r)
	lm := waitFor(live, liveID, "deferred")
	if lm.Mode != "live" || lm.Recipients[0].Status != "deferred" || lm.Recipients[0].LastResponse == nil {
		t.Errorf("deferred message: %+v", lm)
	}
	wantDetails(e.do("POST", "/v1/messages/"+liveID+"/cancel", live, nil).want(t, 409, "CONFLICT"), "status", "deferred")

	// Lists: both modes, filters, each mode sees its own messages.
	type page struct {
		Data    []message
		HasMore bool   `json:"has_more"`
		Cursor  string `json:"cursor"`
		Total   int
	}
	var p page
	decode(e.do("GET", "/v1/messages?limit=2", sandbox, nil).want(t, 200), &p)
	if len(p.Data) != 2 || !p.HasMore || p.Cursor == "" || p.Data[0].Content != nil {
		t.Fatalf("first cursor page: %+v", p)
	}
	newest := p.Data[0].ID
	decode(e.do("GET", "/v1/messages?limit=2&cursor="+p.Cursor, sandbox, nil).want(t, 200), &p)
	if len(p.Data) != 2 || p.Data[0].ID >= newest {
		t.Errorf("second cursor page: %+v", p)
	}
	pg := e.do("GET", "/v1/messages?page=2&limit=3", sandbox, nil).want(t, 200)
	if pg.Header.Get("Link") == "" {
		t.Error("page mode without Link")
	}
	filter := func(key, query string) []string {
		t.Helper()
		var p page
		decode(e.do("GET", "/v1/messages?"+query, key, nil).want(t, 200), &p)
		var ids []string
		for _, m := range p.Data {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if ids := filter(sandbox, "status=cancelled"); len(ids) != 1 || ids[0] != scheduled {
		t.Errorf("status=cancelled: %v", ids)
	}
	if ids := filter(sandbox, "campaign_id=spring&tag=receipt"); len(ids) != 1 || ids[0] != first {
		t.Errorf("campaign and tag: %v", ids)
	}
	if ids := filter(sandbox, "recipient=BCC@example.com&page=1"); len(ids) != 1 || ids[0] != first {
		t.Errorf("recipient: %v", ids)
	}
	if ids := filter(sandbox, "status=bounced&since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z"); len(ids) != 3 {
		t.Errorf("status=bounced in a window: %v", ids)
	}
	if ids := filter(sandbox, "since="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); len(ids) != 0 {
		t.Errorf("since the future: %v", ids)
	}
	if ids := filter(live, ""); len(ids) != 1 || ids[0] != liveID {
		t.Errorf("the live key's messages: %v", ids)
	}
	wantDetails(e.do("GET", "/v1/messages?status=lost", sandbox, nil).want(t, 400, "VALIDATION_ERROR"), "field", "status")
	wantDetails(e.do("GET", "/v1/messages?since=yesterday", sandbox, nil).want(t, 400, "VALIDATION_ERROR"), "field", "since")
	e.do("GET", "/v1/messages?limit=201", sandbox, nil).want(t, 400, "VALIDATION_ERROR")
	e.do("GET", "/v1/messages", narrow, nil).want(t, 403, "INSUFFICIENT_SCOPES")

	// The event history.
	type event struct {
		ID, Event, Timestamp string
		Data                 map[string]any
	}
	events := func(key, query string) []event {
		t.Helper()
		var p struct{ Data []event }
		decode(e.do("GET", "/v1/events?"+query, key, nil).want(t, 200), &p)
		return p.Data
	}
	evs := events(sandbox, "message_id="+first)
	if len(evs) != 4 || evs[3].Event != "message.sent" || evs[0].Event != "message.delivered" || evs[3].Data["campaignId"] != "spring" ||
		evs[3].Data["to"] != "ann@example.com" {
		t.Errorf("events of the first message: %+v", evs)
	}
	evs = events(sandbox, "type=message.bounced&limit=10")
	if len(evs) != 3 {
		t.Errorf("bounces: %+v", evs)
	}
	for _, ev := range evs {
		if ev.Data["bounceType"] == "hard" && (ev.Data["bounceCode"] != "5.1.1" || ev.Data["diagnosticCode"] != "smtp; 550 5.1.1 sandbox: the mailbox does not exist") {
			t.Errorf("hard bounce: %+v", ev)
		}
	}
	evs = events(sandbox, "type=message.complained,message.delivered&recipient=Complaint@example.com")
	if len(evs) != 2 || evs[0].Event != "message.complained" || evs[0].Data["feedbackType"] != "abuse" {
		t.Errorf("complaint: %+v", evs)
	}
	if evs := events(sandbox, "type=message.accepted&type=message.delivered&message_id="+complained); len(evs) != 2 {
		t.Errorf("message.accepted and message.delivered of one message: %+v", evs)
	}
	if evs := events(sandbox, "page=1&limit=2&since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00.000Z"); len(evs) != 2 {
		t.Errorf("page mode: %+v", evs)
	}
	if evs := events(live, "type=message.sent"); len(evs) != 1 || evs[0].Data["messageId"] != liveID {
		t.Errorf("the live key's events: %+v", evs)
	}
	if evs := events(sandbox, "message_id="+scheduled); len(evs) != 0 {
		t.Errorf("a cancelled scheduled message has events: %+v", evs)
	}
	wantDetails(e.do("GET", "/v1/events?type=message.exploded", sandbox, nil).want(t, 400, "VALIDATION_ERROR"), "field", "type")
	wantDetails(e.do("GET", "/v1/events?until=soon", sandbox, nil).want(t, 400, "VALIDATION_ERROR"), "field", "until")
	e.do("GET", "/v1/events?page=0", sandbox, nil).want(t, 400, "VALIDATION_ERROR")
	e.do("GET", "/v1/events", narrow, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("DELETE", "/v1/events", sandbox, nil).want(t, 405, "METHOD_NOT_ALLOWED")
	e.do("POST", "/v1/messages/"+first, sandbox, nil).want(t, 405, "METHOD_NOT_ALLOWED")
}
