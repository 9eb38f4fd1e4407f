package web

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/hooks"
)

var secretShown = regexp.MustCompile(`<code id="secret">([^<]+)</code>`)

func TestDashboardWebhooks(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.runWorkers()
	rec := newHookReceiver(t, 200)
	ann := e.loggedIn(e.acct, "ann@example.com", "developer")
	vic := e.loggedIn(e.acct, "vic@example.com", "viewer")

	// Create: the secret is shown once, and signs.
	bad := ann.post("/dashboard/webhooks", "/dashboard/webhooks", url.Values{"url": {rec.URL + "/hook"}})
	wantStatus(t, "a webhook without events", bad, 400)
	if !strings.Contains(bad.body, "at least one event type") || !strings.Contains(bad.body, `value="`+rec.URL+`/hook"`) {
		t.Errorf("the form is not shown again with its error: %s", bad.body)
	}
	created := ann.post("/dashboard/webhooks", "/dashboard/webhooks", url.Values{"url": {rec.URL + "/hook"},
		"events": {"message.sent", "message.bounced"}, "description": {"ops"}})
	wantStatus(t, "creating a webhook", created, 201)
	m := secretShown.FindStringSubmatch(created.body)
	if m == nil {
		t.Fatalf("no secret shown: %s", created.body)
	}
	secret := html.UnescapeString(m[1])
	if !strings.Contains(created.body, `<script src="/dashboard/assets/copy.js"`) || strings.Contains(created.body, "<script>") {
		t.Errorf("the copy script is missing, or inline script is there")
	}
	hooksList := e.do("GET", "/v1/webhooks", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(hooksList) != 1 {
		t.Fatalf("webhooks %v", hooksList)
	}
	id := hooksList[0].(map[string]any)["id"].(string)
	page := "/dashboard/webhooks/" + id
	if p := ann.get(page); strings.Contains(p.body, secret) {
		t.Fatal("the secret is shown again")
	}
	if p := ann.get("/dashboard/webhooks"); !strings.Contains(p.body, `href="/dashboard/webhooks/`+id+`"`) {
		t.Errorf("the list does not link to the webhook: %s", p.body)
	}

	// A viewer sees the webhook but may not change it; a form without its
	// CSRF token is refused.
	vp := vic.get(page)
	wantStatus(t, "the viewer's webhook page", vp, 200)
	if strings.Contains(vp.body, "/rotate-secret") || strings.Contains(vp.body, "Replay") {
		t.Errorf("the viewer is offered changes: %s", vp.body)
	}
	for _, action := range []string{"", "/test", "/rotate-secret", "/delete", "/replay"} {
		wantStatus(t, "a viewer's "+action, vic.post(page, page+action, url.Values{"url": {rec.URL}, "events": {"message.sent"}, "event": {"x"}}), 403)
		wantStatus(t, "no CSRF token: "+action, ann.do("POST", page+action, url.Values{"url": {rec.URL}}), 403)
	}
	wantStatus(t, "a viewer's create", vic.post("/dashboard/webhooks", "/dashboard/webhooks", url.Values{"url": {rec.URL}, "events": {"message.sent"}}), 403)

	// Events reach the receiver signed with the secret shown.
	ev, _ := e.app.RecordEvent(e.acct.ID, false, app.EventSent, map[string]any{"messageId": "m1"})
	e.waitDelivery(e.key, id, ev.ID, "delivered")
	rec.mu.Lock()
	if err := hooks.Verify(rec.bodies[0], rec.sigs[0], []string{secret}, time.Now(), time.Hour*24*365*10); err != nil {
		t.Fatalf("the secret shown does not sign: %v", err)
	}
	rec.mu.Unlock()

	// A test event: the receiver's status, latency and answer.
	rec.set(418)
	tested := ann.post(page, page+"/test", url.Values{})
	wantStatus(t, "a test event", tested, 200)
	if !strings.Contains(tested.body, "the receiver answered <strong>418</strong>") || !strings.Contains(tested.body, " ms") {
		t.Errorf("the test's answer is not shown: %s", tested.body)
	}
	rec.mu.Lock()
	if last := string(rec.bodies[len(rec.bodies)-1]); !strings.Contains(last, `"event":"webhook.test"`) {
		t.Errorf("the receiver got %s", last)
	}
	rec.mu.Unlock()

	// A failed delivery has a Replay button; replaying reaches the receiver.
	rec.set(400)
	ev2, _ := e.app.RecordEvent(e.acct.ID, false, app.EventBounced, map[string]any{"messageId": "m2"})
	e.waitDelivery(e.key, id, ev2.ID, "failed")
	failed := ann.get(page + "?status=failed")
	if !strings.Contains(failed.body, `name="event" value="`+ev2.ID+`"`) || strings.Contains(failed.body, `value="`+ev.ID+`"`) ||
		!strings.Contains(failed.body, "400") {
		t.Fatalf("the failed delivery has no Replay button, or the delivered one has: %s", failed.body)
	}
	wantStatus(t, "replaying a delivered event", ann.post(page, page+"/replay", url.Values{"event": {ev.ID}}), 409)
	rec.set(200)
	rec.mu.Lock()
	before := len(rec.bodies)
	rec.mu.Unlock()
	wantRedirect(t, "replay", ann.post(page, page+"/replay", url.Values{"event": {ev2.ID}}), page+"?replayed="+ev2.ID)
	d := e.waitDelivery(e.key, id, ev2.ID, "delivered")
	if n := len(d["attempts"].([]any)); n != 2 {
		t.Errorf("attempts after the replay: %d", n)
	}
	rec.mu.Lock()
	if len(rec.bodies) != before+1 || string(rec.bodies[before]) != string(ev2.Envelope) {
		t.Errorf("the receiver did not get the replayed event")
	}
	rec.mu.Unlock()
	if p := ann.get(page + "?replayed=" + ev2.ID); !strings.Contains(p.body, "is queued again") {
		t.Errorf("no notice of the replay: %s", p.body)
	}
	// Past the 7-day window the button goes and the replay is refused.
	rec.set(400)
	ev3, _ := e.app.RecordEvent(e.acct.ID, false, app.EventSent, map[string]any{"messageId": "m3"})
	e.waitDelivery(e.key, id, ev3.ID, "failed")
	e.clock.Add(7*24*time.Hour + time.Minute)
	ann = e.browser() // sessions last 7 days at most
	wantRedirect(t, "login again", ann.login("ann@example.com", goodPassword), "/dashboard/")
	if p := ann.get(page + "?status=failed"); strings.Contains(p.body, `name="event" value="`+ev3.ID+`"`) {
		t.Errorf("a Replay button past the window")
	}
	wantStatus(t, "replay past the window", ann.post(page, page+"/replay", url.Values{"event": {ev3.ID}}), 404)

	// Edit: url, events, enabled.
	edited := ann.post(page, page, url.Values{"url": {rec.URL + "/v2"}, "events": {"message.delivered"}, "description": {"new"}})
	wantRedirect(t, "edit", edited, page)
	got := e.do("GET", "/v1/webhooks/"+id, e.key, nil).want(t, 200).json(t)
	if got["url"] != rec.URL+"/v2" || got["enabled"] != false || len(got["events"].([]any)) != 1 || got["description"] != "new" {
		t.Fatalf("after the edit: %v", got)
	}
	wantStatus(t, "an edit with an unknown event", ann.post(page, page, url.Values{"url": {rec.URL}, "events": {"message.exploded"}}), 400)

	// Rotation shows the new secret once.
	rot := ann.post(page, page+"/rotate-secret", url.Values{})
	wantStatus(t, "rotation", rot, 200)
	if m := secretShown.FindStringSubmatch(rot.body); m == nil || html.UnescapeString(m[1]) == secret {
		t.Fatalf("no new secret shown: %s", rot.body)
	}

	// Another account's member finds nothing.
	other, _ := e.account("other", "enterprise", 1000)
	e.person(other, "zed@example.com", "owner")
	zed := e.browser()
	wantRedirect(t, "login", zed.login("zed@example.com", goodPassword), "/dashboard/")
	wantStatus(t, "another account's webhook", zed.get(page), 404)
	for _, action := range []string{"", "/test", "/rotate-secret", "/delete", "/replay"} {
		wantStatus(t, "another account's webhook: "+action, zed.post("/dashboard/webhooks", page+action,
			url.Values{"url": {rec.URL}, "events": {"message.sent"}, "event": {ev2.ID}}), 404)
	}

	wantRedirect(t, "delete", ann.post(page, page+"/delete", url.Values{}), "/dashboard/webhooks")
	e.do("GET", "/v1/webhooks/"+id, e.key, nil).want(t, 404, "NOT_FOUND")
}
