package web

import (
	"context"
	"net/http"
	"strings"

	"mailbolt/app"
)

// HSTSValue is the Strict-Transport-Security header of every HTTPS
// answer: browsers use only HTTPS for this host for a year. Subdomains
// are not included: they may be other services.
const HSTSValue = "max-age=31536000"

// HSTS adds Strict-Transport-Security to every answer of h; serve wraps
// the API in it on the HTTPS address only (RFC 6797 §7.2: not over plain
// HTTP).
func HSTS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", HSTSValue)
		h.ServeHTTP(w, r)
	})
}

// plainKey marks a request that came over plain HTTP while the API is
// served over HTTPS; it carries the HTTPS base URL.
type plainKey struct{}

// PlainHTTP is what the plain-HTTP address answers once HTTPS is on
// (docs/tls.md): /healthz and /readyz as usual; the links Mailbolt puts
// in mail (open pixel, tracked links, unsubscribe), which mail sent before
// HTTPS was turned on still carries, as usual; dashboard pages (/ and
// /dashboard/…) redirect to the same path under httpsURL; and every other
// request — every API call — is 403 HTTPS_REQUIRED naming httpsURL. API
// calls are never redirected: the client has already sent its key in
// clear, a redirect would have it sent again, and a POST redirected with
// 301/302 becomes a GET. ACME HTTP-01 challenges are served in front of
// this by tlsconf.
func (s *Server) PlainHTTP(httpsURL string) http.Handler {
	httpsURL = strings.TrimSuffix(httpsURL, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), plainKey{}, httpsURL)))
	})
}

// plainHTTP answers a request that PlainHTTP marked, unless it is one the
// plain address serves; it reports whether it answered.
func (s *Server) plainHTTP(w http.ResponseWriter, r *http.Request) bool {
	httpsURL, _ := r.Context().Value(plainKey{}).(string)
	if httpsURL == "" || requestScheme(r) == "https" {
		// A --trusted-proxies peer that terminated TLS says so with
		// X-Forwarded-Proto: https; the key did not travel in clear.
		return false
	}
	p := r.URL.Path
	for _, pre := range []string{app.OpenPath, app.ClickPath, app.UnsubscribePath} {
		if strings.HasPrefix(p, pre) {
			return false
		}
	}
	// Counted against the source address, like any request without a
	// valid key: a key sent in clear is not looked at.
	q := s.ips.take(sourceNet(clientIP(r)), s.cfg.IPRateLimit, s.app.Now())
	rateHeaders(w.Header(), q)
	if !q.allowed {
		s.overLimit(w, r, q)
		return true
	}
	target := httpsURL + r.URL.RequestURI()
	if p == "/" || p == "/dashboard" || strings.HasPrefix(p, "/dashboard/") {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return true
		}
	}
	s.writeError(w, r, app.NewError(app.CodeHTTPSRequired,
		"this server answers the API only over HTTPS: send the request to "+target+
			" (and treat the API key sent in clear as exposed if this crossed a network you do not trust)").
		With("https_url", httpsURL))
	return true
}
