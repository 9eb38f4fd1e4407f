package web

import (
	"net/http"
	"strings"
	"testing"
)

// TestEncodedSlashStaysInItsParameter: a "/" sent as %2F (legal in an
// email address's local part) is part of the path parameter that holds
// it, so a suppression of a/b@example.com can be removed (the audit found
// it answered 404 "no such endpoint"), and an id with %2F does not reach
// another route; ordinary ids, an escaped @ and an escaped % route as
// before.
func TestEncodedSlashStaysInItsParameter(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	for _, rcpt := range []string{"a/b@example.com", "c%d@example.com", "e/f%g@example.com"} {
		e.do("POST", "/v1/suppressions", e.key, map[string]any{"recipient": rcpt}).want(t, http.StatusCreated)
	}
	e.do("DELETE", "/v1/suppressions/a%2Fb@example.com", e.key, nil).want(t, http.StatusNoContent)
	e.do("DELETE", "/v1/suppressions/a%2fb@example.com", e.key, nil).want(t, http.StatusNotFound, "NOT_FOUND").
		wantMessage(t, "suppression not found")
	e.do("DELETE", "/v1/suppressions/c%25d@example.com", e.key, nil).want(t, http.StatusNoContent)
	e.do("DELETE", "/v1/suppressions/e%2Ff%25g%40example.com", e.key, nil).want(t, http.StatusNoContent)
	// A "/" sent as it is still separates segments.
	e.do("POST", "/v1/suppressions", e.key, map[string]any{"recipient": "h/i@example.com"}).want(t, http.StatusCreated)
	e.do("DELETE", "/v1/suppressions/h/i@example.com", e.key, nil).want(t, http.StatusNotFound, "NOT_FOUND").
		wantMessage(t, "no such endpoint: /v1/suppressions/h/i@example.com")
	e.do("DELETE", "/v1/suppressions/bob%40example.com", e.key, nil).want(t, http.StatusNotFound).
		wantMessage(t, "suppression not found")

	test := e.newKey(e.acct.ID, nil, true, nil) // sees the test message
	id := e.do("POST", "/v1/messages", test, map[string]any{"from": "a@b.test", "to": "x@y.test",
		"subject": "s", "text": "t"}).want(t, http.StatusAccepted).json(t)["id"].(string)
	keyID := e.do("GET", "/v1/api-keys", e.key, nil).want(t, http.StatusOK).json(t)["data"].([]any)[0].(map[string]any)["id"].(string)
	for _, c := range []struct {
		method, path string
		status       int
		message      string // a part of the error's message
	}{
		{"GET", "/v1/api-keys/" + keyID, http.StatusOK, ""},
		{"GET", "/v1/api-keys/" + keyID + "%2F", http.StatusNotFound, "not found"},
		{"GET", "/v1/messages/" + id + "/raw?recipient=x%40y.test", http.StatusOK, ""},
		// The id holds the %2F: GET /v1/messages/{id}, not /raw of the id before it.
		{"GET", "/v1/messages/" + id + "%2Fraw", http.StatusNotFound, "message not found"},
		// No POST route takes /v1/messages/{id}: 405, not the cancel of the id before the %2F.
		{"POST", "/v1/messages/" + id + "%2Fcancel", http.StatusMethodNotAllowed, "allowed: GET"},
		{"POST", "/v1%2Fmessages", http.StatusNotFound, "no such endpoint: /v1%2Fmessages"},
		{"GET", "/v1/webhooks/w%2Fdeliveries", http.StatusNotFound, "not found"},
		{"GET", "/v1/suppressions%2Fexport", http.StatusNotFound, "no such endpoint"},
	} {
		got := e.do(c.method, c.path, test, nil)
		if got.StatusCode != c.status || !strings.Contains(string(got.body), c.message) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.path, got.StatusCode, got.body, c.status, c.message)
		}
	}
}

// wantMessage fails the test unless the error's message is msg.
func (r reply) wantMessage(t testing.TB, msg string) {
	t.Helper()
	if got, _ := r.json(t)["error"].(map[string]any)["message"].(string); got != msg {
		t.Errorf("%s %s: message %q, want %q", r.Request.Method, r.Request.URL.EscapedPath(), got, msg)
	}
}
