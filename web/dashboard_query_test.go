package web

import (
	"strings"
	"testing"
)

// TestDashboardMalformedQueryString: the dashboard's pages that read their
// query string refuse one they cannot parse, on the error page with the
// API's reason, instead of showing what they show without it: another
// recipient's source, every stream's export, the newest template version,
// the first page of the grader's history.
func TestDashboardMalformedQueryString(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.verifiedDomain("acme.test")
	msg := e.do("POST", "/v1/messages", e.key, `{"from":"a@acme.test","to":["b@example.com"],"subject":"hi","text":"hello"}`).want(t, 202).json(t)
	tpl := e.do("POST", "/v1/templates", e.key, `{"name":"Welcome","subject":"Hi","text":"Hello"}`).want(t, 201).json(t)
	ann := e.loggedIn(e.acct, "ann@example.com", "owner")

	for _, c := range []struct{ path, good string }{
		{"/dashboard/messages/" + msg["id"].(string) + "/source?recipient=", "b%40example.com"},
		{"/dashboard/messages/" + msg["id"].(string) + "/raw?recipient=", "b%40example.com"},
		{"/dashboard/suppressions/export?stream=", "broadcast"},
		{"/dashboard/templates/" + tpl["id"].(string) + "?version=", "1"},
		{"/dashboard/grader?page=", "1"},
	} {
		if p := ann.get(c.path + "%zz"); p.StatusCode != 400 || !strings.Contains(p.body, "malformed query string") {
			t.Errorf("%s%%zz: %d, want 400 saying the query string is malformed: %.300s", c.path, p.StatusCode, p.body)
		}
		wantStatus(t, c.path+c.good, ann.get(c.path+c.good), 200)
	}
}
