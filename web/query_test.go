package web

import (
	"testing"
)

// TestMalformedQueryString: every route that reads its query string
// refuses one it cannot parse with 400 naming "query" (the grader with its
// own code), as the lists always did, instead of dropping the pair it
// could not read and answering as if it had not been sent: the newest
// template version, the default analytics window, every stream's export,
// the default grader page, a suppression deleted from every stream.
func TestMalformedQueryString(t *testing.T) {
	e := newEnv(t, configWith(func(c *Config) { c.IPRateLimit = 100000 }))
	sandbox := e.newKey(e.acct.ID, []string{"*"}, true, nil)
	tpl := e.do("POST", "/v1/templates", e.key, `{"name":"Welcome","subject":"Hi","text":"Hello"}`).want(t, 201).json(t)
	e.do("PUT", "/v1/templates/"+tpl["id"].(string), e.key, `{"name":"Welcome","subject":"Hi","text":"Hello again"}`).want(t, 200)
	msg := e.do("POST", "/v1/messages", sandbox, `{"from":"a@acme.test","to":["b@example.com"],"subject":"hi","text":"hello"}`).want(t, 202).json(t)
	hook := e.do("POST", "/v1/webhooks", e.key, `{"url":"https://93.184.216.34/hook","events":["message.sent"]}`).want(t, 201).json(t)
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"ann@example.com","stream":"broadcast"}`).want(t, 201)

	for _, c := range []struct{ method, path, key, code string }{
		{"GET", "/v1/templates/" + tpl["id"].(string) + "?version=%zz", e.key, "VALIDATION_ERROR"},
		{"GET", "/v1/analytics/summary?from=%zz", e.key, "VALIDATION_ERROR"},
		{"GET", "/v1/analytics/summary?to=2026-11-01;campaign_id=x", e.key, "VALIDATION_ERROR"},
		{"GET", "/v1/suppressions/export?stream=%zz", e.key, "VALIDATION_ERROR"},
		{"DELETE", "/v1/suppressions/ann@example.com?stream=%zz", e.key, "VALIDATION_ERROR"},
		{"GET", "/v1/grader/history?per_page=%zz", e.key, "INVALID_INPUT"},
		{"GET", "/v1/grader/history?page=%zz", e.key, "INVALID_INPUT"},
		{"GET", "/v1/messages/" + msg["id"].(string) + "/raw?recipient=%zz", sandbox, "VALIDATION_ERROR"},
		{"GET", "/v1/messages?status=%zz", sandbox, "VALIDATION_ERROR"},
		{"GET", "/v1/messages?status=lost&tag=%zz", sandbox, "VALIDATION_ERROR"},
		{"GET", "/v1/events?type=%zz", sandbox, "VALIDATION_ERROR"},
		{"GET", "/v1/webhooks/" + hook["id"].(string) + "/deliveries?status=lost&x=%zz", e.key, "VALIDATION_ERROR"},
		{"GET", "/v1/suppressions?limit=%zz", e.key, "VALIDATION_ERROR"},
	} {
		r := e.do(c.method, c.path, c.key, nil)
		if r.StatusCode != 400 || r.code(t) != c.code {
			t.Errorf("%s %s: %d %s, want 400 %s", c.method, c.path, r.StatusCode, r.body, c.code)
			continue
		}
		if d := errDetails(t, r); d["field"] != "query" || d["reason"] == nil {
			t.Errorf("%s %s: details %v, want field query and a reason", c.method, c.path, d)
		}
	}
	// The refused delete deleted nothing.
	if list := e.do("GET", "/v1/suppressions", e.key, nil).want(t, 200).json(t)["data"].([]any); len(list) != 1 {
		t.Errorf("suppressions after a refused delete: %v", list)
	}
	// Well-formed, the same routes answer.
	e.do("GET", "/v1/templates/"+tpl["id"].(string)+"?version=1", e.key, nil).want(t, 200)
	e.do("GET", "/v1/analytics/summary?from=2026-11-01", e.key, nil).want(t, 200)
	e.do("GET", "/v1/suppressions/export?stream=broadcast", e.key, nil).want(t, 200)
	e.do("GET", "/v1/grader/history?per_page=5", e.key, nil).want(t, 200)
	e.do("GET", "/v1/messages/"+msg["id"].(string)+"/raw?recipient=b%40example.com", sandbox, nil).want(t, 200)
	e.do("DELETE", "/v1/suppressions/ann@example.com?stream=broadcast", e.key, nil).want(t, 204)
}
