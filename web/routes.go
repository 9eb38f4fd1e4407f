package web

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/julienschmidt/httprouter"

	"mailbolt/app"
)

// call is what a handler needs besides the request: the caller and the
// path parameters.
type call struct {
	app.Principal
	params httprouter.Params
}

type handler func(w http.ResponseWriter, r *http.Request, c *call)

// route is one API endpoint. Routes is the single list the router is built
// from and the OpenAPI coverage test checks. Scope is what the caller must
// hold, checked before the request's body is read, so a key without it is
// answered 403 whatever it sends (spec §5); the use case its handler calls
// checks its caller again (app's authorize), as it does for every kind of
// caller. A test holds Scope to the OpenAPI document's "Requires scope".
type route struct {
	Method string
	Path   string // httprouter syntax: /v1/api-keys/:id
	Public bool   // answered without an API key (its token, if any, is the credential)
	Scope  string // required of every caller ("" only for Public routes)
	h      handler
}

func (s *Server) routes() []route {
	return []route{
		{Method: "GET", Path: "/v1/openapi.json", Public: true, h: s.openAPI},
		{Method: "GET", Path: "/v1/account", Scope: app.ScopeAccountRead, h: s.getAccount},
		{Method: "POST", Path: "/v1/messages", Scope: app.ScopeMessagesWrite, h: s.sendMessage},
		{Method: "GET", Path: "/v1/messages", Scope: app.ScopeMessagesRead, h: s.listMessages},
		{Method: "POST", Path: "/v1/messages/batch", Scope: app.ScopeMessagesWrite, h: s.sendBatch},
		{Method: "GET", Path: "/v1/messages/:id", Scope: app.ScopeMessagesRead, h: s.getMessage},
		{Method: "GET", Path: "/v1/messages/:id/raw", Scope: app.ScopeMessagesRead, h: s.getMessageRaw},
		{Method: "POST", Path: "/v1/messages/:id/cancel", Scope: app.ScopeMessagesWrite, h: s.cancelMessage},
		{Method: "GET", Path: "/v1/events", Scope: app.ScopeEventsRead, h: s.listEvents},
		{Method: "GET", Path: "/v1/api-keys", Scope: app.ScopeAPIKeysRead, h: s.listKeys},
		{Method: "POST", Path: "/v1/api-keys", Scope: app.ScopeAPIKeysWrite, h: s.createKey},
		{Method: "GET", Path: "/v1/api-keys/:id", Scope: app.ScopeAPIKeysRead, h: s.getKey},
		{Method: "DELETE", Path: "/v1/api-keys/:id", Scope: app.ScopeAPIKeysWrite, h: s.revokeKey},
		{Method: "GET", Path: "/v1/suppressions", Scope: app.ScopeSuppressionsRead, h: s.listSuppressions},
		{Method: "POST", Path: "/v1/suppressions", Scope: app.ScopeSuppressionsWrite, h: s.addSuppression},
		{Method: "DELETE", Path: "/v1/suppressions/:recipient", Scope: app.ScopeSuppressionsWrite, h: s.deleteSuppression},
		{Method: "POST", Path: "/v1/suppressions/import", Scope: app.ScopeSuppressionsWrite, h: s.importSuppressions},
		{Method: "GET", Path: "/v1/suppressions/export", Scope: app.ScopeSuppressionsRead, h: s.exportSuppressions},
		{Method: "GET", Path: "/v1/domains", Scope: app.ScopeDomainsRead, h: s.listDomains},
		{Method: "POST", Path: "/v1/domains", Scope: app.ScopeDomainsWrite, h: s.createDomain},
		{Method: "GET", Path: "/v1/domains/:id", Scope: app.ScopeDomainsRead, h: s.getDomain},
		{Method: "DELETE", Path: "/v1/domains/:id", Scope: app.ScopeDomainsWrite, h: s.deleteDomain},
		{Method: "POST", Path: "/v1/domains/:id/verify", Scope: app.ScopeDomainsWrite, h: s.verifyDomain},
		{Method: "POST", Path: "/v1/domains/:id/dkim/rotate", Scope: app.ScopeDomainsWrite, h: s.rotateDKIM},
		{Method: "GET", Path: "/v1/templates", Scope: app.ScopeTemplatesRead, h: s.listTemplates},
		{Method: "POST", Path: "/v1/templates", Scope: app.ScopeTemplatesWrite, h: s.createTemplate},
		{Method: "GET", Path: "/v1/templates/:id", Scope: app.ScopeTemplatesRead, h: s.getTemplate},
		{Method: "PUT", Path: "/v1/templates/:id", Scope: app.ScopeTemplatesWrite, h: s.updateTemplate},
		{Method: "GET", Path: "/v1/templates/:id/versions", Scope: app.ScopeTemplatesRead, h: s.listTemplateVersions},
		{Method: "POST", Path: "/v1/templates/:id/render", Scope: app.ScopeTemplatesRead, h: s.renderTemplate},
		{Method: "GET", Path: "/v1/webhooks", Scope: app.ScopeWebhooksRead, h: s.listWebhooks},
		{Method: "POST", Path: "/v1/webhooks", Scope: app.ScopeWebhooksWrite, h: s.createWebhook},
		{Method: "GET", Path: "/v1/webhooks/:id", Scope: app.ScopeWebhooksRead, h: s.getWebhook},
		{Method: "DELETE", Path: "/v1/webhooks/:id", Scope: app.ScopeWebhooksWrite, h: s.deleteWebhook},
		{Method: "PATCH", Path: "/v1/webhooks/:id", Scope: app.ScopeWebhooksWrite, h: s.updateWebhook},
		{Method: "POST", Path: "/v1/webhooks/:id/test", Scope: app.ScopeWebhooksWrite, h: s.testWebhook},
		{Method: "POST", Path: "/v1/webhooks/:id/rotate-secret", Scope: app.ScopeWebhooksWrite, h: s.rotateWebhookSecret},
		{Method: "GET", Path: "/v1/webhooks/:id/deliveries", Scope: app.ScopeWebhooksRead, h: s.listDeliveries},
		{Method: "POST", Path: "/v1/webhooks/:id/events/:event_id/replay", Scope: app.ScopeWebhooksWrite, h: s.replay},
		{Method: "GET", Path: "/v1/audit-log", Scope: app.ScopeAccountRead, h: s.listAuditLog},
		{Method: "GET", Path: "/v1/team", Scope: app.ScopeTeamRead, h: s.listTeam},
		{Method: "POST", Path: "/v1/team/invite", Scope: app.ScopeTeamWrite, h: s.invite},
		{Method: "GET", Path: "/v1/team/accept/:token", Public: true, h: s.acceptForm},
		{Method: "POST", Path: "/v1/team/accept/:token", Public: true, h: s.acceptInvitation},
		{Method: "GET", Path: "/v1/t/o/:token", Public: true, h: s.openPixel},
		{Method: "GET", Path: "/v1/t/c/:token", Public: true, h: s.click},
		{Method: "GET", Path: "/v1/u/:token", Public: true, h: s.unsubscribeForm},
		{Method: "POST", Path: "/v1/u/:token", Public: true, h: s.unsubscribe},
		{Method: "GET", Path: "/v1/analytics/summary", Scope: app.ScopeAnalyticsRead, h: s.analyticsSummary},
		{Method: "POST", Path: "/v1/grader/check", Public: true, h: s.graderCheck},
		{Method: "POST", Path: "/v1/grader/submit", Scope: app.ScopeGraderWrite, h: s.graderSubmit},
		{Method: "GET", Path: "/v1/grader/results/:id", Scope: app.ScopeGraderRead, h: s.graderResult},
		{Method: "GET", Path: "/v1/grader/history", Scope: app.ScopeGraderRead, h: s.graderHistory},
		{Method: "GET", Path: "/v1/ips", Scope: app.ScopeIPsRead, h: s.listIPs},
		{Method: "GET", Path: "/v1/ips/pools", Scope: app.ScopeIPsRead, h: s.listPools},
		{Method: "GET", Path: "/v1/inbound/domains", Scope: app.ScopeInboundRead, h: s.listInboundDomains},
		{Method: "POST", Path: "/v1/inbound/domains", Scope: app.ScopeInboundWrite, h: s.createInboundDomain},
		{Method: "GET", Path: "/v1/inbound/domains/:id", Scope: app.ScopeInboundRead, h: s.getInboundDomain},
		{Method: "DELETE", Path: "/v1/inbound/domains/:id", Scope: app.ScopeInboundWrite, h: s.deleteInboundDomain},
		{Method: "POST", Path: "/v1/inbound/domains/:id/verify", Scope: app.ScopeInboundWrite, h: s.verifyInboundDomain},
		{Method: "GET", Path: "/v1/inbound/routes", Scope: app.ScopeInboundRead, h: s.listInboundRoutes},
		{Method: "POST", Path: "/v1/inbound/routes", Scope: app.ScopeInboundWrite, h: s.createInboundRoute},
		{Method: "GET", Path: "/v1/inbound/routes/:id", Scope: app.ScopeInboundRead, h: s.getInboundRoute},
		{Method: "DELETE", Path: "/v1/inbound/routes/:id", Scope: app.ScopeInboundWrite, h: s.deleteInboundRoute},
		{Method: "GET", Path: "/v1/inbound/messages/:id/raw", Scope: app.ScopeInboundRead, h: s.inboundRaw},
	}
}

// Routes lists method and path of every registered route, for the OpenAPI
// coverage test and the docs.
func (s *Server) Routes() [][2]string {
	var out [][2]string
	for _, rt := range s.routes() {
		out = append(out, [2]string{rt.Method, rt.Path})
	}
	return out
}

func (s *Server) buildRouter() *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false
	r.HandleMethodNotAllowed = true
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.writeError(w, req, app.NewError(app.CodeNotFound, "no such endpoint: "+req.URL.Path))
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// httprouter always lists OPTIONS, which this API does not answer.
		var allow []string
		for _, m := range strings.Split(w.Header().Get("Allow"), ", ") {
			if m != http.MethodOptions {
				allow = append(allow, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, req, app.NewError(app.CodeMethodNotAllowed,
			req.Method+" is not allowed on "+req.URL.Path+"; allowed: "+w.Header().Get("Allow")))
	})
	s.statics = map[string]map[string]httprouter.Handle{}
	routes := s.routes()
	for _, rt := range routes {
		// httprouter cannot hold a static segment where another route of
		// the method has a parameter (POST /v1/messages/batch beside POST
		// /v1/messages/:id/cancel): such a path is matched exactly before
		// the router is asked.
		if shadowedStatic(routes, rt) {
			if s.statics[rt.Path] == nil {
				s.statics[rt.Path] = map[string]httprouter.Handle{}
			}
			s.statics[rt.Path][rt.Method] = s.guard(rt)
			continue
		}
		r.Handle(rt.Method, rt.Path, s.guard(rt))
	}
	return r
}

// shadowedStatic reports whether rt's last segment is static where
// another route has a parameter at the same place under the same prefix.
func shadowedStatic(routes []route, rt route) bool {
	segs := strings.Split(rt.Path, "/")
	last := len(segs) - 1
	if strings.HasPrefix(segs[last], ":") {
		return false
	}
	for _, other := range routes {
		o := strings.Split(other.Path, "/")
		if len(o) > last && strings.HasPrefix(o[last], ":") && strings.Join(o[:last], "/") == strings.Join(segs[:last], "/") {
			return true
		}
	}
	return false
}

// route dispatches a request: exact static paths first, then the router,
// both on the routing path (routingPath).
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	path, escaped := routingPath(r.URL)
	methods, ok := s.statics[path]
	if !ok {
		s.dispatch(w, r, path, escaped)
		return
	}
	if h, ok := methods[r.Method]; ok {
		h(w, r, nil)
		return
	}
	allow := make([]string, 0, len(methods))
	for m := range methods {
		allow = append(allow, m)
	}
	sort.Strings(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	s.router.MethodNotAllowed.ServeHTTP(w, r)
}

// routingPath is the path a request is routed on: its path as sent, each
// segment decoded, except that a "/" or "%" inside a segment stays escaped
// (%2F, %25). A parameter so holds a "/" it was sent with as %2F (an
// email address may: "/" is atext in RFC 5322 §3.2.3), where routing on
// the decoded path split it in two and matched no route, or another one.
// escaped reports a path that holds either, whose parameters the router
// hands over still escaped; otherwise the path is r.URL.Path.
func routingPath(u *url.URL) (path string, escaped bool) {
	raw := u.EscapedPath()
	if !strings.Contains(raw, "%") {
		return u.Path, false
	}
	segs := strings.Split(raw, "/")
	for i, seg := range segs {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return u.Path, false // not sent so: the server parsed it
		}
		if strings.ContainsAny(dec, "/%") {
			escaped = true
			dec = segmentEscaper.Replace(dec)
		}
		segs[i] = dec
	}
	if !escaped {
		return u.Path, false
	}
	return strings.Join(segs, "/"), true
}

var segmentEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// dispatch hands r to the router. A path with escapes (routingPath) is
// looked up as it is, and its parameters are unescaped for the handler;
// one no route of the method takes is answered 404 or 405 by the router
// for that path.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, path string, escaped bool) {
	if !escaped {
		s.router.ServeHTTP(w, r)
		return
	}
	if h, ps, _ := s.router.Lookup(r.Method, path); h != nil {
		params := make(httprouter.Params, len(ps))
		for i, p := range ps {
			v, err := url.PathUnescape(p.Value)
			if err != nil {
				v = p.Value // cannot happen: routingPath escaped every "%"
			}
			params[i] = httprouter.Param{Key: p.Key, Value: v}
		}
		h(w, r, params)
		return
	}
	u := *r.URL
	u.Path, u.RawPath = path, ""
	routed := r.WithContext(r.Context()) // a shallow copy, for its URL
	routed.URL = &u
	s.router.ServeHTTP(w, routed)
}

// guard authenticates a route's caller (401), applies GRADER_AUTH_HOSTNAME
// to the grader's routes (404) and the route's scope (403), all before the
// body is read, then runs the route, through the idempotency store when
// the request carries an Idempotency-Key.
func (s *Server) guard(rt route) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		c := &call{params: ps}
		if p, _ := r.Context().Value(routeKey{}).(*string); p != nil {
			*p = rt.Path
		}
		if strings.HasPrefix(rt.Path, "/v1/grader/") && s.app.GraderDisabled() {
			s.writeError(w, r, app.ErrGraderDisabled) // before authentication: the whole grader is off
			return
		}
		if rt.Public {
			rt.h(w, r, c)
			return
		}
		id := r.Context().Value(ctxKey{}).(*identity)
		if id.err != nil {
			s.writeError(w, r, id.err)
			return
		}
		c.Principal = id.principal
		c.Principal.Source = clientIP(r)
		if strings.HasPrefix(rt.Path, "/v1/grader/") && !s.authHostOK(w, r) {
			return // GRADER_AUTH_HOSTNAME: another host is 404, whatever the key holds
		}
		if err := s.app.Authorize(c.Principal, rt.Scope); err != nil {
			s.writeError(w, r, err)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if key == "" || r.Method == http.MethodGet {
			rt.h(w, r, c)
			return
		}
		s.idempotent(w, r, c, key, rt.h)
	}
}

// idempotent runs h at most once per (API key, Idempotency-Key), replaying
// the stored answer to repeats (spec §8).
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, c *call, key string, h handler) {
	if len(key) > app.MaxIdempotencyKeyLen || !printableASCII(key) {
		s.writeError(w, r, app.Validation("Idempotency-Key", "must be 1 to 255 printable ASCII characters"))
		return
	}
	body, e := readBody(r, s.cfg.MaxBodyBytes)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	fp := app.Fingerprint(r.Method, r.URL.Path, body)
	resp, replayed, e := s.app.Idempotent(r.Context(), c.Principal, r.Header.Get("X-API-Key"), key, fp, func(p app.Principal) app.Response {
		c.Principal = p // carries the answer slot to the use case
		r.Body = io.NopCloser(bytes.NewReader(body))
		buf := &bufferedWriter{header: http.Header{}}
		h(buf, r, c)
		return buf.response()
	})
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
}

// answer registers write as the way c's write use case answers, so that an
// idempotent request stores that answer in the transaction of its effect
// (app.Answer), and returns write for the handler to answer with. write
// must depend on the result alone: it also runs inside that transaction.
func answer[T any](c *call, write func(w http.ResponseWriter, result T)) func(w http.ResponseWriter, result T) {
	app.Answer(c.Principal, func(result T) app.Response {
		buf := &bufferedWriter{header: http.Header{}}
		write(buf, result)
		return buf.response()
	})
	return write
}

// noContent is the answer of a write that returns nothing: 204.
func noContent(w http.ResponseWriter, _ struct{}) { w.WriteHeader(http.StatusNoContent) }

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// bufferedWriter captures a handler's answer so it can be stored for replay.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

// response is the captured answer.
func (b *bufferedWriter) response() app.Response {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return app.Response{Status: b.status, Header: b.header, Body: b.body.Bytes()}
}

func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
