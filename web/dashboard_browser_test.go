package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/audits"
	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"mailbolt/app"
)

// The dashboard in a real headless Chromium (docs/dashboard.md): what a
// person does, clicked through, on every page watching for script errors
// and Content-Security-Policy violations. The test skips only when no
// Chromium is found ($MAILBOLT_CHROMIUM, or chromium on $PATH: Debian's
// package, which .ci/run installs). With $MAILBOLT_SCREENSHOT_DIR set, a
// screenshot of each page is saved there.

// chromiumPath is the Chromium to drive, or "".
func chromiumPath() string {
	if p := os.Getenv("MAILBOLT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chrome is one headless Chromium tab and what it has complained about.
type chrome struct {
	t        *testing.T
	ctx      context.Context
	base     string
	shotDir  string
	mu       sync.Mutex
	problems []string
}

func startChrome(t *testing.T, bin, base string) *chrome {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,                     // containers have no user namespaces for Chromium's sandbox
		chromedp.Flag("no-proxy-server", true), // the test server is on loopback
		chromedp.WindowSize(1024, 700),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	c := &chrome{t: t, base: base, shotDir: os.Getenv("MAILBOLT_SCREENSHOT_DIR")}
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(c.watch))
	// A bound on the whole browser session, so that a hang fails the test.
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	c.ctx = ctx
	if _, err := chromedp.Call(ctx, audits.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("starting Chromium (%s): %v", bin, err)
	}
	c.do("setting the viewport", chromedp.EmulateViewport(1024, 700))
	return c
}

// watch notes the tab's uncaught exceptions, console errors and warnings,
// and log entries of level error or warning or of source security (a CSP
// violation is one; a page or asset answered with 4xx or 5xx is a network
// error), and CSP issues.
func (c *chrome) watch(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		what := d.Text
		if d.Exception != nil {
			what += " " + d.Exception.Description
		}
		c.problem("exception at %s:%d: %s", d.URL, d.LineNumber, what)
	case *runtime.EventConsoleAPICalled:
		switch ev.Type {
		case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
			var args []string
			for _, a := range ev.Args {
				args = append(args, strings.TrimSpace(string(a.Value)+" "+a.Description))
			}
			c.problem("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *log.EventEntryAdded:
		if e := ev.Entry; e.Level == log.EntryLevelError || e.Level == log.EntryLevelWarning || e.Source == log.EntrySourceSecurity {
			c.problem("log %s/%s: %s (%s)", e.Source, e.Level, e.Text, e.URL)
		}
	case *audits.EventIssueAdded:
		if ev.Issue.Code == audits.InspectorIssueCodeContentSecurityPolicyIssue {
			what := "?"
			if d := ev.Issue.Details.ContentSecurityPolicyIssueDetails; d != nil {
				what = fmt.Sprintf("%s (directive %s)", d.ContentSecurityPolicyViolationType, d.ViolatedDirective)
			}
			c.problem("Content Security Policy issue: %s", what)
		}
	}
}

func (c *chrome) problem(format string, args ...any) {
	c.mu.Lock()
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// takeProblems returns and forgets what the browser complained about.
func (c *chrome) takeProblems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.problems
	c.problems = nil
	return p
}

// do runs steps in the tab, or fails the test.
func (c *chrome) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	if err := chromedp.Do(c.ctx, steps...); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// load runs steps that lead to a new page (a link or a button clicked),
// waits until it has loaded, and fails the test unless it answered status.
func (c *chrome) load(what string, status int64, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	resp, err := chromedp.RunResponse(c.ctx, steps...)
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	if resp.Status != status {
		c.t.Fatalf("%s: %s answered %d, want %d", what, resp.URL, resp.Status, status)
	}
}

// open loads path, which must answer 200.
func (c *chrome) open(path string) {
	c.t.Helper()
	c.load("opening "+path, 200, chromedp.Navigate(c.base+path))
}

// text is the visible text of the element sel.
func (c *chrome) text(sel string) string {
	c.t.Helper()
	s, err := chromedp.Run(c.ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		c.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// location is the path (and query) of the page shown.
func (c *chrome) location() string {
	c.t.Helper()
	u, err := chromedp.Run(c.ctx, chromedp.Location())
	if err != nil {
		c.t.Fatalf("reading the location: %v", err)
	}
	return strings.TrimPrefix(u, c.base)
}

// settle makes a round trip to the page, so that what it logged while
// loading has been delivered before the problems are read.
func (c *chrome) settle() {
	c.t.Helper()
	if _, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`document.readyState`)); err != nil {
		c.t.Fatalf("asking the page: %v", err)
	}
}

// checked fails the test if the page shown logged a problem, and saves its
// screenshot as name.png when screenshots are asked for.
func (c *chrome) checked(name string) { c.t.Helper(); c.checkedAt(name, "", "") }

// checkedAt is checked with the page scrolled so that the element sel is at
// block ("start", "center" or "end") of the screenshot.
func (c *chrome) checkedAt(name, sel, block string) {
	c.t.Helper()
	c.settle()
	for _, p := range c.takeProblems() {
		c.t.Errorf("page %s (%s): %s", name, c.location(), p)
	}
	if c.shotDir == "" {
		return
	}
	if sel != "" {
		js := fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: %q})`, sel, block)
		if _, err := chromedp.Run(c.ctx, chromedp.Evaluate[any](js)); err != nil {
			c.t.Fatalf("scrolling to %s: %v", sel, err)
		}
	}
	png, err := chromedp.Run(c.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		c.t.Fatalf("screenshot of %s: %v", name, err)
	}
	if err := os.MkdirAll(c.shotDir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.shotDir, name+".png"), png, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func wantText(t *testing.T, what, got string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s lacks %q: %s", what, p, got)
		}
	}
}

// TestBrowserNoticesProblems shows that the watch on the browser's console
// would see what TestDashboardInBrowser must not: a page under the
// dashboard's CSP with inline script and style, and a script that throws.
func TestBrowserNoticesProblems(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no Chromium found: install Debian's chromium package (.ci/run does) or set MAILBOLT_CHROMIUM")
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dashboardHeaders(w.Header())
		if r.URL.Path == "/throw.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `null.boom();`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>bad</title><body><p style="color:red">inline style</p>
<script>document.title = "inline";</script><script src="/throw.js"></script></body>`)
	}))
	defer bad.Close()
	c := startChrome(t, bin, bad.URL)
	c.open("/")
	c.settle()
	all := strings.Join(c.takeProblems(), "\n")
	for _, want := range []string{"exception", "Content Security Policy", "inline"} {
		if !strings.Contains(all, want) {
			t.Errorf("the watch did not see %q; it saw:\n%s", want, all)
		}
	}
}

func TestDashboardInBrowser(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no Chromium found: install Debian's chromium package (.ci/run does) or set MAILBOLT_CHROMIUM")
	}
	start := time.Now()
	e, sink := deliveringEnv(t) // delivers to a loopback MX; acme.test is verified
	e.runWorkers()
	e.person(e.acct, "ann@example.com", "owner")
	c := startChrome(t, bin, e.srv.URL)
	type css = chromedp.CSS

	// Log in.
	c.open("/dashboard/")
	if loc := c.location(); loc != "/dashboard/login" {
		t.Fatalf("without a session the dashboard shows %s", loc)
	}
	c.checked("login")
	c.load("logging in", 200,
		chromedp.SetValue(css("#email"), "ann@example.com"),
		chromedp.SetValue(css("#password"), goodPassword),
		chromedp.Click(css(`main form button[type="submit"]`)))
	if loc := c.location(); loc != "/dashboard/" {
		t.Fatalf("after logging in: %s", loc)
	}
	wantText(t, "the header", c.text("header.top"), "acme", "ann@example.com (owner)")

	// Send a message through the API; find it in the list and open it.
	id := e.do("POST", "/v1/messages", e.key, map[string]any{
		"from": "news@acme.test", "to": []string{"ann@dest.test"},
		"subject": "Seen in a browser", "text": "Hello from the browser test."}).want(t, 202).json(t)["id"].(string)
	deadline := time.Now().Add(15 * time.Second)
	for len(sink.Messages()) < 1 || e.do("GET", "/v1/messages/"+id, e.key, nil).want(t, 200).json(t)["status"] != "delivered" {
		if time.Now().After(deadline) {
			t.Fatalf("the message was not delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.open("/dashboard/")
	c.checked("overview")
	c.load("opening Messages", 200, chromedp.Click(css(`nav a[href="/dashboard/messages"]`)))
	wantText(t, "the Messages list", c.text("tbody"), "Seen in a browser", "ann@dest.test", "delivered", id)
	c.checked("messages")
	c.load("opening the message", 200, chromedp.Click(css(`a[href="/dashboard/messages/`+id+`"]`)))
	if loc := c.location(); loc != "/dashboard/messages/"+id {
		t.Fatalf("the message's link leads to %s", loc)
	}
	wantText(t, "the message page", c.text("main"), "Seen in a browser", "ann@dest.test", "mx.dest.test", "message.delivered")
	c.checkedAt("message", "main h2", "start")
	c.load("opening the raw source", 200, chromedp.Click(css(`a[href="/dashboard/messages/`+id+`/source?recipient=ann%40dest.test"]`)))
	wantText(t, "the raw source", c.text("main"), "Subject: Seen in a browser", "Hello from the browser test.")
	c.checked("message-source")

	// Add a domain, publish its records in the DNS zone, verify it.
	c.open("/dashboard/domains")
	c.load("adding a domain", 200,
		chromedp.SetValue(css(`form[action="/dashboard/domains"] input[name="name"]`), "mail.acme.test"),
		chromedp.Click(css(`form[action="/dashboard/domains"] button[type="submit"]`)))
	domainPage := c.location()
	if !strings.HasPrefix(domainPage, "/dashboard/domains/") {
		t.Fatalf("adding a domain leads to %s", domainPage)
	}
	wantText(t, "the new domain's page", c.text("main"), "mail.acme.test", "pending")
	c.checked("domain-pending")
	domainID := strings.TrimPrefix(domainPage, "/dashboard/domains/")
	records := e.do("GET", "/v1/domains/"+domainID, e.key, nil).want(t, 200).json(t)["records"].([]any)
	for _, r := range records {
		rec := r.(map[string]any)
		switch rec["type"] {
		case "TXT":
			e.zone.LongTXT(rec["name"].(string), joinTXT(rec["value"].(string)))
		case "CNAME":
			e.zone.CNAME(rec["name"].(string), rec["value"].(string))
		}
	}
	c.load("verifying", 200, chromedp.Click(css(`form[action$="/verify"] button`)))
	if loc := c.location(); loc != domainPage {
		t.Fatalf("verifying leads to %s", loc)
	}
	if main := c.text("main"); strings.Count(main, "verified") < len(records)+1 || strings.Contains(main, "pending") {
		t.Errorf("the domain and its %d records are not all shown verified: %s", len(records), main)
	}
	if v := e.do("GET", "/v1/domains/"+domainID, e.key, nil).want(t, 200).json(t); v["status"] != "verified" {
		t.Errorf("the API says the domain is %v", v["status"])
	}
	c.checkedAt("domain", "main h2", "start")
	// A Copy button (copy.js, the dashboard's one script) puts its record
	// on the clipboard.
	for _, perm := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(c.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: perm}, Setting: cdpbrowser.PermissionSettingGranted, Origin: e.srv.URL}); err != nil {
			t.Fatalf("granting %s: %v", perm, err)
		}
	}
	spf := record(t, e.do("GET", "/v1/domains/"+domainID, e.key, nil).want(t, 200).json(t), "spf", "")["value"].(string)
	target, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`[...document.querySelectorAll("button[data-copy]:not([hidden])")].map(b => b.dataset.copy).find(id => document.getElementById(id).textContent === %q) || ""`, spf)))
	if err != nil || target == "" {
		t.Fatalf("no visible Copy button for the SPF value %q (%v)", spf, err)
	}
	copyButton := `button[data-copy="` + target + `"]`
	c.do("copying the SPF record", chromedp.Click(css(copyButton)))
	label, err := chromedp.Run(c.ctx, chromedp.Poll[string](fmt.Sprintf(`(t => t !== "Copy" && t)(document.querySelector(%q).textContent)`, copyButton),
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || label != "Copied" {
		t.Errorf("the Copy button says %q (%v)", label, err)
	}
	if clip, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); err != nil || clip != spf {
		t.Errorf("the clipboard holds %q (%v), want the SPF value %q", clip, err, spf)
	}
	c.checked("domain-copied")
	c.open("/dashboard/domains")
	c.checked("domains")

	// A failed webhook delivery, replayed with its button.
	rec := newHookReceiver(t, 400)
	hookID := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": rec.URL + "/hook",
		"events": []string{"message.bounced"}, "description": "ops"}).want(t, 201).json(t)["id"].(string)
	ev, ae := e.app.RecordEvent(e.acct.ID, false, app.EventBounced, map[string]any{"messageId": id})
	if ae != nil {
		t.Fatal(ae)
	}
	e.waitDelivery(e.key, hookID, ev.ID, "failed")
	c.open("/dashboard/webhooks")
	c.checked("webhooks")
	c.load("opening the webhook", 200, chromedp.Click(css(`a[href="/dashboard/webhooks/`+hookID+`"]`)))
	replay := `button[aria-label="Replay event ` + ev.ID + `"]`
	c.do("finding the Replay button", chromedp.WaitVisible(css(replay)))
	c.checkedAt("webhook", replay, "end")
	rec.set(200)
	rec.mu.Lock()
	before := len(rec.bodies)
	rec.mu.Unlock()
	c.load("replaying", 200, chromedp.Click(css(replay)))
	wantText(t, "the notice after Replay", c.text(`div.notice[role="status"]`), ev.ID, "is queued again")
	c.checked("webhook-replayed")
	e.waitDelivery(e.key, hookID, ev.ID, "delivered")
	rec.mu.Lock()
	if len(rec.bodies) != before+1 || string(rec.bodies[before]) != string(ev.Envelope) {
		t.Errorf("the receiver did not get the replayed event: %d bodies after %d", len(rec.bodies), before)
	}
	rec.mu.Unlock()

	// A template, created in its form and previewed.
	c.open("/dashboard/templates")
	c.load("creating a template", 200,
		chromedp.SetValue(css("#name"), "Welcome"),
		chromedp.SetValue(css("#subject"), "Welcome, {{name}}"),
		chromedp.SetValue(css("#html"), "<p>Hi {{name}}, your plan is {{plan}}.</p>"),
		chromedp.SetValue(css("#text"), "Hi {{name}}, your plan is {{plan}}."),
		chromedp.Click(css(`form[action="/dashboard/templates"] button[type="submit"]`)))
	if loc := c.location(); !strings.HasPrefix(loc, "/dashboard/templates/") {
		t.Fatalf("creating a template leads to %s", loc)
	}
	c.load("previewing", 200,
		chromedp.SetValue(css("#data"), `{"name": "Ann", "plan": "<b>pro</b>"}`),
		chromedp.Click(css(`form[action$="/preview"] button`)))
	wantText(t, "the preview", c.text(`section[aria-label="Rendered output"]`),
		"Welcome, Ann", "<p>Hi Ann, your plan is &lt;b&gt;pro&lt;/b&gt;.</p>", "Hi Ann, your plan is <b>pro</b>.")
	c.checkedAt("template", `form[action$="/preview"]`, "start")
	// The live preview (preview.js): typing into the editor renders the
	// unsaved draft with the preview's data, the HTML only in a sandboxed
	// frame, with no script error or CSP violation (the frame's srcdoc
	// passes the dashboard's policy).
	livePoll := func(what, js string) string {
		t.Helper()
		got, err := chromedp.Run(c.ctx, chromedp.Poll[string](js, chromedp.WithPollingTimeout(10*time.Second)))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return got
	}
	livePoll("the live preview of the saved form", `(s => s === "Welcome, Ann" && s)(document.getElementById("live-subject").textContent)`)
	c.do("typing into the editor",
		chromedp.Clear(css("#subject")), chromedp.SendKeys(css("#subject"), "Hello {{name}}!"),
		chromedp.Clear(css("#html")), chromedp.SendKeys(css("#html"), "<h1>Bye {{name}}</h1><p>{{plan}}</p>"),
		chromedp.Clear(css("#text")), chromedp.SendKeys(css("#text"), "Bye {{name}}"))
	livePoll("the live preview after typing",
		`(f => f.srcdoc === "<h1>Bye Ann</h1><p>&lt;b&gt;pro&lt;/b&gt;</p>" && document.getElementById("live-text").textContent === "Bye Ann" && f.srcdoc)(document.getElementById("live-html"))`)
	wantText(t, "the live preview", c.text("#live-preview"), "Hello Ann!", "Bye Ann")
	if sb, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`document.getElementById("live-html").getAttribute("sandbox")`)); err != nil || sb != "" {
		t.Errorf("the live preview's frame has sandbox=%q (%v), want it empty: no scripts, an opaque origin", sb, err)
	}
	if v := e.do("GET", "/v1/templates/"+strings.TrimSuffix(strings.TrimPrefix(c.location(), "/dashboard/templates/"), "/preview"), e.key, nil).want(t, 200).json(t); v["version"] != 1.0 {
		t.Errorf("typing saved the template: version %v", v["version"])
	}
	c.checkedAt("template-live", "#live-preview", "start")
	// A script in the template does not run in the preview: the frame is
	// sandboxed without allow-scripts, and keeps the dashboard's policy. Had
	// it run, its message would reach this page before the frame's load.
	const withScript = `<p>x</p><script>parent.postMessage("ran", "*")</script>`
	if _, err := chromedp.Run(c.ctx, chromedp.Evaluate[bool](`window.ran = 0; addEventListener("message", e => { if (e.data === "ran") window.ran++ });
document.getElementById("live-html").addEventListener("load", e => { window.loaded = e.target.srcdoc }); true`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(c.ctx, chromedp.Evaluate[string](`document.getElementById("html").value = ""`)); err != nil {
		t.Fatal(err)
	}
	c.do("typing a script into the editor", chromedp.SendKeys(css("#html"), withScript))
	livePoll("the live preview of a script", fmt.Sprintf(`window.loaded === %q && window.loaded`, withScript))
	if ran, err := chromedp.Run(c.ctx, chromedp.Evaluate[int](`window.ran`)); err != nil || ran != 0 {
		t.Errorf("a script in the live preview ran %d times (%v)", ran, err)
	}
	c.checked("template-live-script")
	c.open("/dashboard/templates")
	c.checked("templates")

	// Every other page, as its link in the menu leads there.
	for _, p := range []string{"team", "audit-log", "api-keys", "suppressions", "ips", "grader", "account", "security"} {
		c.load("opening "+p, 200, chromedp.Click(css(`nav a[href="/dashboard/`+p+`"]`)))
		if loc := c.location(); loc != "/dashboard/"+p {
			t.Errorf("the menu's %s leads to %s", p, loc)
		}
		if p == "audit-log" {
			wantText(t, "the audit log", c.text("main"), "domain.verify\t"+domainID, "webhook.replay\t"+hookID+"/"+ev.ID, "ann@example.com (session)")
		}
		c.checked(p)
	}

	// Log out; the public grader page needs no session.
	c.load("logging out", 200, chromedp.Click(css(`form[action="/dashboard/logout"] button`)))
	if loc := c.location(); loc != "/dashboard/login" {
		t.Errorf("logging out leads to %s", loc)
	}
	c.checked("logged-out")
	c.open("/dashboard/grader/check")
	c.checked("grader-public")
	t.Logf("the browser session took %s", time.Since(start).Round(time.Millisecond))
}
