// Package web is Mailbolt's HTTP API: routing, the middleware every request
// passes (request id, access log, rate limits, versioning, authentication,
// idempotency), the handlers, the OpenAPI document, the management socket
// the CLI talks to while the server runs, and the dashboard's pages
// (dashboard*.go).
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"mailbolt/app"
)

// Config configures the HTTP API. Start from DefaultConfig: every field
// is used as given.
type Config struct {
	// MaxBodyBytes caps request bodies (413 BODY_TOO_LARGE).
	MaxBodyBytes int64
	// IPRateLimit is how many unauthenticated requests one source IP may
	// make per second.
	IPRateLimit int
	// Deprecated marks v1 deprecated: every response carries Deprecation,
	// Sunset and Warning headers.
	Deprecated bool
	// Sunset is when v1 stops answering (410 VERSION_SUNSET); zero for never.
	Sunset time.Time
	Logger *slog.Logger

	// GraderRateLimit public checks per source IP per GraderRateWindow
	// (GRADER_RATE_LIMIT, GRADER_RATE_WINDOW).
	GraderRateLimit  int
	GraderRateWindow time.Duration
	// GraderMaxBody caps grader request bodies (GRADER_MAX_BODY_SIZE).
	GraderMaxBody int64
	// GraderAuthHostname, when set, is the only host name the
	// authenticated grader routes answer to (GRADER_AUTH_HOSTNAME).
	GraderAuthHostname string
	// TrustedProxies are the peers whose X-Forwarded-For, Forwarded and
	// X-Forwarded-Proto headers count (--trusted-proxies); see client.go.
	TrustedProxies []netip.Prefix
	// ReadTimeout bounds reading one request, headers and body, and
	// MaxConnsPerIP the connections one source IP may hold open
	// (LimitConns; trusted proxies are exempt). They are the settings of
	// the http.Server and listener the API is served on (--read-timeout,
	// --max-connections-per-ip), which its caller builds.
	ReadTimeout   time.Duration
	MaxConnsPerIP int
	// TrustForwardedFor (GRADER_TRUST_FORWARDED_FOR), when TrustedProxies
	// is empty, trusts loopback peers (LoopbackProxies) as proxies.
	TrustForwardedFor bool
	// Dev (--dev) lets the dashboard take passwords over plain HTTP from
	// peers that are not loopback.
	Dev bool
	// LoginIPLimit and LoginEmailLimit are how many dashboard login
	// attempts one source address and one email may make per LoginWindow.
	LoginIPLimit    int
	LoginEmailLimit int
	LoginWindow     time.Duration
	// Observe, when set, is told of every request once answered: its
	// route pattern (the access log's route, never the path), method,
	// status and duration. serve feeds the request metric with it.
	Observe func(route, method string, status int, d time.Duration)
}

// Server is the HTTP API.
type Server struct {
	app       *app.App
	cfg       Config
	log       *slog.Logger
	router    *httprouter.Router
	statics   map[string]map[string]httprouter.Handle // exact paths httprouter cannot hold
	keys      *limiter
	ips       *limiter
	graderIPs *slidingLimiter // public grader checks per source IP
	dash      *http.ServeMux  // the dashboard's pages
	proxies   []netip.Prefix  // peers whose forwarding headers count
}

// DefaultConfig is the documented configuration (docs/configuration.md,
// docs/grader.md): request bodies up to 10 MiB read within 30 s, 256
// connections and 20 requests per second per source IP without a key, 10
// public grader checks per source IP per hour with bodies up to 256 KB, 20
// dashboard login attempts per source IP and 5 per email per minute, no
// access log, v1 not deprecated.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 10 << 20, IPRateLimit: 20, Logger: slog.New(slog.DiscardHandler),
		GraderRateLimit: 10, GraderRateWindow: time.Hour, GraderMaxBody: 256 << 10,
		ReadTimeout: 30 * time.Second, MaxConnsPerIP: 256,
		LoginIPLimit: 20, LoginEmailLimit: 5, LoginWindow: time.Minute}
}

func (cfg Config) check() error {
	switch {
	case cfg.MaxBodyBytes < 1 || cfg.GraderMaxBody < 1:
		return errors.New("web: body limits must be positive")
	case cfg.IPRateLimit < 1 || cfg.GraderRateLimit < 1 || cfg.GraderRateWindow <= 0 ||
		cfg.LoginIPLimit < 1 || cfg.LoginEmailLimit < 1 || cfg.LoginWindow <= 0:
		return errors.New("web: rate limits must be positive")
	case cfg.ReadTimeout <= 0 || cfg.MaxConnsPerIP < 1:
		return errors.New("web: the read timeout and the connections per IP must be positive")
	case cfg.Logger == nil:
		return errors.New("web: a logger is needed (slog.DiscardHandler for none)")
	}
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() {
			return errors.New("web: a trusted proxy range is not valid")
		}
	}
	return nil
}

// New builds the API over a, refusing a configuration it cannot use.
func New(a *app.App, cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Server{app: a, cfg: cfg, log: cfg.Logger, keys: newLimiter(a, "api-key"), ips: newLimiter(a, "api-ip"),
		graderIPs: newSlidingLimiter(a, "grader-ip"), proxies: cfg.trustedProxies()}
	s.router = s.buildRouter()
	s.dash = s.dashboardMux()
	return s, nil
}

type ctxKey struct{}

// overLimitKey marks a tracking request over its source's rate limit.
type overLimitKey struct{}

// reqIDKey carries the request id, for log lines written below ServeHTTP.
type reqIDKey struct{}

// routeKey carries a *string that guard fills with the matched route's
// pattern, so that log lines name the route and never the path: paths of
// public routes carry link tokens (unsubscribe, click, open, invitation)
// that anyone who reads the log could replay.
type routeKey struct{}

// unmatchedRoute is what the log shows for a request no route took.
const unmatchedRoute = "(none)"

// routeOf is the pattern of the route r was matched to, or unmatchedRoute.
func routeOf(r *http.Request) string {
	if p, _ := r.Context().Value(routeKey{}).(*string); p != nil && *p != "" {
		return *p
	}
	return unmatchedRoute
}

// identity is who sent a request, resolved once before routing.
type identity struct {
	principal app.Principal
	err       error // why the X-API-Key did not authenticate
}

// ServeHTTP runs the request through the middleware every route shares.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &recorder{ResponseWriter: w}
	r = withClient(r, resolveClient(r, s.proxies))
	reqID := requestID(r)
	rw.Header().Set("X-Request-Id", reqID)
	r = r.WithContext(context.WithValue(context.WithValue(r.Context(), reqIDKey{}, reqID), routeKey{}, new(string)))
	var id identity
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				// A handler broke off an answer it had begun (a failed
				// export): let net/http drop the connection.
				s.logAccess(r, rw, reqID, id, start)
				panic(p)
			}
			s.log.Error("handler panicked", "request_id", reqID, "panic", fmt.Sprint(p))
			if !rw.wrote {
				s.writeError(rw, r, app.Internal(fmt.Errorf("panic: %v", p)))
			}
		}
		s.logAccess(r, rw, reqID, id, start)
	}()

	s.versionHeaders(rw.Header())
	r.Body = http.MaxBytesReader(rw, r.Body, s.cfg.MaxBodyBytes)
	if s.probe(rw, r) {
		return
	}
	if s.plainHTTP(rw, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, dashboardAssets) && s.dashboard(rw, r) {
		// The dashboard's style sheet, scripts and icon: embedded files,
		// cheap to serve, loaded by every page. Counting them against the
		// per-IP limit made a few page views a second hit it.
		return
	}

	id.principal, id.err = s.app.Authenticate(r.Header.Get("X-API-Key"))
	var q quota
	if id.err == nil {
		q = s.keys.take(id.principal.KeyID, app.Limits(id.principal.Account).RateLimit, s.app.Now())
	} else {
		q = s.ips.take(sourceNet(clientIP(r)), s.cfg.IPRateLimit, s.app.Now())
	}
	h := rw.Header()
	rateHeaders(h, q)
	if !q.allowed && strings.HasPrefix(r.URL.Path, trackingPrefix) {
		// A tracking pixel or redirect is still answered (a mail client
		// must never see an error), but not recorded.
		r = r.WithContext(context.WithValue(r.Context(), overLimitKey{}, true))
		q.allowed = true
	}
	if !q.allowed {
		s.overLimit(rw, r, q)
		return
	}
	if s.dashboard(rw, r) {
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		s.writeError(rw, r, app.NewError(app.CodeNotFound,
			"unknown path "+r.URL.Path+": every API path begins with /v1/"))
		return
	}
	if !s.cfg.Sunset.IsZero() && !s.app.Now().Before(s.cfg.Sunset) {
		s.writeError(rw, r, app.NewError(app.CodeVersionSunset,
			"API version v1 was sunset on "+s.cfg.Sunset.UTC().Format(http.TimeFormat)))
		return
	}
	s.route(rw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, &id)))
}

// rateHeaders are the rate-limit headers every answer carries.
func rateHeaders(h http.Header, q quota) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(q.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(q.remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(q.reset, 10))
}

// overLimit answers 429 RATE_LIMIT_EXCEEDED for quota q.
func (s *Server) overLimit(w http.ResponseWriter, r *http.Request, q quota) {
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, q.reset-s.app.Now().Unix()), 10))
	if strings.HasPrefix(r.URL.Path, "/dashboard/") {
		// A person's browser: a page, not the API's JSON, with the
		// dashboard's headers (CSP, Referrer-Policy, …) as every page.
		dashboardHeaders(w.Header())
		s.render(w, http.StatusTooManyRequests, "error", page{Title: "Too many requests",
			Error: fmt.Sprintf("Too many requests from your address (more than %d a second): wait a moment and reload.", q.limit)})
		return
	}
	s.writeError(w, r, app.NewError(app.CodeRateLimitExceeded,
		fmt.Sprintf("rate limit of %d requests per second exceeded", q.limit)))
}

// versionHeaders announces the deprecation of v1 (spec §9).
func (s *Server) versionHeaders(h http.Header) {
	if !s.cfg.Deprecated {
		return
	}
	h.Set("Deprecation", "true")
	sunset, warning := app.DeprecationHeaders("v1", s.cfg.Sunset)
	if sunset != "" {
		h.Set("Sunset", sunset)
	}
	h.Set("Warning", warning)
}

func (s *Server) logAccess(r *http.Request, rw *recorder, reqID string, id identity, start time.Time) {
	took := time.Since(start)
	if s.cfg.Observe != nil {
		s.cfg.Observe(routeOf(r), r.Method, rw.status, took)
	}
	attrs := make([]slog.Attr, 0, 11)
	attrs = append(attrs, slog.String("method", r.Method), slog.String("route", routeOf(r)), slog.Int("status", rw.status),
		slog.Int("bytes", rw.bytes), slog.Float64("duration_ms", float64(took.Microseconds())/1000),
		slog.String("request_id", reqID), slog.String("remote", clientIP(r)), slog.String("scheme", requestScheme(r)))
	if c := clientOf(r); c.peer != c.addr {
		attrs = append(attrs, slog.String("peer", c.peer.String()))
	}
	if id.err == nil && id.principal.Kind != "" { // a probe answers before any key is read
		attrs = append(attrs, slog.String("account", id.principal.Account.ID), slog.String("key_id", id.principal.KeyID))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// requestID keeps a caller's X-Request-Id when it is short and plain, so
// logs can be joined across services; otherwise it makes a new one.
func requestID(r *http.Request) string {
	if v := r.Header.Get("X-Request-Id"); v != "" && len(v) <= 128 && strings.IndexFunc(v, func(c rune) bool {
		return !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}) < 0 {
		return v
	}
	return app.NewID()
}

// recorder remembers what was written, for the access log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
	wrote  bool
}

func (rw *recorder) WriteHeader(code int) {
	if !rw.wrote {
		rw.status, rw.wrote = code, true
	}
	rw.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (to flush a
// streamed answer and extend its write deadline).
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

func (rw *recorder) Write(b []byte) (int, error) {
	if !rw.wrote {
		rw.WriteHeader(http.StatusOK)
	}
	n, err := rw.ResponseWriter.Write(b)
	rw.bytes += n
	return n, err
}
