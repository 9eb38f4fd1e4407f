package web

import (
	"encoding/json"
	"errors"
	"net/http"

	"mailbolt/app"
)

// envelope is the spec's error body: {"error": {code, message, details?}}.
type envelope struct {
	Error envelopeError `json:"error"`
}

type envelopeError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing useful to do
}

// writeError is the one place an error envelope is written. Internal causes
// are logged with the request id and never shown to the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *app.Error
	if !errors.As(err, &e) {
		e = app.Internal(err)
	}
	out := envelopeError{Code: e.Code, Message: e.Message, Details: e.Details}
	if e.Status() == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1")
	}
	if e.Status() == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "60") // a quota: trying again soon will not help
	}
	if e.Status() >= 500 {
		reqID, _ := r.Context().Value(reqIDKey{}).(string)
		s.log.Error("request failed", "request_id", reqID,
			"method", r.Method, "route", routeOf(r), "code", e.Code, "err", e.Details["cause"])
		out.Details = nil
	}
	writeJSON(w, e.Status(), envelope{Error: out})
}
