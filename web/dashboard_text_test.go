package web

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"mailbolt/app"
	"mailbolt/storage"
)

// Every dashboard form that stores what it posts refuses a value that is
// not UTF-8 in its own error display, naming the field, as the API
// refuses such a body, and stores nothing: the use cases stored U+FFFD in
// place of the bytes (a template's name, a key's name), or worse (a
// domain as the punycode of U+FFFD), or refused it for something else (no
// address). The form shown again, and its page, are UTF-8.
func TestDashboardFormsRefuseWhatIsNotText(t *testing.T) {
	e := newGraderEnv(t, dashConfig(nil), nil)
	own := e.loggedIn(e.acct, "own@example.com", "owner")
	op, err := e.app.OperatorIn(e.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	tpl, _, err := e.app.CreateTemplate(op, templateForm{Name: "welcome", Subject: "Hi", HTML: "<p>Hi</p>"}.input())
	if err != nil {
		t.Fatal(err)
	}
	hook, err := e.app.CreateWebhook(context.Background(), op, app.WebhookInput{URL: "http://127.0.0.1:9/hook", Events: app.EventTypes[:1]})
	if err != nil {
		t.Fatal(err)
	}
	event := app.EventTypes[0]
	editTpl, editHook := "/dashboard/templates/"+tpl.ID, "/dashboard/webhooks/"+hook.Webhook.ID
	// stored counts what the forms could store: every change but the
	// grader's writes the audit log.
	stored := func() [2]int {
		t.Helper()
		_, _, audited, err := e.app.AuditLog(op, storage.ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, graded, err := e.app.GraderHistory(op, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return [2]int{audited, graded}
	}
	raw := "From: News <news@good.test>\r\nTo: someone@example.test\r\nSubject: News\r\n\r\nHello\r\n"

	for _, c := range []struct {
		what, from, path string
		form             url.Values
		csv              string // a file to upload in place of form
		want             string // the error shown
		shown            string // the form shown again, when it is
	}{
		{"a new template's name", "/dashboard/templates", "/dashboard/templates",
			url.Values{"name": {"Wel\xffcome"}, "subject": {"Hi"}, "html": {"<p>Hi</p>"}}, "", "name: must be valid UTF-8", `value="Wel` + "\uFFFD" + `come"`},
		{"a new template's html", "/dashboard/templates", "/dashboard/templates",
			url.Values{"name": {"news"}, "subject": {"Hi"}, "html": {"<p>\xe2\x82</p>"}}, "", "html: must be valid UTF-8", ""},
		{"a template's subject", editTpl, editTpl,
			url.Values{"name": {"welcome"}, "subject": {"Hi \xc0\xaf"}, "html": {"<p>Hi</p>"}}, "", "subject: must be valid UTF-8", `value="Hi ` + "\uFFFD" + `"`},
		{"a template's text", editTpl, editTpl,
			url.Values{"name": {"welcome"}, "subject": {"Hi"}, "html": {"<p>Hi</p>"}, "text": {"Hi\x80"}}, "", "text: must be valid UTF-8", ""},
		{"a domain", "/dashboard/domains", "/dashboard/domains",
			url.Values{"name": {"ex\xffample.com"}}, "", "name: must be valid UTF-8", `value="ex` + "\uFFFD" + `ample.com"`},
		{"a new webhook's description", "/dashboard/webhooks", "/dashboard/webhooks",
			url.Values{"url": {"http://127.0.0.1:9/new"}, "events": {event}, "description": {"Ops \xfe"}}, "", "description: must be valid UTF-8", "Ops \uFFFD"},
		{"a new webhook's URL", "/dashboard/webhooks", "/dashboard/webhooks",
			url.Values{"url": {"http://127.0.0.1:9/n\xffw"}, "events": {event}}, "", "url: must be valid UTF-8", ""},
		{"a webhook's description", editHook, editHook,
			url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {event}, "description": {"\xff"}, "enabled": {"1"}}, "", "description: must be valid UTF-8", ""},
		{"an API key's name", "/dashboard/api-keys", "/dashboard/api-keys",
			url.Values{"name": {"C\xffI"}, "scopes": {"*"}}, "", "name: must be valid UTF-8", `value="C` + "\uFFFD" + `I"`},
		{"an API key's scope", "/dashboard/api-keys", "/dashboard/api-keys",
			url.Values{"name": {"CI"}, "scopes": {"emails:send", "x\xc3"}}, "", "scopes: must be valid UTF-8", ""},
		{"an invitation's address", "/dashboard/team", "/dashboard/team/invite",
			url.Values{"email": {"ann@exa\xffmple.com"}, "role": {"viewer"}}, "", "email: must be valid UTF-8", ""},
		{"a suppression's address", "/dashboard/suppressions", "/dashboard/suppressions",
			url.Values{"recipient": {"ann@exa\xffmple.com"}}, "", "recipient: must be valid UTF-8", ""},
		{"a suppressions file", "/dashboard/suppressions", "/dashboard/suppressions/import",
			nil, "recipient,reason\nann@example.com,manual\nm\xfcller@example.com,manual\n", "line 3: recipient: must be valid UTF-8", ""},
		{"an email for the grader", "/dashboard/grader", "/dashboard/grader/submit",
			url.Values{"raw": {raw + "Gr\xfc\xdfe\r\n"}}, "", "raw: must be valid UTF-8", "Gr\uFFFDe"},
		{"the grader's MAIL FROM", "/dashboard/grader", "/dashboard/grader/submit",
			url.Values{"raw": {raw}, "mail_from": {"bounce@go\xffod.test"}}, "", "mail_from: must be valid UTF-8", ""},
	} {
		t.Run(c.what, func(t *testing.T) {
			before := stored()
			var p pageReply
			if c.csv != "" {
				p = own.upload(c.from, c.path, nil, "file", "list.csv", c.csv)
			} else {
				p = own.post(c.from, c.path, c.form)
			}
			wantStatus(t, c.what, p, 400)
			wantIn(t, c.what, p, `<p class="error" role="alert">`+c.want)
			if c.shown != "" {
				wantIn(t, c.what+", shown again", p, c.shown)
			}
			if !utf8.ValidString(p.body) {
				t.Errorf("%s: the page is not UTF-8: %q", c.what, p.body)
			}
			if after := stored(); after != before {
				t.Errorf("%s: stored something: audit log and grader results %v, before %v", c.what, after, before)
			}
		})
	}

	// What is text still goes through: U+FFFD itself is a character.
	p := own.post("/dashboard/api-keys", "/dashboard/api-keys", url.Values{"name": {"CI \uFFFD"}, "scopes": {"*"}})
	wantStatus(t, "a key named with U+FFFD", p, 200)
	if !strings.Contains(p.body, "<code>svc_live_") {
		t.Errorf("a key named with U+FFFD was not made: %s", p.body)
	}
}
