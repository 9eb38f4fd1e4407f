package web

import (
	"encoding/base32"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

const goodPassword = "correct horse battery staple"

// browser is a cookie-keeping HTTP client that does not follow redirects,
// so tests see each answer.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
	hdr    []string // header name/value pairs sent with every request
}

// dashConfig is the configuration of dashboard tests: the test clock stands
// still, so the per-IP request limit (one-second windows) is raised out of
// the way; tune changes the rest.
func dashConfig(tune func(*Config)) Config {
	return configWith(func(c *Config) {
		c.IPRateLimit = 100000
		if tune != nil {
			tune(c)
		}
	})
}

func (e *env) browser(hdr ...string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: e.t, base: e.srv.URL, hdr: hdr, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is an answer with its body.
type pageReply struct {
	*http.Response
	body string
}

func (b *browser) do(method, path string, form url.Values) pageReply {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(b.hdr); i += 2 {
		req.Header.Set(b.hdr[i], b.hdr[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return pageReply{resp, string(data)}
}

func (b *browser) get(path string) pageReply { return b.do("GET", path, nil) }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the form on the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s (%d): no CSRF field in %s", path, p.StatusCode, p.body)
	}
	return m[1]
}

// post submits a form with the CSRF token of the page at from.
func (b *browser) post(from, path string, form url.Values) pageReply {
	b.t.Helper()
	form.Set("csrf", b.csrf(from))
	return b.do("POST", path, form)
}

func (b *browser) login(email, password string) pageReply {
	b.t.Helper()
	return b.post("/dashboard/login", "/dashboard/login", url.Values{"email": {email}, "password": {password}})
}

// person adds email to acct with role and sets its password, as the CLI's
// `team add` and the link it prints do.
func (e *env) person(acct storage.Account, email, role string) storage.TeamMember {
	e.t.Helper()
	op, err := e.app.OperatorIn(acct.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	m, link, err := e.app.AddMember(op, email, role)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.app.SetPassword(link.Token, "", goodPassword, ""); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func wantStatus(t *testing.T, what string, p pageReply, status int) {
	t.Helper()
	if p.StatusCode != status {
		t.Fatalf("%s: status %d, want %d: %s", what, p.StatusCode, status, p.body)
	}
}

func wantRedirect(t *testing.T, what string, p pageReply, to string) {
	t.Helper()
	if p.StatusCode/100 != 3 || p.Header.Get("Location") != to {
		t.Fatalf("%s: %d to %q, want a redirect to %s: %s", what, p.StatusCode, p.Header.Get("Location"), to, p.body)
	}
}

func TestDashboardLoginAndLogout(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "owner")
	b := e.browser()
	wantRedirect(t, "/", b.get("/"), "/dashboard/")
	wantRedirect(t, "/dashboard", b.get("/dashboard"), "/dashboard/")
	wantRedirect(t, "the dashboard without a session", b.get("/dashboard/"), "/dashboard/login")

	lp := b.get("/dashboard/login")
	wantStatus(t, "the login page", lp, 200)
	csp := lp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "style-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(strings.ToLower(lp.body), "<script") {
		t.Errorf("the login page allows or has script: %q", csp)
	}
	css := b.get("/dashboard/assets/style.css")
	if css.StatusCode != 200 || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet: %d %s", css.StatusCode, css.Header.Get("Content-Type"))
	}

	in := b.login("Ann@Example.com", goodPassword)
	wantRedirect(t, "login", in, "/dashboard/")
	var session *http.Cookie
	for _, c := range in.Cookies() {
		if c.Name == sessionCookie {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode || session.Secure || session.Path != "/dashboard/" {
		t.Fatalf("session cookie %+v", session)
	}
	home := b.get("/dashboard/")
	wantStatus(t, "the overview", home, 200)
	if !strings.Contains(home.body, "acme") || !strings.Contains(home.body, "ann@example.com") {
		t.Errorf("the overview does not name the account and the person: %s", home.body)
	}
	// The stored session is found by the hash of the cookie, never by the cookie itself.
	e.app.DB().View(func(tx *storage.Tx) error {
		if _, err := tx.Session([]byte(session.Value)); err == nil {
			t.Error("a session is stored under its id in clear")
		}
		if _, err := tx.Session(app.HashSecret(session.Value)); err != nil {
			t.Errorf("the session is not stored under its hash: %v", err)
		}
		return nil
	})

	wantRedirect(t, "logout", b.post("/dashboard/", "/dashboard/logout", url.Values{}), "/dashboard/login")
	wantRedirect(t, "the dashboard after logout", b.get("/dashboard/"), "/dashboard/login")
	// The old cookie does not come back to life.
	replay := e.browser()
	replay.client.Jar.SetCookies(mustURL(t, e.srv.URL+"/dashboard/"), []*http.Cookie{{Name: sessionCookie, Value: session.Value}})
	wantRedirect(t, "the logged-out session's cookie", replay.get("/dashboard/"), "/dashboard/login")
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestDashboardRefusesWrongPasswordsAndUnknownPeople(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "owner")
	for _, c := range []struct{ email, password string }{
		{"ann@example.com", "wrong password, long enough"},
		{"nobody@example.com", goodPassword},
		{"ann@example.com", ""},
	} {
		b := e.browser()
		p := b.login(c.email, c.password)
		wantStatus(t, "login as "+c.email, p, 401)
		if !strings.Contains(p.body, "The email or the password is wrong") {
			t.Errorf("login as %s: %s", c.email, p.body)
		}
		for _, ck := range p.Cookies() {
			if ck.Name == sessionCookie && ck.Value != "" {
				t.Errorf("a failed login set a session cookie")
			}
		}
		wantRedirect(t, "the dashboard after a failed login", b.get("/dashboard/"), "/dashboard/login")
	}
}

func TestDashboardFormsNeedTheirCSRFToken(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "owner")
	b := e.browser()
	b.get("/dashboard/login") // the form cookie is set, but the form is posted without the field
	wantStatus(t, "login without a CSRF token", b.do("POST", "/dashboard/login",
		url.Values{"email": {"ann@example.com"}, "password": {goodPassword}}), 403)
	wantRedirect(t, "login", b.login("ann@example.com", goodPassword), "/dashboard/")
	for _, token := range []string{"", "not-the-token"} {
		p := b.do("POST", "/dashboard/team/invite", url.Values{"csrf": {token}, "email": {"bob@example.com"}, "role": {"viewer"}})
		wantStatus(t, "an invitation with CSRF token "+token, p, 403)
	}
	wantStatus(t, "logout without a CSRF token", b.do("POST", "/dashboard/logout", url.Values{}), 403)
	if n := len(e.team(e.key)); n != 1 {
		t.Errorf("forms without their token changed the team: %d members", n)
	}
	wantStatus(t, "the dashboard after the refused logout", b.get("/dashboard/"), 200)
}

// team lists the members of key's account through the API.
func (e *env) team(key string) []any {
	e.t.Helper()
	r := e.do("GET", "/v1/team", key, nil)
	if r.StatusCode != 200 {
		e.t.Fatalf("GET /v1/team: %d %s", r.StatusCode, r.body)
	}
	return r.json(e.t)["data"].([]any)
}

func TestDashboardLoginRateLimits(t *testing.T) {
	e := newEnv(t, dashConfig(func(c *Config) { c.LoginEmailLimit, c.LoginIPLimit = 3, 5 }))
	e.person(e.acct, "ann@example.com", "owner")
	b := e.browser()
	for i := range 3 {
		wantStatus(t, "wrong password "+string(rune('1'+i)), b.login("ann@example.com", "not the password at all"), 401)
	}
	p := b.login("ann@example.com", goodPassword)
	wantStatus(t, "the fourth attempt for one email, right password", p, 429)
	if p.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	// Other emails from the same address count against the address.
	wantStatus(t, "another email", b.login("bob@example.com", goodPassword), 401)
	wantStatus(t, "the address's sixth attempt", b.login("cy@example.com", goodPassword), 429)
	e.clock.Add(time.Minute)
	wantRedirect(t, "a minute later", b.login("ann@example.com", goodPassword), "/dashboard/")
}

// A login's address is the one of either spelling of an internationalised
// domain: the person logs in with the other spelling, and the attempts of
// both count against one quota.
func TestDashboardLoginEitherIDNSpelling(t *testing.T) {
	e := newEnv(t, dashConfig(func(c *Config) { c.LoginEmailLimit, c.LoginIPLimit = 3, 20 }))
	e.person(e.acct, "ann@exämple.org", "owner")
	b := e.browser()
	for i, spelling := range []string{"ann@xn--exmple-cua.org", "Ann@Exämple.org", "ann@xn--exmple-cua.org"} {
		wantStatus(t, "wrong password "+string(rune('1'+i))+" as "+spelling, b.login(spelling, "not the password at all"), 401)
	}
	wantStatus(t, "the fourth attempt in the other spelling", b.login("ann@exämple.org", goodPassword), 429)
	e.clock.Add(time.Minute)
	wantRedirect(t, "a minute later, in the A-label spelling", b.login("ann@xn--exmple-cua.org", goodPassword), "/dashboard/")
}

func TestDashboardSessionEndsOnPasswordChangeAndRemoval(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "owner")
	bob := e.person(e.acct, "bob@example.com", "developer")
	ann, bobs := e.browser(), e.browser()
	wantRedirect(t, "ann logs in", ann.login("ann@example.com", goodPassword), "/dashboard/")
	wantRedirect(t, "bob logs in", bobs.login("bob@example.com", goodPassword), "/dashboard/")

	// A new password (the CLI's reset-password link) ends ann's sessions.
	op, _ := e.app.OperatorIn(e.acct.ID)
	link, err := e.app.ResetPassword(op, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "bob still in", bobs.get("/dashboard/"), 200)
	wantStatus(t, "ann still in", ann.get("/dashboard/"), 200)
	setter := e.browser()
	pw := setter.post("/dashboard/password/"+link.Token, "/dashboard/password/"+link.Token,
		url.Values{"password": {"a brand new password"}})
	wantStatus(t, "setting a new password", pw, 200)
	wantRedirect(t, "ann after her password changed", ann.get("/dashboard/"), "/dashboard/login")
	wantStatus(t, "the link a second time", setter.get("/dashboard/password/"+link.Token), 404)
	wantStatus(t, "the old password", ann.login("ann@example.com", goodPassword), 401)
	wantRedirect(t, "the new password", ann.login("ann@example.com", "a brand new password"), "/dashboard/")

	// Bob makes a key. Removing him from the team ends his session and
	// revokes the key; the page names it.
	wantStatus(t, "bob makes a key", bobs.post("/dashboard/api-keys", "/dashboard/api-keys",
		url.Values{"name": {"bobs ci"}, "mode": {"live"}, "scopes": {"messages:write"}}), 200)
	if team := ann.get("/dashboard/team"); !strings.Contains(team.body, "keep the 1 API key they made") {
		t.Errorf("the team page does not offer to keep bob's key:\n%s", team.body)
	}
	removed := ann.post("/dashboard/team", "/dashboard/team/remove", url.Values{"member": {bob.ID}})
	wantStatus(t, "ann removes bob", removed, 200)
	if !strings.Contains(removed.body, "bob@example.com is removed from the team") || !strings.Contains(removed.body, "<strong>bobs ci</strong>") {
		t.Errorf("the removal's page does not name the revoked key:\n%s", removed.body)
	}
	keys, _, _, err := e.app.ListKeys(op, storage.ListOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == "bobs ci" && (k.RevokedAt == nil || k.CreatedBy != "bob@example.com") {
			t.Errorf("bob's key after his removal: revoked %v, made by %q", k.RevokedAt, k.CreatedBy)
		}
	}
	wantRedirect(t, "bob after his removal", bobs.get("/dashboard/"), "/dashboard/login")
	wantStatus(t, "bob logging in again", bobs.login("bob@example.com", goodPassword), 401)
}

func TestDashboardRolesDecideWhatAPersonMayDo(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "owner")
	e.person(e.acct, "ada@example.com", "admin")
	e.person(e.acct, "vic@example.com", "viewer")
	invite := func(b *browser, email, role string) pageReply {
		return b.post("/dashboard/team", "/dashboard/team/invite", url.Values{"email": {email}, "role": {role}})
	}
	vic := e.browser()
	wantRedirect(t, "vic logs in", vic.login("vic@example.com", goodPassword), "/dashboard/")
	wantStatus(t, "the viewer reads the team", vic.get("/dashboard/team"), 200)
	p := invite(vic, "new@example.com", "viewer")
	wantStatus(t, "the viewer invites", p, 403)
	if !strings.Contains(p.body, "team:write") {
		t.Errorf("the refusal does not name the scope: %s", p.body)
	}
	ada := e.browser()
	wantRedirect(t, "ada logs in", ada.login("ada@example.com", goodPassword), "/dashboard/")
	wantStatus(t, "the admin makes an owner", invite(ada, "boss@example.com", "owner"), 403)
	wantStatus(t, "the admin makes an admin", invite(ada, "boss@example.com", "admin"), 403)
	if p := invite(ada, "dev@example.com", "developer"); p.StatusCode != 200 || !strings.Contains(p.body, app.AcceptPath) {
		t.Errorf("the admin invites a developer: %d %s", p.StatusCode, p.body)
	}
	ann := e.browser()
	wantRedirect(t, "ann logs in", ann.login("ann@example.com", goodPassword), "/dashboard/")
	wantStatus(t, "the owner makes an admin", invite(ann, "boss@example.com", "admin"), 200)
	if n := len(e.team(e.key)); n != 5 {
		t.Errorf("%d members, want 5 (3 people and 2 invitations)", n)
	}

	// Another account's member is not found, whoever asks.
	other, _ := e.account("other", "enterprise", 1000)
	stranger := e.person(other, "zed@example.com", "viewer")
	wantStatus(t, "removing another account's member", ann.post("/dashboard/team", "/dashboard/team/remove",
		url.Values{"member": {stranger.ID}}), 404)
	// An admin cannot remove the owner; nobody removes the last owner.
	annID := ""
	for _, m := range e.team(e.key) {
		if m := m.(map[string]any); m["email"] == "ann@example.com" {
			annID = m["id"].(string)
		}
	}
	wantStatus(t, "the admin removes the owner", ada.post("/dashboard/team", "/dashboard/team/remove", url.Values{"member": {annID}}), 403)
	wantStatus(t, "the owner removes herself, the last owner", ann.post("/dashboard/team", "/dashboard/team/remove", url.Values{"member": {annID}}), 409)

	// Roles change from the same page, under the same rules.
	role := func(b *browser, id, r string) pageReply {
		return b.post("/dashboard/team", "/dashboard/team/role", url.Values{"member": {id}, "role": {r}})
	}
	wantStatus(t, "the admin demotes the owner", role(ada, annID, "viewer"), 403)
	wantStatus(t, "the last owner steps down", role(ann, annID, "admin"), 409)
	wantStatus(t, "another account's member", role(ann, stranger.ID, "viewer"), 404)
	adaID := ""
	for _, m := range e.team(e.key) {
		if m := m.(map[string]any); m["email"] == "ada@example.com" {
			adaID = m["id"].(string)
		}
	}
	wantRedirect(t, "the owner makes the admin a viewer", role(ann, adaID, "viewer"), "/dashboard/team")
	wantStatus(t, "the former admin invites", invite(ada, "late@example.com", "viewer"), 403)
	// Removing oneself ends one's sessions: the answer is the login page.
	e.person(e.acct, "own@example.com", "owner")
	own := e.browser()
	wantRedirect(t, "the second owner logs in", own.login("own@example.com", goodPassword), "/dashboard/")
	ownID := ""
	for _, m := range e.team(e.key) {
		if m := m.(map[string]any); m["email"] == "own@example.com" {
			ownID = m["id"].(string)
		}
	}
	wantRedirect(t, "the second owner removes herself", own.post("/dashboard/team", "/dashboard/team/remove", url.Values{"member": {ownID}}), "/dashboard/login")
	wantRedirect(t, "her session after that", own.get("/dashboard/"), "/dashboard/login")
}

func TestDashboardAccountPicker(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "viewer")
	other, _ := e.account("second", "enterprise", 1000)
	op, _ := e.app.OperatorIn(other.ID)
	if _, _, err := e.app.AddMember(op, "ann@example.com", "owner"); err != nil {
		t.Fatal(err)
	}
	third, _ := e.account("third", "enterprise", 1000)
	b := e.browser()
	wantRedirect(t, "login of a member of two accounts", b.login("ann@example.com", goodPassword), "/dashboard/accounts")
	wantRedirect(t, "the overview before picking", b.get("/dashboard/"), "/dashboard/accounts")
	list := b.get("/dashboard/accounts")
	if !strings.Contains(list.body, "acme (viewer)") || !strings.Contains(list.body, "second (owner)") || strings.Contains(list.body, "third") {
		t.Errorf("the picker: %s", list.body)
	}
	wantStatus(t, "picking an account of which ann is no member", b.post("/dashboard/accounts", "/dashboard/accounts",
		url.Values{"account": {third.ID}}), 404)
	wantRedirect(t, "picking second", b.post("/dashboard/accounts", "/dashboard/accounts", url.Values{"account": {other.ID}}), "/dashboard/")
	home := b.get("/dashboard/")
	if !strings.Contains(home.body, "second") || !strings.Contains(home.body, "as owner") {
		t.Errorf("the overview after picking: %s", home.body)
	}
}

func TestDashboardSessionsExpire(t *testing.T) {
	e := newEnvWith(t, dashConfig(nil), func(o *app.Options) {
		o.Sessions = app.SessionOptions{IdleTimeout: time.Hour, MaxAge: 2 * time.Hour}
	})
	e.person(e.acct, "ann@example.com", "owner")
	idle := e.browser()
	wantRedirect(t, "login", idle.login("ann@example.com", goodPassword), "/dashboard/")
	busy := e.browser()
	wantRedirect(t, "login", busy.login("ann@example.com", goodPassword), "/dashboard/")
	for range 2 {
		e.clock.Add(50 * time.Minute)
		wantStatus(t, "a busy session", busy.get("/dashboard/"), 200)
	}
	wantRedirect(t, "a session idle 100 minutes", idle.get("/dashboard/"), "/dashboard/login")
	e.clock.Add(25 * time.Minute)
	wantRedirect(t, "a busy session past its lifetime", busy.get("/dashboard/"), "/dashboard/login")
}

func TestDashboardPasswordsTravelOnlyOverHTTPS(t *testing.T) {
	proxy := dashConfig(func(c *Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	e := newEnv(t, proxy)
	e.person(e.acct, "ann@example.com", "owner")
	far := e.browser("X-Forwarded-For", "203.0.113.9")
	p := far.login("ann@example.com", goodPassword)
	wantStatus(t, "login over plain HTTP from afar", p, 403)
	if !strings.Contains(p.body, "HTTPS") {
		t.Errorf("the refusal: %s", p.body)
	}
	tls := e.browser("X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "https")
	p = tls.login("ann@example.com", goodPassword)
	wantRedirect(t, "login through a TLS proxy", p, "/dashboard/")
	for _, c := range p.Cookies() {
		if c.Name == sessionCookie && !c.Secure {
			t.Error("a session cookie set over HTTPS is not Secure")
		}
	}

	// The invitation form takes a password under the same rule.
	r := e.do("POST", "/v1/team/invite", e.key, map[string]string{"email": "new@example.com", "role": "developer"})
	token := r.json(t)["accept_token"].(string)
	wantStatus(t, "a password on the accept form over plain HTTP from afar",
		far.do("POST", "/v1/team/accept/"+token, url.Values{"password": {goodPassword}}), 403)
	if got := e.browser("X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "https").
		login("new@example.com", goodPassword).StatusCode; got != 401 {
		t.Errorf("after a refused accept form, login answers %d: a password was set", got)
	}
	wantStatus(t, "the accept form through a TLS proxy",
		tls.do("POST", "/v1/team/accept/"+token, url.Values{"password": {goodPassword}}), 200)

	dev := newEnv(t, dashConfig(func(c *Config) {
		c.TrustedProxies, c.Dev = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, true
	}))
	dev.person(dev.acct, "ann@example.com", "owner")
	wantRedirect(t, "login over plain HTTP from afar with --dev", dev.browser("X-Forwarded-For", "203.0.113.9").
		login("ann@example.com", goodPassword), "/dashboard/")
}

// The audit log has an entry for every change by a person or a key, written
// in the change's transaction: a change that fails leaves none.
func TestAuditLogRecordsChangesInTheirTransaction(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "owner")
	ann := e.browser()
	wantRedirect(t, "login", ann.login("ann@example.com", goodPassword), "/dashboard/")
	wantStatus(t, "an invitation", ann.post("/dashboard/team", "/dashboard/team/invite",
		url.Values{"email": {"bob@example.com"}, "role": {"viewer"}}), 200)
	entries := func() []any {
		r := e.do("GET", "/v1/audit-log", e.key, nil)
		if r.StatusCode != 200 {
			t.Fatalf("GET /v1/audit-log: %d %s", r.StatusCode, r.body)
		}
		return r.json(t)["data"].([]any)
	}
	before := entries()
	top := before[0].(map[string]any)
	if top["action"] != "team.invite" || top["actor"] != "ann@example.com" || top["actor_kind"] != "session" ||
		top["target"] != "bob@example.com as viewer" || top["source"] != "127.0.0.1" {
		t.Errorf("the invitation's entry: %v", top)
	}
	// The same invitation again is a conflict, and leaves no entry.
	wantStatus(t, "the invitation again", ann.post("/dashboard/team", "/dashboard/team/invite",
		url.Values{"email": {"bob@example.com"}, "role": {"viewer"}}), 409)
	if r := e.do("POST", "/v1/team/invite", e.key, map[string]string{"email": "bob@example.com", "role": "viewer"}); r.StatusCode != 409 {
		t.Fatalf("the invitation again by key: %d", r.StatusCode)
	}
	if after := entries(); len(after) != len(before) {
		t.Errorf("failed changes left entries: %d, then %d", len(before), len(after))
	}
	// A key's change names the key; reading changes nothing.
	r := e.do("POST", "/v1/suppressions", e.key, map[string]string{"recipient": "gone@example.com"})
	if r.StatusCode/100 != 2 {
		t.Fatalf("suppression: %d %s", r.StatusCode, r.body)
	}
	after := entries()
	if len(after) != len(before)+1 {
		t.Fatalf("%d entries after one change by key, want %d", len(after), len(before)+1)
	}
	if top := after[0].(map[string]any); top["action"] != "suppression.add" || top["actor_kind"] != "api_key" ||
		!strings.HasPrefix(top["actor"].(string), "0") || top["target"] != "gone@example.com" {
		t.Errorf("the key's entry: %v", top)
	}
	// The dashboard shows the log; another account sees none of it.
	if p := ann.get("/dashboard/audit-log"); p.StatusCode != 200 || !strings.Contains(p.body, "suppression.add") {
		t.Errorf("the audit page: %d %s", p.StatusCode, p.body)
	}
	_, otherKey := e.account("other", "enterprise", 1000)
	for _, x := range e.do("GET", "/v1/audit-log", otherKey, nil).json(t)["data"].([]any) {
		if x := x.(map[string]any); x["actor"] != "operator" || x["action"] != "api_key.create" {
			t.Errorf("another account sees %v (it has only its own key's creation by the CLI)", x)
		}
	}
	// account:read is the scope.
	narrow := e.newKey(e.acct.ID, []string{app.ScopeMessagesRead}, false, nil)
	if r := e.do("GET", "/v1/audit-log", narrow, nil); r.StatusCode != 403 || r.code(t) != "INSUFFICIENT_SCOPES" {
		t.Errorf("without account:read: %d %s", r.StatusCode, r.body)
	}
}

func TestInvitationAcceptSetsThePassword(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	r := e.do("POST", "/v1/team/invite", e.key, map[string]string{"email": "new@example.com", "role": "developer"})
	token := r.json(t)["accept_token"].(string)
	b := e.browser()
	form := b.get("/v1/team/accept/" + token)
	if form.StatusCode != 200 || !strings.Contains(form.body, `name="password"`) {
		t.Fatalf("the accept page of a person without a password: %d %s", form.StatusCode, form.body)
	}
	wantStatus(t, "a short password", b.do("POST", "/v1/team/accept/"+token, url.Values{"password": {"short"}}), 400)
	if b.login("new@example.com", goodPassword).StatusCode != 401 {
		t.Error("a refused invitation form set a password")
	}
	b = e.browser()
	wantStatus(t, "accepting with a password", b.do("POST", "/v1/team/accept/"+token, url.Values{"password": {goodPassword}}), 200)
	wantRedirect(t, "the new member logs in", b.login("new@example.com", goodPassword), "/dashboard/")
	// The link posted again answers a page too: 409, saying why, no form.
	again := e.browser().do("POST", "/v1/team/accept/"+token, url.Values{"password": {"another long password"}})
	if again.StatusCode != 409 || !strings.HasPrefix(again.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(again.body, "accepted already") || strings.Contains(again.body, "<form") {
		t.Errorf("the accept link posted again: %d %s\n%s", again.StatusCode, again.Header.Get("Content-Type"), again.body)
	}
	home := b.get("/dashboard/")
	if !strings.Contains(home.body, "as developer") {
		t.Errorf("the new member's overview: %s", home.body)
	}
}

func TestDashboardUnknownPagesAndMethods(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	b := e.browser()
	wantStatus(t, "an unknown dashboard page", b.get("/dashboard/nothing-here"), 404)
	wantStatus(t, "an unknown password link", b.get("/dashboard/password/nope"), 404)
	// Other unversioned paths stay the API's 404.
	if r := e.do("GET", "/elsewhere", "", nil); r.StatusCode != 404 || r.code(t) != "NOT_FOUND" {
		t.Errorf("GET /elsewhere: %d %s", r.StatusCode, r.body)
	}
}

// The Overview draws the last 30 days' counters as SVG on the server, and
// Messages lists the account's live messages with the API's filters.
func TestDashboardOverviewAndMessages(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.verifiedDomain("acme.test")
	for _, to := range []string{"ann@dest.test", "bob@dest.test", "bob@dest.test"} {
		r := e.do("POST", "/v1/messages", e.key, map[string]any{"from": "hi@acme.test", "to": to, "subject": "Hello " + to,
			"text": "hi", "tags": []string{"welcome"}})
		if r.StatusCode != 202 {
			t.Fatalf("send: %d %s", r.StatusCode, r.body)
		}
	}
	e.person(e.acct, "vic@example.com", "viewer")
	b := e.browser()
	wantRedirect(t, "login", b.login("vic@example.com", goodPassword), "/dashboard/")
	home := b.get("/dashboard/")
	wantStatus(t, "the overview", home, 200)
	if n := strings.Count(home.body, "<svg "); n != 6 {
		t.Errorf("%d charts, want 6", n)
	}
	if n := strings.Count(home.body, "<rect "); n != 6*30 {
		t.Errorf("%d bars, want 30 per chart", n)
	}
	if !strings.Contains(home.body, "Sent: <strong>3</strong>") || !strings.Contains(home.body, "2026-11-22: 3") {
		t.Errorf("the Sent chart does not show today's 3: %s", home.body)
	}

	list := b.get("/dashboard/messages")
	wantStatus(t, "messages", list, 200)
	if n := strings.Count(list.body, "Hello "); n != 3 {
		t.Errorf("%d messages listed, want 3", n)
	}
	bob := b.get("/dashboard/messages?recipient=BOB@dest.test&tag=welcome")
	if n := strings.Count(bob.body, "Hello bob@dest.test"); n != 2 || strings.Contains(bob.body, "Hello ann@") {
		t.Errorf("bob's messages: %d %s", n, bob.body)
	}
	first := b.get("/dashboard/messages?limit=2")
	m := regexp.MustCompile(`href="/dashboard/messages\?([^"]+)"`).FindStringSubmatch(first.body)
	if strings.Count(first.body, "Hello ") != 2 || m == nil {
		t.Fatalf("the first page of 2: %s", first.body)
	}
	rest := b.get("/dashboard/messages?" + strings.ReplaceAll(m[1], "&amp;", "&"))
	if strings.Count(rest.body, "Hello ") != 1 {
		t.Errorf("the second page: %s", rest.body)
	}
	wantStatus(t, "an unknown status", b.get("/dashboard/messages?status=lost"), 400)

	// Another account's person sees none of it.
	other, _ := e.account("other", "enterprise", 1000)
	e.person(other, "zed@example.com", "owner")
	z := e.browser()
	wantRedirect(t, "zed logs in", z.login("zed@example.com", goodPassword), "/dashboard/")
	if p := z.get("/dashboard/messages"); strings.Contains(p.body, "Hello ") {
		t.Errorf("another account lists acme's messages: %s", p.body)
	}
}

// The optional second factor: set up with a code from the key, then every
// login asks for a code (each works once) or a recovery code (each works
// once); turning it off takes a code.
func TestDashboardSecondFactor(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "ann@example.com", "owner")
	b := e.browser()
	wantRedirect(t, "login", b.login("ann@example.com", goodPassword), "/dashboard/")
	setup := b.post("/dashboard/security", "/dashboard/security/totp", url.Values{})
	m := regexp.MustCompile(`Key: <code>([A-Z2-7]+)</code>`).FindStringSubmatch(setup.body)
	if m == nil || !strings.Contains(setup.body, `href="otpauth://totp/Mailbolt:ann@example.com?`) {
		t.Fatalf("the setup page: %s", setup.body)
	}
	seed, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	confirm := func(code string) pageReply {
		p := b.do("POST", "/dashboard/security/totp/confirm", url.Values{"csrf": {csrfField.FindStringSubmatch(setup.body)[1]}, "code": {code}})
		return p
	}
	wantStatus(t, "a wrong code", confirm("000000"), 400)
	on := confirm(app.TOTPCode(seed, e.app.Now()))
	wantStatus(t, "the right code", on, 200)
	recovery := regexp.MustCompile(`<li><code>([a-z2-7]{16})</code></li>`).FindAllStringSubmatch(on.body, -1)
	if len(recovery) != 10 {
		t.Fatalf("%d recovery codes shown: %s", len(recovery), on.body)
	}
	e.app.DB().View(func(tx *storage.Tx) error {
		p, _ := tx.Person("ann@example.com")
		if len(p.TOTPSeed) == 0 || len(p.RecoveryCodes) != 10 || strings.Contains(string(p.RecoveryCodes[0]), recovery[0][1]) {
			t.Errorf("stored: %+v", p)
		}
		return nil
	})

	// A new login waits for its code and reaches nothing before it.
	c := e.browser()
	wantRedirect(t, "the password", c.login("ann@example.com", goodPassword), "/dashboard/login/code")
	wantRedirect(t, "the overview before the code", c.get("/dashboard/"), "/dashboard/login/code")
	wantRedirect(t, "the team before the code", c.get("/dashboard/team"), "/dashboard/login/code")
	wantStatus(t, "an invitation before the code", c.post("/dashboard/login/code", "/dashboard/team/invite",
		url.Values{"email": {"x@example.com"}, "role": {"viewer"}}), 401)
	wantStatus(t, "a wrong code", c.post("/dashboard/login/code", "/dashboard/login/code", url.Values{"code": {"123456"}}), 401)
	// The code that turned the factor on was used: the next step's works.
	wantStatus(t, "a used code", c.post("/dashboard/login/code", "/dashboard/login/code",
		url.Values{"code": {app.TOTPCode(seed, e.app.Now())}}), 401)
	e.clock.Add(30 * time.Second)
	wantRedirect(t, "the code", c.post("/dashboard/login/code", "/dashboard/login/code",
		url.Values{"code": {app.TOTPCode(seed, e.app.Now())}}), "/dashboard/")
	wantStatus(t, "the overview after the code", c.get("/dashboard/"), 200)

	// A recovery code works once.
	r := e.browser()
	wantRedirect(t, "the password", r.login("ann@example.com", goodPassword), "/dashboard/login/code")
	wantRedirect(t, "a recovery code", r.post("/dashboard/login/code", "/dashboard/login/code",
		url.Values{"code": {recovery[0][1]}}), "/dashboard/")
	r2 := e.browser()
	wantRedirect(t, "the password", r2.login("ann@example.com", goodPassword), "/dashboard/login/code")
	wantStatus(t, "the recovery code again", r2.post("/dashboard/login/code", "/dashboard/login/code",
		url.Values{"code": {recovery[0][1]}}), 401)

	// Off, with a code; then the password alone logs in.
	wantStatus(t, "off without a code", c.post("/dashboard/security", "/dashboard/security/totp/disable", url.Values{"code": {"nope"}}), 400)
	wantRedirect(t, "off", c.post("/dashboard/security", "/dashboard/security/totp/disable", url.Values{"code": {recovery[1][1]}}), "/dashboard/security")
	wantRedirect(t, "login without a second factor", e.browser().login("ann@example.com", goodPassword), "/dashboard/")
}

// Login attempts are counted per IPv4 address and per IPv6 /64: one host
// commonly holds a whole /64.
func TestLoginAttemptsCountedPerSourceNetwork(t *testing.T) {
	for ip, want := range map[string]string{"203.0.113.9": "203.0.113.9", "2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64", "::ffff:203.0.113.9": "203.0.113.9", "junk": "junk"} {
		if got := sourceNet(ip); got != want {
			t.Errorf("sourceNet(%q) = %q, want %q", ip, got, want)
		}
	}
}

// An invitation not accepted within a week shows a page that says so (410
// GONE, no form), whether opened or posted.
func TestInvitationAcceptPageOfAnExpiredInvitation(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	r := e.do("POST", "/v1/team/invite", e.key, map[string]string{"email": "slow@example.com", "role": "developer"})
	token := r.json(t)["accept_token"].(string)
	e.clock.Add(7 * 24 * time.Hour)
	b := e.browser()
	for _, page := range []pageReply{b.get("/v1/team/accept/" + token),
		b.do("POST", "/v1/team/accept/"+token, url.Values{"password": {goodPassword}}),
		b.do("POST", "/v1/team/accept/"+token, url.Values{"password": {"short"}})} {
		if page.StatusCode != http.StatusGone || !strings.Contains(page.body, "this invitation expired on 29 November 2026") ||
			strings.Contains(page.body, "<form") {
			t.Errorf("an expired invitation's page: %d %s", page.StatusCode, page.body)
		}
	}
	if b.login("slow@example.com", goodPassword).StatusCode != 401 {
		t.Error("an expired invitation set a password")
	}
	// The dashboard's team page marks it.
	owner := e.loggedIn(e.acct, "own@example.com", "owner")
	if page := owner.get("/dashboard/team"); !strings.Contains(page.body, "invited <span class=\"muted\">(invitation expired: invite again)") ||
		strings.Count(page.body, "invitation expired") != 1 {
		t.Errorf("the team page does not mark the expired invitation alone: %s", page.body)
	}
	// The API's list still shows the member as invited; inviting again
	// replaces it.
	again := e.do("POST", "/v1/team/invite", e.key, map[string]string{"email": "slow@example.com", "role": "viewer"}).want(t, 201).json(t)
	if again["accept_token"] == token || again["role"] != "viewer" {
		t.Errorf("the invitation sent again: %v", again)
	}
	if page := b.get("/v1/team/accept/" + again["accept_token"].(string)); page.StatusCode != 200 {
		t.Errorf("the new invitation's page: %d %s", page.StatusCode, page.body)
	}
}

// Over the per-IP limit, a dashboard page answers a page (429, with
// Retry-After), not the API's JSON; the dashboard's own files are not
// counted, so the style sheet and scripts a page loads do not use it up.
func TestDashboardOverTheIPLimit(t *testing.T) {
	e := newEnv(t, dashConfig(func(c *Config) { c.IPRateLimit = 2 }))
	b := e.browser()
	for range 10 {
		wantStatus(t, "the style sheet", b.get("/dashboard/assets/style.css"), 200)
	}
	wantStatus(t, "a page", b.get("/dashboard/login"), 200)
	wantStatus(t, "a second page", b.get("/dashboard/login"), 200)
	p := b.get("/dashboard/login")
	if p.StatusCode != 429 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") || p.Header.Get("Retry-After") == "" ||
		!strings.Contains(p.body, "Too many requests from your address") {
		t.Errorf("a third page in the second: %d %s %q\n%s", p.StatusCode, p.Header.Get("Content-Type"), p.Header.Get("Retry-After"), p.body)
	}
	// With the headers of every dashboard page.
	if p.Header.Get("Content-Security-Policy") == "" || p.Header.Get("Referrer-Policy") == "" || p.Header.Get("X-Frame-Options") == "" {
		t.Errorf("the 429 page lacks the dashboard's headers: %v", p.Header)
	}
	// The API keeps its JSON answer.
	e.do("GET", "/v1/openapi.json", "", nil).want(t, 429, "RATE_LIMIT_EXCEEDED")
}

// A password sent with an invitation for a person who has one already is
// a 409 page that offers the accept button again, without the password
// field: accepting as they are works from there.
func TestInvitationOfAPersonWithAPassword(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	e.person(e.acct, "has@example.com", "viewer")
	_, otherKey := e.account("other", "enterprise", 1000)
	token := e.do("POST", "/v1/team/invite", otherKey, map[string]string{"email": "has@example.com", "role": "developer"}).
		want(t, 201).json(t)["accept_token"].(string)
	b := e.browser()
	p := b.do("POST", "/v1/team/accept/"+token, url.Values{"password": {"a different long password"}})
	if p.StatusCode != 409 || !strings.Contains(p.body, "password already") || !strings.Contains(p.body, "<form") ||
		strings.Contains(p.body, `name="password"`) {
		t.Errorf("a password for a person who has one: %d\n%s", p.StatusCode, p.body)
	}
	wantStatus(t, "accepting without one", b.do("POST", "/v1/team/accept/"+token, url.Values{}), 200)
}
