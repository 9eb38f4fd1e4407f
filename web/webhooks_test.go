package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/storage"
)

// hookReceiver answers with the current code and keeps what it received.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	code   int
	bodies [][]byte
	sigs   []string
}

func newHookReceiver(t *testing.T, code int) *hookReceiver {
	r := &hookReceiver{code: code}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.bodies = append(r.bodies, b)
		r.sigs = append(r.sigs, req.Header.Get(hooks.HeaderSignature))
		w.WriteHeader(r.code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) set(code int) { r.mu.Lock(); r.code = code; r.mu.Unlock() }

// waitDelivery polls the deliveries endpoint until the delivery of eventID
// has status want.
func (e *env) waitDelivery(key, hookID, eventID, want string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list := e.do("GET", "/v1/webhooks/"+hookID+"/deliveries", key, nil).want(e.t, 200).json(e.t)["data"].([]any)
		for _, d := range list {
			dm := d.(map[string]any)
			if dm["event_id"] == eventID && dm["status"] == want {
				return dm
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("delivery of %s never became %s: %v", eventID, want, list)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWebhooksOverHTTP(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.runWorkers()
	rec := newHookReceiver(t, 200)
	created := e.do("POST", "/v1/webhooks", e.key, `{"url":"`+rec.URL+`/hook","events":["message.accepted","message.bounced"],"description":"ops"}`).want(t, 201)
	w := created.json(t)
	id, secret := w["id"].(string), w["secret"].(string)
	if len(secret) < 44 || w["mode"] != "live" || created.Header.Get("Location") != "/v1/webhooks/"+id {
		t.Fatalf("created %v", w)
	}
	if evs := w["events"].([]any); len(evs) != 2 || evs[0] != "message.sent" {
		t.Errorf("events %v (message.accepted is an alias of message.sent)", evs)
	}
	if got := e.do("GET", "/v1/webhooks/"+id, e.key, nil).want(t, 200); strings.Contains(string(got.body), secret) {
		t.Fatal("secret shown again")
	}
	if list := e.do("GET", "/v1/webhooks", e.key, nil).want(t, 200); strings.Contains(string(list.body), secret) {
		t.Fatal("secret in the list")
	}
	for _, bad := range []string{
		`{"url":"` + rec.URL + `","events":["message.exploded"]}`,
		`{"url":"` + rec.URL + `","events":[]}`,
		`{"url":"not a url","events":["message.sent"]}`,
		`{"url":"` + rec.URL + `","events":["message.sent"],"secret":"mine"}`,
	} {
		e.do("POST", "/v1/webhooks", e.key, bad).want(t, 400, "VALIDATION_ERROR")
	}

	// An event reaches the receiver, signed with the secret shown at creation.
	ev, err := e.app.RecordEvent(e.acct.ID, false, app.EventSent, map[string]any{"messageId": "m1", "to": "a@b.test"})
	if err != nil {
		t.Fatal(err)
	}
	e.app.RecordEvent(e.acct.ID, false, app.EventOpened, map[string]any{"messageId": "m1"}) // not subscribed
	e.app.RecordEvent(e.acct.ID, true, app.EventSent, map[string]any{"messageId": "t1"})    // test mode
	d := e.waitDelivery(e.key, id, ev.ID, "delivered")
	if d["event"] != "message.sent" || len(d["attempts"].([]any)) != 1 || d["attempts"].([]any)[0].(map[string]any)["status_code"] != 200.0 {
		t.Fatalf("delivery %v", d)
	}
	rec.mu.Lock()
	if len(rec.bodies) != 1 || string(rec.bodies[0]) != string(ev.Envelope) {
		t.Fatalf("receiver got %d bodies", len(rec.bodies))
	}
	if err := hooks.Verify(rec.bodies[0], rec.sigs[0], []string{secret}, time.Now(), time.Hour*24*365*10); err != nil {
		t.Fatalf("signature: %v", err)
	}
	rec.mu.Unlock()

	// Rotation: the new secret is returned; the old one still signs.
	rot := e.do("POST", "/v1/webhooks/"+id+"/rotate-secret", e.key, nil).want(t, 200).json(t)
	newSecret := rot["secret"].(string)
	if newSecret == secret || rot["previous_secret_expires_at"] == nil {
		t.Fatalf("rotate %v", rot)
	}
	ev2, _ := e.app.RecordEvent(e.acct.ID, false, app.EventBounced, map[string]any{"messageId": "m2"})
	e.waitDelivery(e.key, id, ev2.ID, "delivered")
	rec.mu.Lock()
	last, sig := rec.bodies[len(rec.bodies)-1], rec.sigs[len(rec.sigs)-1]
	rec.mu.Unlock()
	for _, s := range []string{secret, newSecret} {
		if err := hooks.Verify(last, sig, []string{s}, time.Now(), time.Hour*24*365*10); err != nil {
			t.Errorf("during rotation: %v", err)
		}
	}

	// A 400 fails at once; replay sends it again with a fresh budget.
	rec.set(400)
	ev3, _ := e.app.RecordEvent(e.acct.ID, false, app.EventSent, map[string]any{"messageId": "m3"})
	e.waitDelivery(e.key, id, ev3.ID, "failed")
	failed := e.do("GET", "/v1/webhooks/"+id+"/deliveries?status=failed", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(failed) != 1 {
		t.Fatalf("failed filter: %v", failed)
	}
	e.do("GET", "/v1/webhooks/"+id+"/deliveries?status=lost", e.key, nil).want(t, 400, "VALIDATION_ERROR")
	rec.set(200)
	e.do("POST", "/v1/webhooks/"+id+"/events/"+ev.ID+"/replay", e.key, nil).want(t, 409, "CONFLICT")
	e.do("POST", "/v1/webhooks/"+id+"/events/01900000-0000-7000-8000-000000000000/replay", e.key, nil).want(t, 404, "NOT_FOUND")
	_, other := e.account("other", "enterprise", 100000)
	e.do("POST", "/v1/webhooks/"+id+"/events/"+ev3.ID+"/replay", other, nil).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/webhooks/"+id, other, nil).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/webhooks/"+id+"/deliveries", other, nil).want(t, 404, "NOT_FOUND")
	e.do("DELETE", "/v1/webhooks/"+id, other, nil).want(t, 404, "NOT_FOUND")
	// A test key does not see live webhooks.
	e.do("GET", "/v1/webhooks/"+id, e.newKey(e.acct.ID, nil, true, nil), nil).want(t, 404, "NOT_FOUND")

	replayed := e.do("POST", "/v1/webhooks/"+id+"/events/"+ev3.ID+"/replay", e.key, nil).want(t, 202).json(t)
	if replayed["status"] != "pending" {
		t.Fatalf("replay answer %v", replayed)
	}
	d = e.waitDelivery(e.key, id, ev3.ID, "delivered")
	if len(d["attempts"].([]any)) != 2 {
		t.Errorf("attempts after replay %v", d["attempts"])
	}

	e.do("DELETE", "/v1/webhooks/"+id, e.key, nil).want(t, 204)
	e.do("GET", "/v1/webhooks/"+id, e.key, nil).want(t, 404, "NOT_FOUND")
}

func TestReplayWindow(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.runWorkers()
	rec := newHookReceiver(t, 410)
	id := e.do("POST", "/v1/webhooks", e.key, `{"url":"`+rec.URL+`","events":["message.sent"]}`).want(t, 201).json(t)["id"].(string)
	ev, _ := e.app.RecordEvent(e.acct.ID, false, app.EventSent, map[string]any{"messageId": "m1"})
	e.waitDelivery(e.key, id, ev.ID, "failed")
	e.clock.Add(7*24*time.Hour + time.Minute)
	e.do("POST", "/v1/webhooks/"+id+"/events/"+ev.ID+"/replay", e.key, nil).want(t, 404, "NOT_FOUND")
}

func TestWebhookTargetsAreGuarded(t *testing.T) {
	e := newEnvWith(t, DefaultConfig(), func(o *app.Options) { o.Webhooks.Dispatch.Guard = hooks.Guard{} })
	for _, url := range []string{"http://93.184.216.34/hook", "https://127.0.0.1/hook", "https://10.0.0.8/hook",
		"https://[::1]/hook", "https://169.254.169.254/latest", "https://localhost:8443/x"} {
		e.do("POST", "/v1/webhooks", e.key, `{"url":"`+url+`","events":["message.sent"]}`).want(t, 400, "VALIDATION_ERROR")
	}
	e.do("POST", "/v1/webhooks", e.key, `{"url":"https://93.184.216.34/hook","events":["message.sent"]}`).want(t, 201)
}

// The delivery log leaves out a request in flight (an attempt saved
// Unanswered whose lease runs) and shows it once the lease is over, as
// interrupted. It asks the typed mark, not the error text: a recorded
// failure with the same text is shown at once.
func TestDeliveryLogLeavesOutTheRequestInFlight(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	hook := e.do("POST", "/v1/webhooks", e.key, `{"url":"https://hooks.example.test/in","events":["message.sent"]}`).want(t, 201).json(t)
	const text = "interrupted: no answer was recorded (the server stopped during the request)"
	now := e.clock.Now()
	lease := now.Add(time.Minute)
	answered := storage.DeliveryAttempt{At: now.Add(-time.Minute), StatusCode: 500, LatencyMS: 3}
	inFlight, recorded := app.NewID(), app.NewID() // event ids
	for _, d := range []storage.Delivery{
		{ID: app.NewID(), EventID: inFlight, Attempts: []storage.DeliveryAttempt{answered, {At: now, Error: text, Unanswered: true}}},
		{ID: app.NewID(), EventID: recorded, Attempts: []storage.DeliveryAttempt{answered, {At: now, Error: text}}},
	} {
		d.WebhookID, d.AccountID, d.EventType, d.Status = hook["id"].(string), e.acct.ID, "message.sent", storage.DeliveryPending
		d.NextAttemptAt, d.CreatedAt = &lease, now
		if err := e.app.DB().Update(func(tx *storage.Tx) error { return tx.InsertDelivery(d) }); err != nil {
			t.Fatal(err)
		}
	}
	attempts := func() map[string][]any {
		out := map[string][]any{}
		for _, d := range e.do("GET", "/v1/webhooks/"+hook["id"].(string)+"/deliveries", e.key, nil).want(t, 200).json(t)["data"].([]any) {
			dm := d.(map[string]any)
			out[dm["event_id"].(string)] = dm["attempts"].([]any)
		}
		return out
	}
	if got := attempts(); len(got[inFlight]) != 1 || len(got[recorded]) != 2 {
		t.Fatalf("while the lease runs: %d attempts in flight (want 1 shown), %d recorded (want 2)", len(got[inFlight]), len(got[recorded]))
	}
	e.clock.Add(time.Minute)
	got := attempts()[inFlight]
	if len(got) != 2 || got[1].(map[string]any)["error"] != text {
		t.Fatalf("after the lease: %v", got)
	}
}
