package web

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"mailbolt/app"
	"mailbolt/storage"
)

// upload posts a multipart form with one file, with the CSRF token of the
// page at from.
func (b *browser) upload(from, path string, fields url.Values, file, name, content string) pageReply {
	b.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("csrf", b.csrf(from))
	for k, vs := range fields {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	fw, _ := mw.CreateFormFile(file, name)
	io.WriteString(fw, content)
	mw.Close()
	req, _ := http.NewRequest("POST", b.base+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return pageReply{resp, string(data)}
}

// loggedIn is a browser logged in as a new person of acct with role.
func (e *env) loggedIn(acct storage.Account, email, role string) *browser {
	e.t.Helper()
	e.person(acct, email, role)
	b := e.browser()
	wantRedirect(e.t, "login of "+email, b.login(email, goodPassword), "/dashboard/")
	return b
}

func wantIn(t *testing.T, what string, p pageReply, parts ...string) {
	t.Helper()
	for _, s := range parts {
		if !strings.Contains(p.body, s) {
			t.Errorf("%s: the page lacks %q: %s", what, s, p.body)
		}
	}
}

var keySecretShown = regexp.MustCompile(`<code>(svc_(?:live|test)_[0-9A-Za-z]+)</code>`)

func TestDashboardAPIKeys(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	dev := e.loggedIn(e.acct, "dev@example.com", "developer")
	vic := e.loggedIn(e.acct, "vic@example.com", "viewer")

	p := dev.get("/dashboard/api-keys")
	wantStatus(t, "the keys page", p, 200)
	wantIn(t, "the keys page", p, "Create a key", `value="messages:write"`)
	if strings.Contains(p.body, `value="team:write"`) || strings.Contains(p.body, `value="*"`) {
		t.Errorf("a developer is offered scopes outside its role: %s", p.body)
	}
	made := dev.post("/dashboard/api-keys", "/dashboard/api-keys",
		url.Values{"name": {"ci"}, "mode": {"test"}, "scopes": {"messages:write", "messages:read"}})
	wantStatus(t, "creating a key", made, 200)
	m := keySecretShown.FindStringSubmatch(made.body)
	if m == nil || !strings.HasPrefix(m[1], app.TestPrefix) {
		t.Fatalf("the new key's secret is not shown: %s", made.body)
	}
	// The secret works with the API, with the scopes ticked and no others.
	if r := e.do("GET", "/v1/messages", m[1], nil); r.StatusCode != 200 {
		t.Errorf("the new key lists messages: %d", r.StatusCode)
	}
	if r := e.do("GET", "/v1/suppressions", m[1], nil); r.StatusCode != 403 {
		t.Errorf("the new key reads suppressions, a scope it was not given: %d", r.StatusCode)
	}
	// Shown once: the list has the prefix, never the secret.
	list := dev.get("/dashboard/api-keys")
	if strings.Contains(list.body, m[1]) || !strings.Contains(list.body, m[1][:len(app.LivePrefix)+8]) {
		t.Errorf("the list shows the secret or lacks the prefix: %s", list.body)
	}
	// A scope outside the role is refused by the use case, as by the API.
	wantStatus(t, "a scope outside the role", dev.post("/dashboard/api-keys", "/dashboard/api-keys",
		url.Values{"name": {"x"}, "scopes": {"team:write"}}), 403)
	wantStatus(t, "no scope", dev.post("/dashboard/api-keys", "/dashboard/api-keys", url.Values{"name": {"x"}}), 400)
	bad := dev.post("/dashboard/api-keys", "/dashboard/api-keys", url.Values{"name": {""}, "scopes": {"messages:read"}})
	wantStatus(t, "no name", bad, 400)
	wantIn(t, "the refused form", bad, `value="messages:read" checked`)

	// A viewer reads the list but neither creates nor revokes.
	vp := vic.get("/dashboard/api-keys")
	wantStatus(t, "the viewer's keys page", vp, 200)
	if strings.Contains(vp.body, "Create a key") || strings.Contains(vp.body, "/dashboard/api-keys/revoke") {
		t.Errorf("the viewer is offered changes: %s", vp.body)
	}
	wantStatus(t, "the viewer creates", vic.post("/dashboard/api-keys", "/dashboard/api-keys",
		url.Values{"name": {"v"}, "scopes": {"messages:read"}}), 403)
	keys, _, _, _ := e.app.ListKeys(mustOperator(t, e), storage.ListOptions{Limit: 100})
	var id string
	for _, k := range keys {
		if k.Name == "ci" {
			id = k.ID
		}
	}
	wantStatus(t, "the viewer revokes", vic.post("/dashboard/api-keys", "/dashboard/api-keys/revoke", url.Values{"key": {id}}), 403)
	// No CSRF token, no change.
	wantStatus(t, "revoking without a token", dev.do("POST", "/dashboard/api-keys/revoke", url.Values{"key": {id}}), 403)
	// Another account's key is not found.
	other, _ := e.account("other", "enterprise", 1000)
	zed := e.loggedIn(other, "zed@example.com", "owner")
	wantStatus(t, "revoking another account's key", zed.post("/dashboard/api-keys", "/dashboard/api-keys/revoke", url.Values{"key": {id}}), 404)
	if strings.Contains(zed.get("/dashboard/api-keys").body, ">ci<") {
		t.Error("another account lists acme's keys")
	}

	wantRedirect(t, "revoking", dev.post("/dashboard/api-keys", "/dashboard/api-keys/revoke", url.Values{"key": {id}}), "/dashboard/api-keys")
	if r := e.do("GET", "/v1/messages", m[1], nil); r.StatusCode != 401 {
		t.Errorf("the revoked key still works: %d", r.StatusCode)
	}
	wantIn(t, "the list after revoking", dev.get("/dashboard/api-keys"), "revoked ")
}

func mustOperator(t *testing.T, e *env) app.Principal {
	t.Helper()
	op, err := e.app.OperatorIn(e.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestDashboardSuppressions(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	dev := e.loggedIn(e.acct, "dev@example.com", "developer")
	vic := e.loggedIn(e.acct, "vic@example.com", "viewer")
	const page = "/dashboard/suppressions"

	wantRedirect(t, "adding", dev.post(page, page, url.Values{"recipient": {"A@Example.com"}, "reason": {"manual"}}), page)
	wantRedirect(t, "adding for one stream", dev.post(page, page,
		url.Values{"recipient": {"b@example.com"}, "reason": {"unsubscribe"}, "stream": {"broadcast"}}), page)
	wantIn(t, "the list", dev.get(page), "a@example.com", "b@example.com", "every stream", "broadcast", "2 in all")
	bad := dev.post(page, page, url.Values{"recipient": {"not an address"}})
	wantStatus(t, "a bad address", bad, 400)
	wantIn(t, "a bad address", bad, "recipient: must be a bare email address")

	// Search by exact address.
	found := dev.get(page + "?recipient=B@example.com")
	wantIn(t, "the search", found, "b@example.com", "broadcast")
	if strings.Contains(found.body, "a@example.com") {
		t.Errorf("the search shows other addresses: %s", found.body)
	}
	wantIn(t, "a search that finds none", dev.get(page+"?recipient=c@example.com"), "This address is not suppressed.")

	// Cursor pagination.
	for _, a := range []string{"c", "d", "e"} {
		e.app.AddSuppression(mustOperator(t, e), a+"@example.com", "manual", "")
	}
	first := dev.get(page + "?limit=2")
	m := regexp.MustCompile(`href="/dashboard/suppressions\?cursor=([^"]+)"`).FindStringSubmatch(first.body)
	if m == nil || strings.Contains(first.body, "c@example.com") {
		t.Fatalf("the first page of two: %s", first.body)
	}
	wantIn(t, "the second page", dev.get(page+"?limit=2&cursor="+m[1]), "c@example.com", "d@example.com")

	// Import: all or nothing, a bad row named by its line.
	refused := dev.upload(page, page+"/import", nil, "file", "list.csv", "recipient,reason\nf@example.com,manual\nnope,manual\n")
	wantStatus(t, "a bad import", refused, 400)
	wantIn(t, "a bad import", refused, "line 3:")
	if strings.Contains(dev.get(page+"?recipient=f@example.com").body, "<td>f@example.com</td>") {
		t.Error("a refused import added rows")
	}
	ok := dev.upload(page, page+"/import", nil, "file", "list.csv", "recipient,reason,stream\nf@example.com,manual,\na@example.com,manual,\n")
	wantStatus(t, "an import", ok, 200)
	wantIn(t, "an import", ok, "1 added, 1 already present")

	// Export: the list as CSV.
	ex := dev.get(page + "/export")
	wantStatus(t, "export", ex, 200)
	if ct := ex.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") || !strings.HasPrefix(ex.body, "recipient,") ||
		!strings.Contains(ex.body, "f@example.com") || strings.Count(ex.body, "\n") != 7 {
		t.Errorf("export %s: %q", ct, ex.body)
	}
	only := dev.get(page + "/export?stream=broadcast")
	if strings.Count(only.body, "\n") != 2 || !strings.Contains(only.body, "b@example.com") {
		t.Errorf("export of broadcast: %q", only.body)
	}
	wantStatus(t, "export of a bad stream", dev.get(page+"/export?stream=nope"), 400)

	// Remove: one stream's entry, or every entry.
	wantRedirect(t, "removing", dev.post(page, page+"/remove", url.Values{"recipient": {"b@example.com"}, "stream": {"broadcast"}}), page)
	wantIn(t, "after removing", dev.get(page+"?recipient=b@example.com"), "This address is not suppressed.")
	wantStatus(t, "removing again", dev.post(page, page+"/remove", url.Values{"recipient": {"b@example.com"}}), 404)

	// The viewer reads, exports, and changes nothing.
	wantStatus(t, "the viewer's page", vic.get(page), 200)
	wantStatus(t, "the viewer's export", vic.get(page+"/export"), 200)
	wantStatus(t, "the viewer adds", vic.post(page, page, url.Values{"recipient": {"v@example.com"}}), 403)
	wantStatus(t, "the viewer removes", vic.post(page, page+"/remove", url.Values{"recipient": {"a@example.com"}}), 403)
	wantStatus(t, "the viewer imports", vic.upload(page, page+"/import", nil, "file", "x.csv", "recipient\nv@example.com\n"), 403)
	// Without the CSRF token, nothing.
	wantStatus(t, "adding without a token", dev.do("POST", page, url.Values{"recipient": {"z@example.com"}}), 403)
	// Another account sees none of it and removes none of it.
	other, _ := e.account("other", "enterprise", 1000)
	zed := e.loggedIn(other, "zed@example.com", "owner")
	if strings.Contains(zed.get(page).body, "a@example.com") || strings.Contains(zed.get(page+"?recipient=a@example.com").body, "<td>a@example.com") {
		t.Error("another account sees acme's suppressions")
	}
	wantStatus(t, "removing another account's suppression", zed.post(page, page+"/remove", url.Values{"recipient": {"a@example.com"}}), 404)
}

func TestDashboardTemplates(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	dev := e.loggedIn(e.acct, "dev@example.com", "developer")
	vic := e.loggedIn(e.acct, "vic@example.com", "viewer")
	const list = "/dashboard/templates"

	bad := dev.post(list, list, url.Values{"name": {"welcome"}, "subject": {"Hi"}, "html": {"<p>{{#name}}</p>"}})
	wantStatus(t, "a template that does not parse", bad, 400)
	wantIn(t, "a template that does not parse", bad, "does not parse", "&lt;p&gt;{{#name}}&lt;/p&gt;")
	made := dev.post(list, list, url.Values{"name": {"welcome"}, "subject": {"Hi {{name}}"},
		"html": {"<p>Hello {{name}}</p>"}, "text": {"Hello {{name}}"}})
	if made.StatusCode != 303 || !strings.HasPrefix(made.Header.Get("Location"), "/dashboard/templates/") {
		t.Fatalf("creating: %d %s", made.StatusCode, made.body)
	}
	edit := made.Header.Get("Location")
	id := strings.TrimPrefix(edit, "/dashboard/templates/")
	wantIn(t, "the list", dev.get(list), "welcome", id)
	wantIn(t, "the editor", dev.get(edit), "Save as version 2", "&lt;p&gt;Hello {{name}}&lt;/p&gt;")

	// Saving makes a new version; the old one stays readable.
	wantRedirect(t, "saving", dev.post(edit, edit, url.Values{"name": {"welcome"}, "subject": {"Hello {{name}}"},
		"html": {"<p>Welcome, {{name}}!</p>"}}), edit)
	v2 := dev.get(edit)
	wantIn(t, "version 2", v2, "Save as version 3", "Welcome, {{name}}!", `?version=1">1</a>`)
	wantIn(t, "version 1", dev.get(edit+"?version=1"), "Hello {{name}}</textarea>", "an older one")

	// The preview renders through the render use case, HTML escaped as the API escapes it.
	pv := dev.post(edit, edit+"/preview", url.Values{"data": {`{"name": "<Ann>"}`}, "version": {"2"}})
	wantStatus(t, "the preview", pv, 200)
	wantIn(t, "the preview", pv, "Subject:</strong> Hello &lt;Ann&gt;", "Welcome, &amp;lt;Ann&amp;gt;!")
	wantIn(t, "an older version's preview", dev.post(edit, edit+"/preview", url.Values{"data": {`{"name": "Bo"}`}, "version": {"1"}}),
		"Hello Bo</pre>")
	wantStatus(t, "a preview with bad data", dev.post(edit, edit+"/preview", url.Values{"data": {`[1]`}}), 400)

	// The live preview (preview.js): the same route answers JSON when asked.
	// A post with the editor's fields renders that unsaved draft, escaped as
	// the API escapes; nothing is stored.
	page := dev.get(edit)
	wantIn(t, "the editor's live preview", page, `<iframe id="live-html" sandbox referrerpolicy="no-referrer"`,
		`<script src="/dashboard/assets/preview.js" defer></script>`, `id="template-editor"`, `id="preview-form"`)
	if strings.Contains(page.body, "allow-scripts") || strings.Contains(page.body, "allow-same-origin") || strings.Contains(page.body, "<script>") {
		t.Errorf("the live preview's frame is not sandboxed, or the page has inline script: %s", page.body)
	}
	js := dev.get("/dashboard/assets/preview.js")
	if js.StatusCode != 200 || !strings.Contains(js.Header.Get("Content-Type"), "javascript") || !strings.Contains(js.body, "srcdoc") {
		t.Errorf("preview.js: %d %s", js.StatusCode, js.Header.Get("Content-Type"))
	}
	previewJSON := func(who *browser, from string, form url.Values) (pageReply, map[string]any) {
		t.Helper()
		saved := who.hdr
		who.hdr = []string{"Accept", "application/json"}
		defer func() { who.hdr = saved }()
		form.Set("csrf", who.csrf(from))
		r := who.do("POST", edit+"/preview", form)
		var v map[string]any
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			if err := json.Unmarshal([]byte(r.body), &v); err != nil {
				t.Fatalf("the JSON preview: %v: %s", err, r.body)
			}
		}
		return r, v
	}
	draft := url.Values{"data": {`{"name": "<Ann>"}`}, "version": {"2"}, "subject": {"Hey {{name}}"},
		"html": {`<p>Hey {{name}}</p><script>alert(1)</script>`}, "text": {"Hey {{name}}"}}
	r, v := previewJSON(dev, edit, draft)
	wantStatus(t, "the JSON preview of a draft", r, 200)
	if v["subject"] != "Hey <Ann>" || v["html"] != "<p>Hey &lt;Ann&gt;</p><script>alert(1)</script>" || v["text"] != "Hey <Ann>" || v["version"] != 0.0 {
		t.Errorf("the JSON preview of a draft: %v", v)
	}
	if r.Header.Get("Content-Security-Policy") == "" || r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the JSON preview's headers: %v", r.Header)
	}
	wantIn(t, "after a draft preview", dev.get(edit), "Save as version 3", "Welcome, {{name}}!")
	// Without the editor's fields: a stored version, as the form renders it.
	if r, v := previewJSON(dev, edit, url.Values{"data": {`{"name": "Bo"}`}, "version": {"1"}}); r.StatusCode != 200 || v["text"] != "Hello Bo" || v["version"] != 1.0 {
		t.Errorf("the JSON preview of version 1: %d %v", r.StatusCode, v)
	}
	// Errors come in the envelope.
	for _, c := range []struct {
		what   string
		form   url.Values
		status int
		code   string
	}{
		{"bad data", url.Values{"data": {"[1]"}, "html": {"x"}}, 400, "VALIDATION_ERROR"},
		{"a draft that does not parse", url.Values{"html": {"<p>{{#name}}</p>"}}, 400, "INVALID_TEMPLATE"},
		{"a strict draft without its data", url.Values{"html": {"{{name}}"}, "strict": {"1"}}, 422, "TEMPLATE_RENDER_FAILED"},
	} {
		r, v := previewJSON(dev, edit, c.form)
		if env, _ := v["error"].(map[string]any); r.StatusCode != c.status || env["code"] != c.code {
			t.Errorf("the JSON preview of %s: %d %s", c.what, r.StatusCode, r.body)
		}
	}
	// The viewer renders saved versions only; drafts are the editor's.
	if r, v := previewJSON(vic, edit, url.Values{"data": {`{"name": "V"}`}}); r.StatusCode != 200 || v["html"] != "<p>Welcome, V!</p>" {
		t.Errorf("the viewer's JSON preview: %d %s", r.StatusCode, r.body)
	}
	if r, v := previewJSON(vic, edit, url.Values{"data": {"{}"}, "html": {"<p>mine</p>"}}); r.StatusCode != 403 || strings.Contains(r.body, "<p>mine</p>") || v["error"] == nil {
		t.Errorf("the viewer's draft preview: %d %s", r.StatusCode, r.body)
	}
	// Without the CSRF token, nothing is rendered.
	dev.hdr = []string{"Accept", "application/json"}
	noToken := dev.do("POST", edit+"/preview", url.Values{"html": {"<p>{{name}} tokenless</p>"}, "data": {`{"name": "Zed"}`}})
	dev.hdr = nil
	if noToken.StatusCode != 403 || strings.Contains(noToken.body, "Zed tokenless") {
		t.Errorf("a JSON preview without a token: %d %s", noToken.StatusCode, noToken.body)
	}

	// The viewer previews but neither creates nor saves.
	vp := vic.get(edit)
	wantStatus(t, "the viewer's editor", vp, 200)
	if strings.Contains(vp.body, "Save as version") || strings.Contains(vic.get(list).body, "Create a template") {
		t.Errorf("the viewer is offered changes: %s", vp.body)
	}
	wantStatus(t, "the viewer previews", vic.post(edit, edit+"/preview", url.Values{"data": {`{"name": "V"}`}}), 200)
	wantStatus(t, "the viewer saves", vic.post(edit, edit, url.Values{"name": {"x"}, "html": {"x"}}), 403)
	wantStatus(t, "the viewer creates", vic.post(list, list, url.Values{"name": {"x"}, "html": {"x"}}), 403)
	wantStatus(t, "saving without a token", dev.do("POST", edit, url.Values{"name": {"x"}, "html": {"x"}}), 403)
	// Another account's template is not found.
	other, _ := e.account("other", "enterprise", 1000)
	zed := e.loggedIn(other, "zed@example.com", "owner")
	wantStatus(t, "another account's editor", zed.get(edit), 404)
	wantStatus(t, "another account's save", zed.post(list, edit, url.Values{"name": {"x"}, "html": {"x"}}), 404)
	wantStatus(t, "another account's preview", zed.post(list, edit+"/preview", url.Values{"data": {"{}"}}), 404)
	if r, _ := previewJSON(zed, list, url.Values{"data": {"{}"}, "html": {"<p>x</p>"}}); r.StatusCode != 404 {
		t.Errorf("another account's JSON preview: %d %s", r.StatusCode, r.body)
	}
}

func TestDashboardIPsAndAccount(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	vic := e.loggedIn(e.acct, "vic@example.com", "viewer")
	other, _ := e.account("other", "enterprise", 1000)
	e.addIP("192.0.2.2", "txn", "10,20", e.acct.ID)
	e.addIP("192.0.2.3", "txn", "standard", other.ID)
	e.addIP("192.0.2.9", "shared", "", "")
	e.send(e.acct.ID, 4)

	p := vic.get("/dashboard/ips")
	wantStatus(t, "the IPs page", p, 200)
	wantIn(t, "the IPs page", p, "192.0.2.2", "day 1 of 2", "4 sent of 10",
		`aria-label="192.0.2.2: warm-up day 1 of 2; 4 sent today of a cap of 10"`,
		`width="120.0" height="14"`, // 4 of 10: 40% of 300
		`width="150.0" height="8"`,  // day 1 of 2
		"<td>shared</td>")
	if strings.Contains(p.body, "192.0.2.3") {
		t.Errorf("another account's IP is listed: %s", p.body)
	}
	if strings.Contains(strings.ToLower(p.body), "<script") {
		t.Error("the IPs page has script")
	}

	a := vic.get("/dashboard/account")
	wantStatus(t, "the account page", a, 200)
	l := app.Limits(e.acct)
	wantIn(t, "the account page", a, e.acct.Name, e.acct.ID, e.acct.Plan,
		"<td>"+itoa(l.RateLimit)+"</td>", "<td>"+itoa(l.BatchSize)+"</td>")
	zed := e.loggedIn(other, "zed@example.com", "owner")
	if b := zed.get("/dashboard/account").body; strings.Contains(b, e.acct.ID) || !strings.Contains(b, "<td>1000</td>") {
		t.Errorf("the other account's page: %s", b)
	}
	// Without a session, neither page.
	wantRedirect(t, "the IPs page logged out", e.browser().get("/dashboard/ips"), "/dashboard/login")
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestDashboardGrader(t *testing.T) {
	e := newGraderEnv(t, dashConfig(func(c *Config) { c.GraderRateLimit = 3 }), nil)
	dev := e.loggedIn(e.acct, "dev@example.com", "developer")
	vic := e.loggedIn(e.acct, "vic@example.com", "viewer")
	const page = "/dashboard/grader"

	c := dev.post(page, page, url.Values{"domain": {"good.test"}})
	wantStatus(t, "a domain check", c, 200)
	wantIn(t, "a domain check", c, "good.test: grade ", "dns health", "Recommendations")

	raw := "From: News <news@good.test>\r\nTo: someone@example.test\r\nSubject: Your November newsletter\r\n" +
		"Message-ID: <1@good.test>\r\nDate: Thu, 26 Nov 2026 10:00:00 +0000\r\nList-Unsubscribe: <https://good.test/u/1>\r\n\r\n" +
		strings.Repeat("Here is what happened this month at Good. ", 10) + "\r\n"
	sub := dev.post(page, page+"/submit", url.Values{"raw": {raw}, "sender_ip": {"127.0.0.1"}, "helo_hostname": {"mx.good.test"}, "mail_from": {"bounce@good.test"}})
	if sub.StatusCode != 303 || !strings.HasPrefix(sub.Header.Get("Location"), page+"/results/") {
		t.Fatalf("analysing an email: %d %s", sub.StatusCode, sub.body)
	}
	result := sub.Header.Get("Location")
	id := strings.TrimPrefix(result, page+"/results/")
	shown := dev.get(result)
	wantStatus(t, "the result", shown, 200)
	wantIn(t, "the result", shown, "good.test: grade ", "<strong>SPF</strong> pass", "<strong>DMARC</strong>", id)
	wantIn(t, "the history", vic.get(page), `href="/dashboard/grader/results/`+id+`"`)
	wantStatus(t, "an empty message", dev.post(page, page+"/submit", url.Values{"raw": {"  "}}), 400)

	// The viewer checks domains and reads results, but analyses nothing (grader:write).
	if strings.Contains(vic.get(page).body, "Analyse a whole email") {
		t.Error("the viewer is offered the analysis")
	}
	wantStatus(t, "the viewer analyses", vic.post(page, page+"/submit", url.Values{"raw": {raw}}), 403)
	wantStatus(t, "analysing without a token", dev.do("POST", page+"/submit", url.Values{"raw": {raw}}), 403)
	other, _ := e.account("other", "enterprise", 1000)
	zed := e.loggedIn(other, "zed@example.com", "owner")
	wantStatus(t, "another account's result", zed.get(result), 404)
	if strings.Contains(zed.get(page).body, id) {
		t.Error("another account's history lists the result")
	}

	// The public page: no login, a form token, and the limit of POST
	// /v1/grader/check shared with the API and the signed-in form (one
	// check used above; the limit is 3).
	anon := e.browser()
	form := anon.get(page + "/check")
	wantStatus(t, "the public page", form, 200)
	if strings.Contains(form.body, "Log out") {
		t.Error("the public page shows a session's header")
	}
	wantStatus(t, "a public check without its token", anon.do("POST", page+"/check", url.Values{"domain": {"good.test"}}), 403)
	wantIn(t, "a public check", anon.post(page+"/check", page+"/check", url.Values{"domain": {"good.test"}}), "good.test: grade ")
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}).want(t, 200)
	over := anon.post(page+"/check", page+"/check", url.Values{"domain": {"good.test"}})
	wantStatus(t, "a public check over the limit", over, 429)
	if over.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}).want(t, 429, "RATE_LIMITED")
	wantStatus(t, "the signed-in check over the limit", dev.post(page, page, url.Values{"domain": {"good.test"}}), 429)
}

func TestDashboardGraderDisabled(t *testing.T) {
	e := newGraderEnv(t, dashConfig(nil), func(o *app.Options) { o.Grader.Disabled = true })
	b := e.loggedIn(e.acct, "ann@example.com", "owner")
	wantStatus(t, "the grader page", b.get("/dashboard/grader"), 503)
	wantStatus(t, "the public check page", e.browser().get("/dashboard/grader/check"), 503)
	wantStatus(t, "a check", b.post("/dashboard/", "/dashboard/grader", url.Values{"domain": {"good.test"}}), 503)
}
