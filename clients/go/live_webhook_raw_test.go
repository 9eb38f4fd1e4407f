package mailbolt

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Webhooks.Update keeps the secret, Webhooks.Test reaches a receiver with
// a valid signature, and Messages.Raw answers a message's source.
func TestLiveWebhookUpdateTestAndRaw(t *testing.T) {
	c := liveClient(t, "MAILBOLT_TEST_API_KEY")
	var mu sync.Mutex
	var bodies [][]byte
	var headers []http.Header
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies, headers = append(bodies, b), append(headers, r.Header.Clone())
		mu.Unlock()
		w.Write([]byte("got it"))
	}))
	defer rec.Close()
	hook, err := c.Webhooks.Create(ctx(t), &CreateWebhookRequest{URL: rec.URL + "/old", Events: []string{"message.sent"}})
	if err != nil {
		t.Fatal(err)
	}
	if !hook.Enabled || hook.Secret == "" {
		t.Fatalf("created %+v", hook)
	}
	url, off, desc := rec.URL+"/new", false, "patched"
	up, err := c.Webhooks.Update(ctx(t), hook.ID, &UpdateWebhookRequest{URL: &url, Events: []string{"message.bounced"}, Description: &desc, Enabled: &off})
	if err != nil {
		t.Fatal(err)
	}
	if up.URL != url || up.Enabled || up.Secret != "" || len(up.Events) != 1 || up.Events[0] != "message.bounced" || up.Description == nil || *up.Description != desc {
		t.Fatalf("updated %+v", up)
	}
	_, err = c.Webhooks.Update(ctx(t), hook.ID, &UpdateWebhookRequest{Events: []string{"message.exploded"}})
	wantCode(t, err, 400, "VALIDATION_ERROR")

	res, err := c.Webhooks.Test(ctx(t), hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || res.StatusCode == nil || *res.StatusCode != 200 || res.Body != "got it" || res.Event != "webhook.test" || res.URL != url {
		t.Fatalf("test result %+v", res)
	}
	mu.Lock()
	if len(bodies) != 1 {
		t.Fatalf("the receiver got %d requests", len(bodies))
	}
	if err := Verify(bodies[0], headers[0], hook.Secret); err != nil {
		t.Fatalf("the test event does not verify with the secret from before the update: %v", err)
	}
	var ev struct{ ID, Event string }
	if json.Unmarshal(bodies[0], &ev) != nil || ev.ID != res.EventID || ev.Event != "webhook.test" {
		t.Fatalf("body %s", bodies[0])
	}
	mu.Unlock()

	m, err := c.Messages.Send(ctx(t), testMessage("raw source"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.Messages.Raw(ctx(t), m.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "Subject: raw source\r\n") || !strings.Contains(string(raw), "hello") {
		t.Fatalf("raw source:\n%s", raw)
	}
	if again, err := c.Messages.Raw(ctx(t), m.ID, "ANN@example.net"); err != nil || string(again) != string(raw) {
		t.Fatalf("raw by recipient: %v", err)
	}
	_, err = c.Messages.Raw(ctx(t), m.ID, "nobody@example.net")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v", err)
	}
	wantCode(t, err, 400, "VALIDATION_ERROR")
}
