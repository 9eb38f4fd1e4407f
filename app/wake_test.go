package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"mailbolt/hooks"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// TestCommitsWakeTheWorkers: nothing but storage's after-commit hook wakes
// the delivery queue and the webhook sender. The queue polls once an hour
// and the idle sender once a minute, yet a sandbox message is delivered and
// its webhooks arrive within seconds: first for a message sent now (the
// accepting commit wakes the queue), then for one scheduled a second ahead,
// whose message.sent and message.delivered events only the queue writes,
// while the sender sleeps.
func TestCommitsWakeTheWorkers(t *testing.T) {
	var mu sync.Mutex
	got := map[string]bool{} // event type + " " + message id
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Event string `json:"event"`
			Data  struct {
				MessageID string `json:"messageId"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &env); err == nil {
			mu.Lock()
			got[env.Event+" "+env.Data.MessageID] = true
			mu.Unlock()
		}
	}))
	defer receiver.Close()

	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := DefaultOptions()
	o.Delivery.Poll = time.Hour
	o.Webhooks.Dispatch.Guard = hooks.Guard{AllowPrivate: true, AllowHTTP: true}
	a := mustNew(t, db, o)
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	op, e := a.OperatorIn(acct.ID)
	if e != nil {
		t.Fatal(e)
	}
	k, e := a.CreateKey(op, KeyInput{Name: "k", Mode: ModeTest})
	if e != nil {
		t.Fatal(e)
	}
	p, e := a.Authenticate(k.Secret)
	if e != nil {
		t.Fatal(e)
	}
	if _, e := a.CreateWebhook(context.Background(), p, WebhookInput{URL: receiver.URL + "/hook",
		Events: []string{EventSent, EventDelivered}}); e != nil {
		t.Fatal(e)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// Both workers look for work once as they start; then they wait.
	time.Sleep(300 * time.Millisecond)

	// arrives sends a message (at sendAt when set) and waits for both of
	// its webhooks.
	arrives := func(what string, sendAt *time.Time) {
		t.Helper()
		m, e := a.SendMessage(p, MessageInput{From: "a@acme.test", To: []string{"anyone@dest.test"},
			Subject: text("s"), Text: text("t"), SendAt: sendAt})
		if e != nil {
			t.Fatal(e)
		}
		want := []string{EventSent + " " + m.ID, EventDelivered + " " + m.ID}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			ok := got[want[0]] && got[want[1]]
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: webhooks received %v; want %v within 10 s", what, got, want)
			}
		}
	}
	arrives("sent now", nil)
	time.Sleep(300 * time.Millisecond) // the sender has saved its answers and sleeps
	at := time.Now().Add(time.Second)
	arrives("scheduled", &at)
	if p := a.Panics(); p != 0 {
		t.Fatalf("%d panics", p)
	}
}
