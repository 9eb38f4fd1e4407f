package web

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"mailbolt/app"
)

// The dashboard (docs/dashboard.md): server-rendered pages under
// /dashboard/, with their one stylesheet embedded. No page needs script;
// the Content-Security-Policy allows only the dashboard's own files (copy
// buttons), no inline script, and no framing.

//go:embed dashboard
var dashboardFiles embed.FS

// dashboardPageFiles are the pages and, for those made of more than their
// own file, the files each is parsed from after the layout (in order: a
// later file's definitions win).
var dashboardPageFiles = map[string][]string{
	"login": nil, "code": nil, "accounts": nil, "password": nil, "overview": nil, "messages": nil,
	"team": nil, "audit": nil, "security": nil, "error": nil,
	"message": nil, "source": nil, "domains": nil, "domain": nil,
	"webhooks": {"webhooks", "webhook_fields"}, "webhook": {"webhook", "webhook_fields"},
	"keys": nil, "suppressions": nil, "templates": nil, "ips": nil, "account": nil, "grader": nil,
	"grader_public": {"grader", "grader_public"}, // the public check shows a result as the grader page does
	"template":      {"templates", "template"},   // the editor shares the create form's fields
}

// dashboardFuncs are the template functions every page may use.
var dashboardFuncs = template.FuncMap{
	"pct":   func(r float64) float64 { return 100 * r },
	"next":  func(n int) int { return n + 1 },
	"prev":  func(n int) int { return n - 1 },
	"ms":    func(ms float64) string { return strconv.FormatFloat(ms, 'f', 0, 64) + " ms" },
	"reply": lastReply,
}

// dashboardPages are the page templates, each parsed with the layout.
var dashboardPages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for name, files := range dashboardPageFiles {
		if files == nil {
			files = []string{name}
		}
		paths := []string{"dashboard/layout.html"}
		for _, f := range files {
			paths = append(paths, "dashboard/"+f+".html")
		}
		out[name] = template.Must(template.New(name).Funcs(dashboardFuncs).ParseFS(dashboardFiles, paths...))
	}
	return out
}()

// lastReply is a recipient's last SMTP reply as one line: the code and the
// enhanced code, unless the stored text begins with them already.
func lastReply(code int, enhanced, text string) string {
	prefix := ""
	if code != 0 {
		prefix = strconv.Itoa(code) + " "
	}
	if enhanced != "" {
		prefix += enhanced + " "
	}
	if strings.HasPrefix(text, prefix) {
		return text
	}
	return strings.TrimSpace(prefix + text)
}

const (
	// sessionCookie holds the session id; only its hash is stored.
	sessionCookie = "mailbolt_session"
	// formCookie holds the CSRF token of the forms shown before a session
	// exists (login, set password): the form must post the same value.
	formCookie = "mailbolt_form"
	// dashboardCSP forbids every frame ancestor, and every resource but the
	// dashboard's own stylesheet, images and script files (copy buttons,
	// the live template preview: no inline script runs) and the preview's
	// requests to the dashboard itself (connect-src).
	dashboardCSP = "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; connect-src 'self'; form-action 'self'; " +
		"frame-ancestors 'none'; base-uri 'none'"
	// maxFormBytes caps a dashboard form's body.
	maxFormBytes = 64 << 10
)

// dashboardHeaders are the security headers of every dashboard page.
func dashboardHeaders(h http.Header) {
	h.Set("Content-Security-Policy", dashboardCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// Set-password and invitation links carry their token in the path.
	h.Set("Referrer-Policy", "no-referrer")
}

// page is what every dashboard template gets.
type page struct {
	Title     string
	Principal app.Principal
	Email     string
	CSRF      string
	Many      bool // the person may switch accounts
	Error     string
	Done      bool
	Data      any
}

// dashboard answers / (a redirect) and everything under /dashboard/; it
// reports whether the path was the dashboard's.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	switch {
	case p == "/" || p == "/dashboard":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return false
		}
		http.Redirect(w, r, "/dashboard/", http.StatusFound)
		return true
	case strings.HasPrefix(p, "/dashboard/"):
		*r.Context().Value(routeKey{}).(*string) = "/dashboard/"
		dashboardHeaders(w.Header())
		r.Body = http.MaxBytesReader(w, r.Body, dashboardBodyLimit(p))
		s.dash.ServeHTTP(w, r)
		return true
	}
	return false
}

func (s *Server) dashboardMux() *http.ServeMux {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(dashboardFiles, "dashboard/assets")
	files := http.StripPrefix(dashboardAssets, http.FileServerFS(assets))
	mux.HandleFunc("GET /dashboard/assets/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /dashboard/login", s.loginForm)
	mux.HandleFunc("POST /dashboard/login", s.login)
	mux.HandleFunc("GET /dashboard/password/{token}", s.passwordForm)
	mux.HandleFunc("POST /dashboard/password/{token}", s.setPassword)
	mux.HandleFunc("GET /dashboard/login/code", s.secondFactorDue(s.codeForm))
	mux.HandleFunc("POST /dashboard/login/code", s.secondFactorDue(s.code))
	mux.HandleFunc("POST /dashboard/logout", s.anySession(s.logout))
	mux.HandleFunc("GET /dashboard/security", s.authed(false, s.securityPage))
	mux.HandleFunc("POST /dashboard/security/totp", s.authed(false, s.beginTOTP))
	mux.HandleFunc("POST /dashboard/security/totp/confirm", s.authed(false, s.confirmTOTP))
	mux.HandleFunc("POST /dashboard/security/totp/disable", s.authed(false, s.disableTOTP))
	mux.HandleFunc("GET /dashboard/accounts", s.authed(false, s.accountsPage))
	mux.HandleFunc("POST /dashboard/accounts", s.authed(false, s.pickAccount))
	mux.HandleFunc("GET /dashboard/{$}", s.authed(true, s.overview))
	mux.HandleFunc("GET /dashboard/messages", s.authed(true, s.messagesPage))
	mux.HandleFunc("GET /dashboard/team", s.authed(true, s.teamPage))
	mux.HandleFunc("POST /dashboard/team/invite", s.authed(true, s.teamInvite))
	mux.HandleFunc("POST /dashboard/team/remove", s.authed(true, s.teamRemove))
	mux.HandleFunc("POST /dashboard/team/role", s.authed(true, s.teamRole))
	mux.HandleFunc("GET /dashboard/audit-log", s.authed(true, s.auditPage))
	// The message page; webhooks; domains (dashboard_message.go, dashboard_webhooks.go, dashboard_domains.go).
	mux.HandleFunc("GET /dashboard/messages/{id}", s.authed(true, s.messagePage))
	mux.HandleFunc("GET /dashboard/messages/{id}/source", s.authed(true, s.messageSource))
	mux.HandleFunc("GET /dashboard/messages/{id}/raw", s.authed(true, s.messageRawDownload))
	mux.HandleFunc("GET /dashboard/webhooks", s.authed(true, s.webhooksPage))
	mux.HandleFunc("POST /dashboard/webhooks", s.authed(true, s.createWebhookForm))
	mux.HandleFunc("GET /dashboard/webhooks/{id}", s.authed(true, s.webhookPage))
	mux.HandleFunc("POST /dashboard/webhooks/{id}", s.authed(true, s.updateWebhookForm))
	mux.HandleFunc("POST /dashboard/webhooks/{id}/test", s.authed(true, s.testWebhookForm))
	mux.HandleFunc("POST /dashboard/webhooks/{id}/rotate-secret", s.authed(true, s.rotateWebhookForm))
	mux.HandleFunc("POST /dashboard/webhooks/{id}/delete", s.authed(true, s.deleteWebhookForm))
	mux.HandleFunc("POST /dashboard/webhooks/{id}/replay", s.authed(true, s.replayForm))
	mux.HandleFunc("GET /dashboard/domains", s.authed(true, s.domainsPage))
	mux.HandleFunc("POST /dashboard/domains", s.authed(true, s.createDomainForm))
	mux.HandleFunc("GET /dashboard/domains/{id}", s.authed(true, s.domainPage))
	mux.HandleFunc("POST /dashboard/domains/{id}/verify", s.authed(true, s.verifyDomainForm))
	mux.HandleFunc("POST /dashboard/domains/{id}/rotate-dkim", s.authed(true, s.rotateDKIMForm))
	mux.HandleFunc("POST /dashboard/domains/{id}/delete", s.authed(true, s.deleteDomainForm))
	mux.HandleFunc("POST /dashboard/domains/{id}/grade", s.authed(true, s.gradeDomainForm))
	s.dashboardRoutesB(mux) // API keys, suppressions, templates, IPs, account, grader: dashboard_pages_b.go
	mux.HandleFunc("/dashboard/", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, http.StatusNotFound, "error", page{Title: "Not found", Error: "There is no page at " + r.URL.Path + "."})
	})
	return mux
}

// render writes a page with status.
// dashboardAssets is where the dashboard's embedded files are served.
const dashboardAssets = "/dashboard/assets/"

func (s *Server) render(w http.ResponseWriter, status int, name string, p page) {
	noCache(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := dashboardPages[name].ExecuteTemplate(w, "layout", p); err != nil {
		s.log.Error("rendering a dashboard page failed", "page", name, "err", err)
	}
}

// fail renders the page for an error of a use case: its status, its
// message.
func (s *Server) fail(w http.ResponseWriter, sess app.Session, err error) {
	var e *app.Error
	if !errors.As(err, &e) {
		e = app.Internal(err)
	}
	msg := e.Message
	if e.Code == app.CodeInternal {
		msg = "Something went wrong on the server; the log has the details."
		s.log.Error("dashboard request failed", "err", err)
	}
	s.render(w, e.Status(), "error", s.pageOf(sess, http.StatusText(e.Status()), page{Error: msg}))
}

// pageOf fills a page's session fields.
func (s *Server) pageOf(sess app.Session, title string, p page) page {
	p.Title, p.Principal, p.Email, p.CSRF = title, sess.Principal, sess.Email, sess.CSRF
	if sess.Email != "" {
		if list, err := s.app.Accounts(sess); err == nil {
			p.Many = len(list) > 1
		}
	}
	return p
}

// secure reports whether cookies set in answer to r must be Secure: the
// public URL is https, or r came over TLS (directly or through a trusted
// proxy that says so).
func (s *Server) secure(r *http.Request) bool {
	return strings.HasPrefix(s.app.PublicURL(), "https://") || requestScheme(r) == "https"
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/dashboard/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secure(r)})
}

// session reads r's session: 401 when there is none or it ended.
func (s *Server) session(r *http.Request) (app.Session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return app.Session{}, app.NewError(app.CodeUnauthorized, "not logged in")
	}
	return s.app.Session(c.Value)
}

// authed wraps a page that needs a session (and, when needAccount, a
// picked account). Without one, a GET goes to the login page and anything
// else is 401; a POST without the session's CSRF token is 403. A session
// whose second factor is due goes to the code page.
func (s *Server) authed(needAccount bool, h func(http.ResponseWriter, *http.Request, app.Session)) http.HandlerFunc {
	return s.withSession(func(sess app.Session) string {
		switch {
		case sess.SecondFactorDue:
			return "/dashboard/login/code"
		case needAccount && sess.Principal.Account.ID == "":
			return "/dashboard/accounts"
		}
		return ""
	}, h)
}

// secondFactorDue wraps the code page: only a session waiting for its
// second factor reaches it.
func (s *Server) secondFactorDue(h func(http.ResponseWriter, *http.Request, app.Session)) http.HandlerFunc {
	return s.withSession(func(sess app.Session) string {
		if !sess.SecondFactorDue {
			return "/dashboard/"
		}
		return ""
	}, h)
}

// anySession wraps what every session may do, a waiting one too (log out).
func (s *Server) anySession(h func(http.ResponseWriter, *http.Request, app.Session)) http.HandlerFunc {
	return s.withSession(func(app.Session) string { return "" }, h)
}

// withSession reads the session and checks a POST's CSRF token; elsewhere
// names the page a session that may not see this one goes to (a GET is
// redirected there, anything else is 401).
func (s *Server) withSession(elsewhere func(app.Session) string, h func(http.ResponseWriter, *http.Request, app.Session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.session(r)
		if err != nil {
			s.setCookie(w, r, sessionCookie, "", -1)
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/dashboard/login", http.StatusSeeOther)
				return
			}
			s.fail(w, app.Session{}, err)
			return
		}
		if r.Method == http.MethodPost {
			if err := parseDashboardForm(r); err != nil {
				s.fail(w, sess, app.Validation("form", "cannot be read"))
				return
			}
			if !sess.CheckCSRF(r.PostForm.Get("csrf")) {
				s.fail(w, sess, app.NewError(app.CodeForbidden, "The form's CSRF token is missing or wrong: reload the page and try again."))
				return
			}
		}
		sess.Principal.Source = clientIP(r) // for the audit log
		if to := elsewhere(sess); to != "" {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, to, http.StatusSeeOther)
				return
			}
			s.fail(w, sess, app.NewError(app.CodeUnauthorized, "Not yet: "+to+" comes first."))
			return
		}
		h(w, r, sess)
	}
}

// formToken is the CSRF token of a form shown before a session exists: the
// value of formCookie, set when missing.
func (s *Server) formToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(formCookie); err == nil && len(c.Value) >= 32 && len(c.Value) <= 64 {
		return c.Value
	}
	t := app.NewSecretToken()
	s.setCookie(w, r, formCookie, t, 0)
	return t
}

// checkFormToken is nil when r's form posts its formCookie's value.
func checkFormToken(r *http.Request) error {
	c, err := r.Cookie(formCookie)
	if err != nil || c.Value == "" || r.PostForm.Get("csrf") != c.Value {
		return app.NewError(app.CodeForbidden, "The form's CSRF token is missing or wrong: reload the page and try again.")
	}
	return nil
}

// plainRefused is non-nil when a password would travel in clear over a
// network: r came over plain HTTP from a peer that is not loopback, and
// the server does not run with --dev.
func (s *Server) plainRefused(r *http.Request) error {
	if s.cfg.Dev || requestScheme(r) == "https" {
		return nil
	}
	if a, err := netip.ParseAddr(clientIP(r)); err == nil && a.Unmap().IsLoopback() {
		return nil
	}
	return app.NewError(app.CodeHTTPSRequired, "Passwords are accepted only over HTTPS: open this page at its https:// address.")
}

// loginQuota counts one login attempt against r's source address and, once
// known, the email; ok is false when either is over its limit. The
// attempts are counted in the database (app.Attempt), so several nodes
// allow no more than one.
func (s *Server) loginQuota(w http.ResponseWriter, key string, limit int) (ok bool, err error) {
	q, err := s.app.Attempt("login:"+key, limit, s.cfg.LoginWindow)
	if err != nil {
		return false, err
	}
	if !q.Allowed {
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, q.Reset-s.app.Now().Unix()), 10))
	}
	return q.Allowed, nil
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	if _, err := s.session(r); err == nil {
		http.Redirect(w, r, "/dashboard/", http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login", page{Title: "Log in", CSRF: s.formToken(w, r)})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	again := func(status int, msg, email string) {
		s.render(w, status, "login", page{Title: "Log in", CSRF: s.formToken(w, r), Error: msg, Data: email})
	}
	if err := s.plainRefused(r); err != nil {
		s.fail(w, app.Session{}, err)
		return
	}
	if ok, err := s.loginQuota(w, "ip:"+sourceNet(clientIP(r)), s.cfg.LoginIPLimit); err != nil {
		s.fail(w, app.Session{}, err)
		return
	} else if !ok {
		again(http.StatusTooManyRequests, "Too many login attempts from your address: wait a minute.", "")
		return
	}
	if err := r.ParseForm(); err != nil {
		again(http.StatusBadRequest, "The form cannot be read.", "")
		return
	}
	if err := checkFormToken(r); err != nil {
		s.fail(w, app.Session{}, err)
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	// One quota per login, whichever spelling of its domain is typed.
	quotaKey := email
	if k, err := app.NormalizeAddress("email", email); err == nil {
		quotaKey = k
	}
	if ok, err := s.loginQuota(w, "email:"+quotaKey, s.cfg.LoginEmailLimit); err != nil {
		s.fail(w, app.Session{}, err)
		return
	} else if !ok {
		again(http.StatusTooManyRequests, "Too many login attempts for this email: wait a minute.", email)
		return
	}
	id, sess, err := s.app.Login(email, r.PostForm.Get("password"), clientIP(r))
	if err != nil {
		var e *app.Error
		if errors.As(err, &e) && e.Code == app.CodeUnauthorized {
			again(http.StatusUnauthorized, "The email or the password is wrong.", email)
			return
		}
		s.fail(w, app.Session{}, err)
		return
	}
	s.setCookie(w, r, sessionCookie, id, int(sess.ExpiresAt.Sub(s.app.Now()).Seconds()))
	s.setCookie(w, r, formCookie, "", -1)
	to := "/dashboard/"
	switch {
	case sess.SecondFactorDue:
		to = "/dashboard/login/code"
	case sess.Principal.Account.ID == "":
		to = "/dashboard/accounts"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if err := s.app.Logout(sess); err != nil {
		s.fail(w, sess, err)
		return
	}
	s.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/dashboard/login", http.StatusSeeOther)
}

func (s *Server) accountsPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	list, err := s.app.Accounts(sess)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.render(w, http.StatusOK, "accounts", s.pageOf(sess, "Pick an account", page{Data: list}))
}

func (s *Server) pickAccount(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if err := s.app.PickAccount(sess, r.PostForm.Get("account")); err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/", http.StatusSeeOther)
}
