package web

import (
	"net/http"
	"testing"
)

// The static /v1/messages/batch sits beside the parameter routes of
// /v1/messages/:id; each must still answer 405 with its own Allow.
func TestMessagesBatchPathMethods(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/v1/messages/batch", "POST"},
		{"PUT", "/v1/messages/batch", "POST"},
		{"PUT", "/v1/messages/0190b8c4-0000-7000-8000-000000000000", "GET"},
		{"GET", "/v1/messages/0190b8c4-0000-7000-8000-000000000000/cancel", "POST"},
	} {
		// Sent raw: the OpenAPI checker would read GET /v1/messages/batch as
		// GET /v1/messages/{id}.
		req, _ := http.NewRequest(c.method, e.srv.URL+c.path, nil)
		req.Header.Set("X-API-Key", e.key)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d", c.method, c.path, r.StatusCode)
		}
		if got := r.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
}

func TestNullAddressListsMeanNone(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	test := e.newKey(e.acct.ID, nil, true, nil)
	e.do("POST", "/v1/messages", test, map[string]any{"from": "a@b.test", "to": "x@y.test", "cc": nil, "bcc": nil,
		"reply_to": nil, "subject": "s", "text": "t"}).want(t, http.StatusAccepted)
	e.do("POST", "/v1/messages", test, map[string]any{"from": "a@b.test", "to": nil, "subject": "s", "text": "t"}).
		want(t, http.StatusBadRequest, "VALIDATION_ERROR")
}
