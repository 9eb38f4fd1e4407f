package web

import (
	"net/http"

	"mailbolt/app"
)

// The probe paths: unversioned, without a key, and outside the OpenAPI
// document, which describes /v1 alone (docs/operations.md).
const (
	pathHealthz = "/healthz"
	pathReadyz  = "/readyz"
)

// probeAnswer is the body of a probe's answer.
type probeAnswer struct {
	Status string `json:"status"`           // ok, ready or not_ready
	Reason string `json:"reason,omitempty"` // why not ready
}

// probe answers /healthz (the process answers) and /readyz (app.Ready:
// not shutting down, workers running, the database takes a write), and
// reports false for every other path. Probes need no key and are not rate
// limited: a load balancer must never see a 429 for its health check.
func (s *Server) probe(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != pathHealthz && r.URL.Path != pathReadyz {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.writeError(w, r, app.NewError(app.CodeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use GET"))
		return true
	}
	if route, _ := r.Context().Value(routeKey{}).(*string); route != nil {
		*route = r.URL.Path // the access log's and the metrics' route: a probe is one
	}
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == pathHealthz {
		writeJSON(w, http.StatusOK, probeAnswer{Status: "ok"})
		return true
	}
	if err := s.app.Ready(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, probeAnswer{Status: "not_ready", Reason: err.Error()})
		return true
	}
	writeJSON(w, http.StatusOK, probeAnswer{Status: "ready"})
	return true
}
