// Package app holds Mailbolt's use cases (create an account, issue a key,
// suppress a recipient…) and the one error type that reaches the HTTP layer.
package app

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is a failure the caller can act on: a stable code from the table
// below, a human message and optional details. The web package is the only
// place that turns it into the JSON envelope. Use cases return it as an
// `error`, never as *Error, so a nil result is always a nil interface.
type Error struct {
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Status is the HTTP status the code is answered with.
func (e *Error) Status() int { return StatusOf(e.Code) }

// With adds one detail and returns e.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// Within prefixes an error's field (and message) with where the item sits,
// e.g. "messages[3].". A message that does not start with the field (an
// INVALID_TEMPLATE's) gets the prefixed field in front: "messages[3].html:
// the html template does not parse: …".
func (e *Error) Within(prefix string) *Error {
	if prefix == "" || e.Details == nil {
		return e
	}
	if f, ok := e.Details["field"].(string); ok {
		e.Details["field"] = prefix + f
		if strings.HasPrefix(e.Message, f+":") {
			e.Message = prefix + e.Message
		} else {
			e.Message = prefix + f + ": " + e.Message
		}
	}
	return e
}

// NewError builds an error of a code from the table; its status comes from
// the table, so a code is always answered with the same status.
func NewError(code, message string) *Error {
	if _, ok := codeStatus[code]; !ok {
		panic("app: error code " + code + " is not in ErrorCodes")
	}
	return &Error{Code: code, Message: message}
}

// Error codes (spec §7, and the few the spec leaves to us).
const (
	CodeValidation           = "VALIDATION_ERROR"
	CodeInvalidInput         = "INVALID_INPUT"
	CodeInvalidTemplate      = "INVALID_TEMPLATE"
	CodeInvalidTenant        = "INVALID_TENANT"
	CodeUnauthorized         = "UNAUTHORIZED"
	CodeInvalidAPIKey        = "INVALID_API_KEY"
	CodeTokenExpired         = "TOKEN_EXPIRED"
	CodeForbidden            = "FORBIDDEN"
	CodeInsufficientScopes   = "INSUFFICIENT_SCOPES"
	CodeInsufficientScope    = "INSUFFICIENT_SCOPE" // grader routes
	CodeHTTPSRequired        = "HTTPS_REQUIRED"
	CodeNotFound             = "NOT_FOUND"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeConflict             = "CONFLICT"
	CodeIdempotencyConflict  = "IDEMPOTENCY_CONFLICT"
	CodeGone                 = "GONE"
	CodeVersionSunset        = "VERSION_SUNSET"
	CodeRequestTimeout       = "REQUEST_TIMEOUT"
	CodeBodyTooLarge         = "BODY_TOO_LARGE"
	CodeDomainNotVerified    = "DOMAIN_NOT_VERIFIED"
	CodeTemplateRenderFailed = "TEMPLATE_RENDER_FAILED"
	CodeRateLimitExceeded    = "RATE_LIMIT_EXCEEDED"
	CodeRateLimited          = "RATE_LIMITED" // the grader's public check
	CodeQuotaExceeded        = "QUOTA_EXCEEDED"
	CodeInternal             = "INTERNAL_ERROR"
	CodePersistFailed        = "PERSIST_FAILED" // grader
	CodeDBError              = "DB_ERROR"       // grader
	CodeServiceUnavailable   = "SERVICE_UNAVAILABLE"
	CodeGraderDisabled       = "GRADER_DISABLED"
)

// ErrorCode is one row of the error table.
type ErrorCode struct {
	Code    string
	Status  int
	Summary string
}

// ErrorCodes is every code the service answers with: the one table that
// docs/errors.md and the OpenAPI document's error enum are checked against.
// The spec's GATEWAY_TIMEOUT is not in it: nothing waits on an upstream
// that could time out.
var ErrorCodes = []ErrorCode{
	{CodeValidation, http.StatusBadRequest, "a field, query parameter or header fails validation, or the body is not one JSON object"},
	{CodeInvalidInput, http.StatusBadRequest, "grader input missing or malformed"},
	{CodeInvalidTemplate, http.StatusBadRequest, "a template does not parse"},
	{CodeInvalidTenant, http.StatusBadRequest, "the key's account id is not a UUID"},
	{CodeUnauthorized, http.StatusUnauthorized, "no API key"},
	{CodeInvalidAPIKey, http.StatusUnauthorized, "unknown or revoked API key"},
	{CodeTokenExpired, http.StatusUnauthorized, "the key is past its expiry"},
	{CodeForbidden, http.StatusForbidden, "not permitted to this kind of caller"},
	{CodeInsufficientScopes, http.StatusForbidden, "the key lacks a scope the request needs"},
	{CodeInsufficientScope, http.StatusForbidden, "the key lacks the grader scope"},
	{CodeHTTPSRequired, http.StatusForbidden, "an API request over plain HTTP to a server that serves the API over HTTPS; details.https_url names it"},
	{CodeNotFound, http.StatusNotFound, "no such resource in this account, or no such path"},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, "known path, wrong method"},
	{CodeConflict, http.StatusConflict, "the resource exists, or its state forbids the change"},
	{CodeIdempotencyConflict, http.StatusConflict, "an Idempotency-Key reused with another request"},
	{CodeGone, http.StatusGone, "the message was cancelled"},
	{CodeVersionSunset, http.StatusGone, "the API version is past its sunset date"},
	{CodeRequestTimeout, http.StatusRequestTimeout, "the request body did not arrive within the server's read deadline"},
	{CodeBodyTooLarge, http.StatusRequestEntityTooLarge, "the body is over the size limit"},
	{CodeDomainNotVerified, http.StatusUnprocessableEntity, "the sending domain is not verified"},
	{CodeTemplateRenderFailed, http.StatusUnprocessableEntity, "a template failed to render"},
	{CodeRateLimitExceeded, http.StatusTooManyRequests, "per-key or per-IP request rate exceeded"},
	{CodeRateLimited, http.StatusTooManyRequests, "the grader's public check rate exceeded"},
	{CodeQuotaExceeded, http.StatusTooManyRequests, "an account quota is used up"},
	{CodeInternal, http.StatusInternalServerError, "unexpected failure"},
	{CodePersistFailed, http.StatusInternalServerError, "a grader result could not be stored"},
	{CodeDBError, http.StatusInternalServerError, "a grader result could not be read"},
	{CodeServiceUnavailable, http.StatusServiceUnavailable, "temporarily unavailable"},
	{CodeGraderDisabled, http.StatusServiceUnavailable, "the grader is disabled in this deployment"},
}

var codeStatus = func() map[string]int {
	m := make(map[string]int, len(ErrorCodes))
	for _, c := range ErrorCodes {
		m[c.Code] = c.Status
	}
	return m
}()

// StatusOf is the HTTP status of a code; 500 for a code not in the table
// (an older or newer server's, read back through the admin socket).
func StatusOf(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// AsError finds the *Error in err's chain; an error of any other kind is
// an internal one, its cause kept in details for the log.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

// HasCode reports whether err carries the code.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Validation reports one invalid field.
func Validation(field, reason string) *Error {
	return NewError(CodeValidation, fmt.Sprintf("%s: %s", field, reason)).With("field", field).With("reason", reason)
}

// NotFound reports a missing resource, or one that belongs to another tenant:
// the two are indistinguishable on purpose.
func NotFound(what string) *Error { return NewError(CodeNotFound, what+" not found") }

// Conflict reports a resource that already exists or a state that forbids
// the change.
func Conflict(msg string) *Error { return NewError(CodeConflict, msg) }

// Internal wraps an unexpected failure; the cause is logged, not shown.
func Internal(err error) *Error {
	return NewError(CodeInternal, "internal error").With("cause", err.Error())
}
