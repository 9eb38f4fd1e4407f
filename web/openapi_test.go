package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	vErrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/mta/dkim"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// The OpenAPI document (openapi.json) is the source of truth for the API
// (DESIGN.md "HTTP API conventions"): these tests fail when a route is
// missing from it, and checkOpenAPI fails any test that sees an answer the
// document does not describe.

// openAPI is the parsed document and its validator, built once: building
// compiles every schema, which is slow.
var openAPI struct {
	once  sync.Once
	doc   libopenapi.Document
	model *v3.Document
	val   validator.Validator
	err   error
	// mu serialises validation: the validator's caches are shared, and
	// tests call checkOpenAPI from many goroutines at once.
	mu sync.Mutex
}

func loadOpenAPI() (*v3.Document, validator.Validator, error) {
	openAPI.once.Do(func() {
		doc, err := libopenapi.NewDocument(OpenAPI)
		if err != nil {
			openAPI.err = fmt.Errorf("parse openapi.json: %w", err)
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			openAPI.err = fmt.Errorf("build v3 model of openapi.json: %w", err)
			return
		}
		// Format assertions make "format": "date-time" (and friends) checked
		// rather than merely annotations.
		v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
		if len(errs) > 0 {
			openAPI.err = fmt.Errorf("build validator: %v", errs)
			return
		}
		openAPI.doc, openAPI.model, openAPI.val = doc, &m.Model, v
	})
	return openAPI.model, openAPI.val, openAPI.err
}

// checkOpenAPI fails t unless the answer resp (whose body the caller has
// already read into body) is described by the OpenAPI document for req:
// the status must be documented for the operation, required headers must
// be present and well-formed, and the body must match the schema. resp.Body
// is not touched.
//
// Paths the document does not have (unversioned paths, unknown /v1 paths)
// have no operation to check against: their answer must be an error with
// the spec's envelope. A documented path with an undocumented method must
// be 405 METHOD_NOT_ALLOWED with an Allow header naming exactly the
// documented methods (or an error produced before routing: 410, 429, 500).
// In both cases the headers every answer carries are checked by hand.
func checkOpenAPI(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	model, val, err := loadOpenAPI()
	if err != nil {
		t.Errorf("OpenAPI document: %v", err)
		return
	}
	what := req.Method + " " + req.URL.Path

	pathItem, pathErrs, _ := paths.FindPath(req, model, nil)
	if pathItem == nil || len(pathErrs) > 0 {
		// No operation describes the answer; check the headers that every
		// answer carries (DESIGN.md "HTTP API conventions") by hand.
		for _, h := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if resp.Header.Get(h) == "" {
				t.Errorf("OpenAPI: %s: answer %d without %s", what, resp.StatusCode, h)
			}
		}
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Errorf("OpenAPI: %s: 429 without Retry-After", what)
		}
	}
	switch {
	case pathItem == nil:
		// No such path in the document.
		if resp.StatusCode < 400 {
			t.Errorf("OpenAPI: %s answered %d, but the path is not in the document", what, resp.StatusCode)
			return
		}
		checkErrorEnvelope(t, what, req, resp, body)
		return
	case len(pathErrs) > 0:
		// The path is documented but not with this method.
		documented := documentedMethods(pathItem)
		switch resp.StatusCode {
		case http.StatusMethodNotAllowed:
			checkErrorEnvelope(t, what, req, resp, body)
			if c := errorCode(body); c != "METHOD_NOT_ALLOWED" && req.Method != http.MethodHead {
				t.Errorf("OpenAPI: %s: 405 with code %q, want METHOD_NOT_ALLOWED", what, c)
			}
			var allow []string
			for _, m := range strings.Split(resp.Header.Get("Allow"), ",") {
				if m = strings.TrimSpace(m); m != "" {
					allow = append(allow, m)
				}
			}
			sort.Strings(allow)
			if !slices.Equal(allow, documented) {
				t.Errorf("OpenAPI: %s: 405 with Allow %q, but the document has %v for this path",
					what, resp.Header.Get("Allow"), documented)
			}
		case http.StatusGone, http.StatusTooManyRequests, http.StatusInternalServerError:
			checkErrorEnvelope(t, what, req, resp, body)
		default:
			t.Errorf("OpenAPI: %s answered %d, but the document has only %v for this path (expected 405)",
				what, resp.StatusCode, documented)
		}
		return
	}

	copied := *resp
	copied.Header = resp.Header.Clone()
	copied.Body = io.NopCloser(bytes.NewReader(body))
	// Workaround: the validator JSON-decodes response header values before
	// checking them against the header's schema, so a caller-chosen
	// X-Request-Id such as "123" or "true" would be judged a number or a
	// boolean against "type": "string". Quote such values for the check.
	if id := copied.Header.Get("X-Request-Id"); id != "" {
		var v any
		if json.Unmarshal([]byte(id), &v) == nil {
			if _, isString := v.(string); !isString {
				copied.Header.Set("X-Request-Id", `"`+id+`"`)
			}
		}
	}

	openAPI.mu.Lock()
	ok, verrs := val.ValidateHttpResponse(req, &copied)
	openAPI.mu.Unlock()
	if !ok || len(verrs) > 0 {
		t.Errorf("OpenAPI: %s answered %d, which the document does not describe:\n%s\nbody: %s",
			what, resp.StatusCode, formatValidationErrors(verrs), truncate(body, 2000))
	}
}

// documentedMethods lists a path's operations as sorted upper-case methods.
func documentedMethods(item *v3.PathItem) []string {
	var out []string
	for m := range item.GetOperations().KeysFromOldest() {
		out = append(out, strings.ToUpper(m))
	}
	sort.Strings(out)
	return out
}

// checkErrorEnvelope checks an error answer that no operation describes:
// JSON {"error": {"code": string, "message": string, "details"?: object}}.
func checkErrorEnvelope(t testing.TB, what string, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if req.Method == http.MethodHead {
		return // no body to check
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("OpenAPI: %s: error %d with Content-Type %q, want application/json", what, resp.StatusCode, ct)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil {
		t.Errorf("OpenAPI: %s: error %d body is not a JSON object: %v: %s", what, resp.StatusCode, err, truncate(body, 500))
		return
	}
	var inner map[string]json.RawMessage
	if len(env) != 1 || json.Unmarshal(env["error"], &inner) != nil || inner == nil {
		t.Errorf("OpenAPI: %s: error %d body is not {\"error\": {...}}: %s", what, resp.StatusCode, truncate(body, 500))
		return
	}
	var code, message string
	if json.Unmarshal(inner["code"], &code) != nil || code == "" {
		t.Errorf("OpenAPI: %s: error envelope without a string code: %s", what, truncate(body, 500))
	}
	if json.Unmarshal(inner["message"], &message) != nil || inner["message"] == nil {
		t.Errorf("OpenAPI: %s: error envelope without a string message: %s", what, truncate(body, 500))
	}
	for k, v := range inner {
		switch k {
		case "code", "message":
		case "details":
			var details map[string]any
			if json.Unmarshal(v, &details) != nil || details == nil {
				t.Errorf("OpenAPI: %s: error details is not an object: %s", what, truncate(body, 500))
			}
		default:
			t.Errorf("OpenAPI: %s: error envelope has unknown field %q: %s", what, k, truncate(body, 500))
		}
	}
}

// errorCode is the code of an error envelope, or "".
func errorCode(body []byte) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &env)
	return env.Error.Code
}

func formatValidationErrors(errs []*vErrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  - %s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			loc := f.FieldPath
			if loc == "" {
				loc = f.KeywordLocation
			}
			fmt.Fprintf(&b, "      %s (at %s)\n", f.Reason, loc)
		}
	}
	return b.String()
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// openAPIPath turns an httprouter path into an OpenAPI one:
// /v1/api-keys/:id → /v1/api-keys/{id}.
func openAPIPath(p string) string {
	return regexp.MustCompile(`[:*]([A-Za-z_][A-Za-z0-9_]*)`).ReplaceAllString(p, "{$1}")
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := libopenapi.NewDocument(OpenAPI)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	info := doc.GetSpecInfo()
	if info.SpecFormat != datamodel.OAS31 || info.Version != "3.1.0" {
		t.Fatalf("document is %s %q, want OpenAPI 3.1.0", info.SpecFormat, info.Version)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build v3 model: %v", err)
	}
	if m.Model.Info == nil || m.Model.Info.Version != "1.0.0" || m.Model.Info.Title != "Mailbolt API" {
		t.Errorf("info = %+v, want title Mailbolt API, version 1.0.0", m.Model.Info)
	}
	// The document also validates against the OpenAPI 3.1 schema.
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("document does not validate against the OpenAPI 3.1 schema:\n%s", formatValidationErrors(verrs))
	}
	// The shared validator used by checkOpenAPI builds too.
	if _, _, err := loadOpenAPI(); err != nil {
		t.Fatal(err)
	}

	// Conventions every operation must follow. Public operations are the
	// routes without a scope: they must say so, and only they.
	srv, _ := newOpenAPITestServer(t, app.DefaultOptions())
	publicOps := map[string]bool{}
	for _, rt := range srv.routes() {
		if rt.Public {
			publicOps[rt.Method+" "+openAPIPath(rt.Path)] = true
		}
	}
	for p, item := range m.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			what := strings.ToUpper(method) + " " + p
			if op.Summary == "" {
				t.Errorf("%s: no summary", what)
			}
			public := op.Security != nil && len(op.Security) == 0
			if public != publicOps[what] {
				t.Errorf("%s: public = %v", what, public)
			}
			if !public {
				secured := len(op.Security) == 1 && op.Security[0].Requirements != nil
				if secured {
					_, secured = op.Security[0].Requirements.Get("ApiKeyAuth")
				}
				if !secured {
					t.Errorf("%s: not secured by ApiKeyAuth", what)
				}
			}
			// Public writes (one-click unsubscribe) run without the
			// idempotency store: guard sends them straight to the handler.
			write := method != "get" && !public
			hasIdem := false
			for _, prm := range op.Parameters {
				if prm.In == "header" && prm.Name == "Idempotency-Key" {
					hasIdem = true
				}
			}
			if hasIdem != write {
				t.Errorf("%s: Idempotency-Key parameter = %v", what, hasIdem)
			}
			want := []string{"405", "410", "500"}
			if !strings.HasPrefix(p, trackingPrefix) {
				want = append(want, "429") // tracking is answered over the limit
			}
			if !public {
				want = append(want, "400", "401", "403", "404")
			}
			if write {
				want = append(want, "409", "413", "503")
			}
			for _, code := range want {
				if op.Responses.Codes.GetOrZero(code) == nil {
					t.Errorf("%s: response %s not documented", what, code)
				}
			}
		}
	}
}

// TestOpenAPIEnumsMatchCode keeps the document's enums in step with the
// values the code accepts and produces.
func TestOpenAPIEnumsMatchCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"Scope":             append([]string{app.ScopeAll}, app.Scopes...),
		"Role":              app.Roles,
		"SuppressionReason": app.SuppressionReasons,
		"Plan":              app.PlanNames(),
		"KeyMode":           {"live", "test"},
		"DomainStatus":      {app.DomainPending, app.DomainVerified, app.DomainFailed},
		"DkimAlgorithm":     {dkim.AlgRSA2048, dkim.AlgEd25519},
		"DnsRecordStatus":   {app.RecordPending, app.RecordVerified, app.RecordMissing, app.RecordMismatch, app.RecordRemovable},
		"DnsRecordPurpose":  {app.PurposeDKIM, app.PurposeSPF, app.PurposeReturnPath, app.PurposeDMARC, app.PurposeTracking},
		"EventType":         app.EventTypes,
		"EventName":         append(slices.Clone(app.EventTypes), app.EventAcceptedAlias),
		"WebhookMode":       {"live", "test"},
		"DeliveryStatus":    {storage.DeliveryPending, storage.DeliveryDelivered, storage.DeliveryFailed},
		"MessageStatus":     app.MessageStatuses,
		"UnsubscribeMethod": {app.MethodOneClick, app.MethodLink, app.MethodMailto},
		"ClientDevice":      {app.DeviceDesktop, app.DeviceMobile, app.DeviceTablet, app.DeviceBot, ""},
		"ErrorCode":         errorCodes(),
	} {
		got := slices.Sorted(slices.Values(doc.Components.Schemas[name].Enum))
		if want = slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
			t.Errorf("components.schemas.%s.enum = %v, want %v", name, got, want)
		}
	}
}

func errorCodes() []string {
	var out []string
	for _, c := range app.ErrorCodes {
		out = append(out, c.Code)
	}
	return out
}

// newOpenAPITestServer is a Server over a fresh database.
func newOpenAPITestServer(t *testing.T, opts app.Options) (*Server, *app.App) {
	t.Helper()
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a, err := app.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mustNew(t, a, DefaultConfig()), a
}

func TestOpenAPICoversRoutes(t *testing.T) {
	s, _ := newOpenAPITestServer(t, app.DefaultOptions())
	model, _, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p, item := range model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().KeysFromOldest() {
			documented[strings.ToUpper(method)+" "+p] = true
		}
	}
	registered := map[string]bool{}
	for _, rt := range s.Routes() {
		op := rt[0] + " " + openAPIPath(rt[1])
		registered[op] = true
		if !documented[op] {
			t.Errorf("route %s %s is not in openapi.json", rt[0], rt[1])
		}
	}
	for op := range documented {
		if !registered[op] {
			t.Errorf("openapi.json documents %s, which is not a route", op)
		}
	}
	if len(registered) == 0 {
		t.Fatal("no routes")
	}
}

// recordingTB is a testing.TB that records failures instead of failing.
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) record(s string) {
	r.mu.Lock()
	r.failures = append(r.failures, s)
	r.mu.Unlock()
}
func (r *recordingTB) Error(args ...any)                 { r.record(fmt.Sprint(args...)) }
func (r *recordingTB) Errorf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }
func (r *recordingTB) Fatal(args ...any)                 { r.record(fmt.Sprint(args...)) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.record(fmt.Sprintf(format, args...)) }
func (r *recordingTB) Fail()                             { r.record("Fail") }
func (r *recordingTB) FailNow()                          { r.record("FailNow") }

// fakeAnswer builds a response as a test would see it.
func fakeAnswer(method, path string, status int, body string, hdr ...string) (*http.Request, *http.Response, []byte) {
	req := httptest.NewRequest(method, path, nil)
	h := http.Header{}
	h.Set("X-Request-Id", "req-1")
	h.Set("X-RateLimit-Limit", "100")
	h.Set("X-RateLimit-Remaining", "99")
	h.Set("X-RateLimit-Reset", "1790000000")
	if body != "" {
		h.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			h.Del(hdr[i])
		} else {
			h.Set(hdr[i], hdr[i+1])
		}
	}
	resp := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("unread")), Request: req}
	return req, resp, []byte(body)
}

func TestOpenAPIHelperRejectsUndocumented(t *testing.T) {
	const account = `{"id":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a11","name":"acme","plan":"free",` +
		`"limits":{"requests_per_second":10,"batch_size":100,"dedicated_ips":0},"created_at":"2026-01-02T03:04:05Z"}`
	const key = `{"id":"k1","name":"ci","prefix":"svc_live_abcdefgh","mode":"live","scopes":["*"],` +
		`"created_at":"2026-01-02T03:04:05Z","last_used_at":null,"expires_at":null,"revoked_at":"2026-01-03T00:00:00.123456789Z","created_by":null}`
	const createdKey = `{"id":"k1","name":"ci","prefix":"svc_live_abcdefgh","mode":"live","scopes":["messages:read"],` +
		`"created_at":"2026-01-02T03:04:05Z","last_used_at":null,"expires_at":null,"revoked_at":null,"created_by":"operator",` +
		`"key":"svc_live_0123456789abcdefghijABCDEFGHIJ0123456789a"}`
	const notFound = `{"error":{"code":"NOT_FOUND","message":"unknown path /foo: every API path begins with /v1/"}}`
	const supp = `{"recipient":"a@b.test","reason":"manual","source_message_id":null,"created_at":"2026-01-02T03:04:05Z"}`
	const dkimRecord = `{"type":"TXT","name":"mb1._domainkey.example.test","value":"v=DKIM1; k=ed25519; p=AAAA","purpose":"dkim",` +
		`"required":true,"status":"pending","found":[],"error":null,"selector":"mb1","active":false}`
	const spfRecord = `{"type":"TXT","name":"example.test","value":"v=spf1 a:mx.test ~all","purpose":"spf",` +
		`"required":true,"status":"pending","found":[],"error":null}`
	domainWith := func(records ...string) string {
		return `{"id":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a11","name":"example.test","status":"pending","status_reason":null,` +
			`"dkim_algorithm":"ed25519","dkim_selector":null,"records":[` + strings.Join(records, ",") + `],` +
			`"created_at":"2026-01-02T03:04:05Z","verified_at":null,"last_checked_at":null,"check_error":null,"next_check_at":"2026-01-03T03:04:05Z"}`
	}
	const invalidTemplate = `{"error":{"code":"INVALID_TEMPLATE","message":"x","details":{"part":"html","line":2,"reason":"section_no_closing_tag"}}}`
	const renderFailed = `{"error":{"code":"TEMPLATE_RENDER_FAILED","message":"x","details":{"part":"subject","variable":"name"}}}`
	const unavailable = `{"error":{"code":"SERVICE_UNAVAILABLE","message":"no DNS resolver configured"}}`
	const webhook = `{"id":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a11","url":"https://hooks.example.com/in","events":["message.sent"],` +
		`"description":"","mode":"live","enabled":true,"created_at":"2026-01-02T03:04:05Z","previous_secret_expires_at":null}`
	const webhookSecret = `,"secret":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}`
	const attempt = `{"at":"2026-01-02T03:04:05Z","status_code":null,"error":"dial tcp: connection refused","latency_ms":0.5,"response":""}`
	delivery := func(status, nextAt, deliveredAt, failedAt string) string {
		return `{"id":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a12","webhook_id":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a11",` +
			`"event_id":"0197e3a4-7f3c-7b0e-9d55-3f1b8e0c2a13","event":"message.sent","status":"` + status + `","attempts":[` + attempt + `],` +
			`"created_at":"2026-01-02T03:04:05Z","next_attempt_at":` + nextAt + `,"delivered_at":` + deliveredAt + `,"failed_at":` + failedAt + `}`
	}
	const at = `"2026-01-02T03:04:35Z"`
	const quota = `{"error":{"code":"QUOTA_EXCEEDED","message":"an account can have at most 100 webhooks"}}`

	cases := []struct {
		name   string
		method string
		path   string
		status int
		body   string
		hdr    []string
		ok     bool
	}{
		// Controls: answers the document describes pass.
		{"account", "GET", "/v1/account", 200, account, nil, true},
		{"account deprecated", "GET", "/v1/account", 200, account, []string{"Deprecation", "true", "Sunset", "Wed, 30 Jun 2027 00:00:00 GMT", "Warning", `299 - "deprecated"`}, true},
		{"numeric request id", "GET", "/v1/account", 200, account, []string{"X-Request-Id", "12345"}, true},
		{"unauthorized", "GET", "/v1/account", 401, `{"error":{"code":"UNAUTHORIZED","message":"missing API key"}}`, nil, true},
		{"validation details", "POST", "/v1/suppressions", 400, `{"error":{"code":"VALIDATION_ERROR","message":"x","details":{"field":"recipient","reason":"is required"}}}`, []string{"Idempotent-Replayed", "true"}, true},
		{"rate limited", "GET", "/v1/team", 429, `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"slow down"}}`, []string{"Retry-After", "1"}, true},
		{"cursor list", "GET", "/v1/api-keys", 200, `{"data":[` + key + `],"limit":50,"has_more":true,"cursor":"abc"}`, nil, true},
		{"last cursor page", "GET", "/v1/api-keys?limit=5", 200, `{"data":[],"limit":5,"has_more":false}`, nil, true},
		{"page list", "GET", "/v1/suppressions?page=1", 200, `{"data":[` + supp + `],"page":1,"limit":50,"total":1}`, []string{"Link", `</v1/suppressions?limit=50&page=1>; rel="first"`}, true},
		{"created key", "POST", "/v1/api-keys", 201, createdKey, []string{"Location", "/v1/api-keys/k1"}, true},
		{"deleted suppression", "DELETE", "/v1/suppressions/a@b.test", 204, "", nil, true},
		{"unversioned", "GET", "/foo", 404, notFound, nil, true},
		{"unknown v1", "GET", "/v1/nope", 404, notFound, nil, true},
		{"method not allowed", "PUT", "/v1/account", 405, `{"error":{"code":"METHOD_NOT_ALLOWED","message":"no"}}`, []string{"Allow", "GET"}, true},
		{"domain", "GET", "/v1/domains/d1", 200, domainWith(dkimRecord, spfRecord), nil, true},
		{"invalid template", "POST", "/v1/templates", 400, invalidTemplate, nil, true},
		{"render failed", "POST", "/v1/templates/t1/render", 422, renderFailed, nil, true},
		{"no resolver", "POST", "/v1/domains/d1/verify", 503, unavailable, []string{"Retry-After", "1"}, true},
		{"webhook", "GET", "/v1/webhooks/w1", 200, webhook, nil, true},
		{"created webhook", "POST", "/v1/webhooks", 201, strings.TrimSuffix(webhook, "}") + webhookSecret, []string{"Location", "/v1/webhooks/w1"}, true},
		{"webhook quota", "POST", "/v1/webhooks", 429, quota, nil, true},
		{"unknown event type", "POST", "/v1/webhooks", 400, `{"error":{"code":"VALIDATION_ERROR","message":"x","details":{"field":"events","reason":"x","allowed":["message.sent","message.accepted"]}}}`, nil, true},
		{"pending delivery", "GET", "/v1/webhooks/w1/deliveries", 200, `{"data":[` + delivery("pending", at, "null", "null") + `],"limit":50,"has_more":false}`, nil, true},
		{"replayed delivery", "POST", "/v1/webhooks/w1/events/e1/replay", 202, delivery("pending", at, "null", "null"), nil, true},
		{"failed delivery", "GET", "/v1/webhooks/w1/deliveries", 200, `{"data":[` + delivery("failed", "null", "null", at) + `],"limit":50,"has_more":false}`, nil, true},

		// Answers the document does not describe fail.
		{"undocumented status", "GET", "/v1/account", 418, `{"error":{"code":"TEAPOT","message":"short and stout"}}`, nil, false},
		{"201 on a 200 route", "GET", "/v1/account", 201, account, nil, false},
		{"missing field", "GET", "/v1/account", 200, strings.Replace(account, `"plan":"free",`, "", 1), nil, false},
		{"extra field", "GET", "/v1/account", 200, strings.Replace(account, `"name"`, `"colour":"red","name"`, 1), nil, false},
		{"bad enum", "GET", "/v1/account", 200, strings.Replace(account, `"free"`, `"platinum"`, 1), nil, false},
		{"bad time", "GET", "/v1/account", 200, strings.Replace(account, `2026-01-02T03:04:05Z`, `yesterday`, 1), nil, false},
		{"null non-null time", "GET", "/v1/api-keys", 200, `{"data":[` + strings.Replace(key, `"created_at":"2026-01-02T03:04:05Z"`, `"created_at":null`, 1) + `],"limit":50,"has_more":false}`, nil, false},
		{"mixed list modes", "GET", "/v1/api-keys", 200, `{"data":[],"page":1,"limit":50,"total":0,"has_more":false}`, nil, false},
		{"secret missing", "POST", "/v1/api-keys", 201, key, []string{"Location", "/v1/api-keys/k1"}, false},
		{"no Location", "POST", "/v1/api-keys", 201, createdKey, nil, false},
		{"no rate-limit header", "GET", "/v1/account", 200, account, []string{"X-RateLimit-Remaining", ""}, false},
		{"non-integer rate-limit header", "GET", "/v1/account", 200, account, []string{"X-RateLimit-Limit", "lots"}, false},
		{"no Retry-After", "GET", "/v1/team", 429, `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"slow down"}}`, nil, false},
		{"200 on a 204 route", "DELETE", "/v1/suppressions/a@b.test", 200, supp, nil, false},
		{"bad error envelope", "GET", "/v1/account", 401, `{"code":"UNAUTHORIZED","message":"x"}`, nil, false},
		{"wrong error code", "GET", "/v1/account", 401, `{"error":{"code":"NOT_FOUND","message":"x"}}`, nil, false},
		{"unknown path 200", "GET", "/v1/nope", 200, `{}`, nil, false},
		{"unknown path bad envelope", "GET", "/foo", 404, `{"error":"not found"}`, nil, false},
		{"unknown path no message", "GET", "/foo", 404, `{"error":{"code":"NOT_FOUND"}}`, nil, false},
		{"unknown path no request id", "GET", "/foo", 404, notFound, []string{"X-Request-Id", ""}, false},
		{"405 without Allow", "PUT", "/v1/account", 405, `{"error":{"code":"METHOD_NOT_ALLOWED","message":"no"}}`, nil, false},
		{"405 with wrong Allow", "PUT", "/v1/account", 405, `{"error":{"code":"METHOD_NOT_ALLOWED","message":"no"}}`, []string{"Allow", "GET, OPTIONS"}, false},
		{"undocumented method answered", "PUT", "/v1/account", 200, account, nil, false},
		{"dkim record without selector", "GET", "/v1/domains/d1", 200, domainWith(strings.Replace(dkimRecord, `"selector":"mb1",`, "", 1)), nil, false},
		{"spf record with selector", "GET", "/v1/domains/d1", 200, domainWith(strings.Replace(spfRecord, `"error":null`, `"error":null,"selector":"x"`, 1)), nil, false},
		{"null found list", "GET", "/v1/domains/d1", 200, domainWith(strings.Replace(spfRecord, `"found":[]`, `"found":null`, 1)), nil, false},
		{"bad record status", "GET", "/v1/domains/d1", 200, domainWith(strings.Replace(spfRecord, `"pending"`, `"ok"`, 1)), nil, false},
		{"missing domain field", "GET", "/v1/domains/d1", 200, strings.Replace(domainWith(), `"check_error":null,`, "", 1), nil, false},
		{"invalid template without details", "POST", "/v1/templates", 400, `{"error":{"code":"INVALID_TEMPLATE","message":"x"}}`, nil, false},
		{"invalid template on a domain", "POST", "/v1/domains", 400, invalidTemplate, nil, false},
		{"render failed without part", "POST", "/v1/templates/t1/render", 422, `{"error":{"code":"TEMPLATE_RENDER_FAILED","message":"x","details":{"variable":"name"}}}`, nil, false},
		{"422 on a read", "GET", "/v1/templates/t1", 422, renderFailed, nil, false},
		{"503 without Retry-After", "POST", "/v1/domains/d1/verify", 503, unavailable, nil, false},
		{"webhook secret shown again", "GET", "/v1/webhooks/w1", 200, strings.TrimSuffix(webhook, "}") + webhookSecret, nil, false},
		{"created webhook without secret", "POST", "/v1/webhooks", 201, webhook, []string{"Location", "/v1/webhooks/w1"}, false},
		{"webhook alias in an answer", "GET", "/v1/webhooks/w1", 200, strings.Replace(webhook, "message.sent", "message.accepted", 1), nil, false},
		{"webhook without nullable field", "GET", "/v1/webhooks/w1", 200, strings.Replace(webhook, `,"previous_secret_expires_at":null`, "", 1), nil, false},
		{"quota on another route", "POST", "/v1/domains", 429, quota, nil, false},
		{"unknown detail on a webhook", "POST", "/v1/webhooks", 400, `{"error":{"code":"VALIDATION_ERROR","message":"x","details":{"field":"events","reason":"x","colour":"red"}}}`, nil, false},
		{"delivered without delivered_at", "GET", "/v1/webhooks/w1/deliveries", 200, `{"data":[` + delivery("delivered", "null", "null", "null") + `],"limit":50,"has_more":false}`, nil, false},
		{"failed with next attempt", "GET", "/v1/webhooks/w1/deliveries", 200, `{"data":[` + delivery("failed", at, "null", at) + `],"limit":50,"has_more":false}`, nil, false},
		{"replay 200", "POST", "/v1/webhooks/w1/events/e1/replay", 200, delivery("pending", at, "null", "null"), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, resp, body := fakeAnswer(c.method, c.path, c.status, c.body, c.hdr...)
			rec := &recordingTB{TB: t}
			checkOpenAPI(rec, req, resp, body)
			if c.ok && len(rec.failures) > 0 {
				t.Errorf("checkOpenAPI rejected a documented answer:\n%s", strings.Join(rec.failures, "\n"))
			}
			if !c.ok && len(rec.failures) == 0 {
				t.Errorf("checkOpenAPI accepted an undocumented answer: %d %s", c.status, c.body)
			}
			for _, f := range rec.failures {
				t.Logf("rejected: %s", f)
			}
			if got, _ := io.ReadAll(resp.Body); string(got) != "unread" {
				t.Errorf("checkOpenAPI consumed resp.Body")
			}
		})
	}
}

// TestOpenAPIDescribesServerAnswers drives every route of a real Server
// once, through the success and the common failure answers, and checks
// each answer against the document.
func TestOpenAPIDescribesServerAnswers(t *testing.T) {
	zone := dnstest.Start(t)
	clock := &testClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	o := appOptions(clock.Now)
	o.Domains.Resolver = &dns.Resolver{Server: zone.Addr, Timeout: 300 * time.Millisecond}
	o.Domains.Hostname = "mx.mailbolt.test"
	s, a := newOpenAPITestServer(t, o)
	acct, e := a.CreateAccount(app.AccountInput{Name: "acme", Plan: "enterprise", RateLimit: 100000})
	if e != nil {
		t.Fatal(e)
	}
	full := issueKey(t, a, acct.ID, app.KeyInput{Name: "full"})
	narrow := issueKey(t, a, acct.ID, app.KeyInput{Name: "narrow", Scopes: []string{"account:read"}})
	doOn := func(s *Server, method, path, key, body string, want int, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		return serveChecked(t, s, method, path, key, body, want, hdr...)
	}
	do := func(method, path, key, body string, want int, hdr ...string) []byte {
		t.Helper()
		_, data := doOn(s, method, path, key, body, want, hdr...)
		return data
	}
	k := full.Secret

	served := do("GET", "/v1/openapi.json", "", "", 200)
	if !bytes.Equal(served, OpenAPI) {
		t.Error("GET /v1/openapi.json does not serve the embedded document")
	}
	do("GET", "/v1/account", k, "", 200)
	do("GET", "/v1/account", "", "", 401)
	do("GET", "/v1/account", "svc_live_nope", "", 401)
	do("GET", "/v1/team", narrow.Secret, "", 403)
	do("DELETE", "/v1/account", k, "", 405)
	do("GET", "/v1/nope", k, "", 404)
	do("GET", "/nope", k, "", 404)

	created := do("POST", "/v1/api-keys", k, `{"name":"ci","scopes":["messages:read"],"expires_at":"2999-01-01T00:00:00Z"}`, 201)
	var ck struct{ ID string }
	_ = json.Unmarshal(created, &ck)
	do("POST", "/v1/api-keys", k, `{"name":"ci","colour":"red"}`, 400)
	do("POST", "/v1/api-keys", narrow.Secret, `{"name":"ci","scopes":["*"]}`, 403)
	do("GET", "/v1/api-keys", k, "", 200)
	do("GET", "/v1/api-keys?limit=1", k, "", 200)
	do("GET", "/v1/api-keys?page=2&limit=1", k, "", 200)
	do("GET", "/v1/api-keys?limit=0", k, "", 400)
	do("GET", "/v1/api-keys/"+ck.ID, k, "", 200)
	do("GET", "/v1/api-keys/nope", k, "", 404)
	do("GET", "/v1/api-keys/"+ck.ID, narrow.Secret, "", 403)
	do("DELETE", "/v1/api-keys/"+ck.ID, k, "", 200)
	do("GET", "/v1/api-keys/"+ck.ID, k, "", 200) // revoked: revoked_at set
	do("DELETE", "/v1/api-keys/nope", k, "", 404)
	sandbox := issueKey(t, a, acct.ID, app.KeyInput{Name: "sandbox", Mode: app.ModeTest})
	do("DELETE", "/v1/api-keys/"+full.Key.ID, sandbox.Secret, "", 403)

	do("POST", "/v1/suppressions", k, `{"recipient":"A@b.test"}`, 201, "Idempotency-Key", "s1")
	do("POST", "/v1/suppressions", k, `{"recipient":"A@b.test"}`, 201, "Idempotency-Key", "s1")
	do("POST", "/v1/suppressions", k, `{"recipient":"a@b.test","reason":"complaint"}`, 409, "Idempotency-Key", "s1")
	do("POST", "/v1/suppressions", k, `{"recipient":"a@b.test","reason":"complaint"}`, 200)
	do("GET", "/v1/suppressions?page=1", k, "", 200)
	do("DELETE", "/v1/suppressions/a@b.test", k, "", 204)
	do("DELETE", "/v1/suppressions/a@b.test", k, "", 404)

	do("POST", "/v1/team/invite", k, `{"email":"ann@example.com","role":"admin"}`, 201)
	do("POST", "/v1/team/invite", k, `{"email":"ann@example.com","role":"admin"}`, 409)
	do("GET", "/v1/team", k, "", 200)

	// Domains, through every status and record status.
	type record struct {
		Name, Value, Purpose, Selector, Status string
		Active                                 *bool
		Error                                  *string
		RemovableAfter                         *string `json:"removable_after"`
	}
	type domain struct {
		ID, Status string
		CheckError *string `json:"check_error"`
		Records    []record
	}
	parseDomain := func(data []byte) domain {
		t.Helper()
		var d domain
		if err := json.Unmarshal(data, &d); err != nil || d.ID == "" {
			t.Fatalf("domain answer %s: %v", data, err)
		}
		return d
	}
	find := func(d domain, purpose string, pick func(record) bool) record {
		t.Helper()
		for _, r := range d.Records {
			if r.Purpose == purpose && (pick == nil || pick(r)) {
				return r
			}
		}
		t.Fatalf("no %s record in %+v", purpose, d.Records)
		return record{}
	}
	publish := func(r record) {
		if strings.HasPrefix(r.Value, `"`) { // a long value split for pasting
			zone.LongTXT(r.Name, dkim.JoinTXT(r.Value))
			return
		}
		zone.TXT(r.Name, r.Value)
	}

	d := parseDomain(do("POST", "/v1/domains", k, `{"name":"Mail.Example.TEST"}`, 201, "Idempotency-Key", "d1"))
	do("POST", "/v1/domains", k, `{"name":"Mail.Example.TEST"}`, 201, "Idempotency-Key", "d1") // replayed
	do("POST", "/v1/domains", k, `{"name":"mail.example.test"}`, 409)
	do("POST", "/v1/domains", k, `{"name":"co.uk"}`, 400)
	do("POST", "/v1/domains", k, `{"name":"x.test","dkim_algorithm":null}`, 400)
	do("POST", "/v1/domains", k, `{"name":"x.test","dkim_algorithm":"dsa"}`, 400)
	do("POST", "/v1/domains", narrow.Secret, `{"name":"x.test"}`, 403)
	flaky := parseDomain(do("POST", "/v1/domains", k, `{"name":"flaky.test","dkim_algorithm":"ed25519"}`, 201))
	do("GET", "/v1/domains", k, "", 200)
	do("GET", "/v1/domains?limit=1", k, "", 200)
	do("GET", "/v1/domains?page=2&limit=1", k, "", 200)
	do("GET", "/v1/domains?limit=500", k, "", 400)
	do("GET", "/v1/domains/"+d.ID, k, "", 200)
	do("GET", "/v1/domains/nope", k, "", 404)
	do("GET", "/v1/domains/"+d.ID, narrow.Secret, "", 403)
	do("POST", "/v1/domains/"+d.ID+"/dkim/rotate", k, "", 409) // the first key has not verified

	// A lookup that fails is reported, not taken for a missing record.
	zone.ServFail("flaky.test", true)
	if v := parseDomain(do("POST", "/v1/domains/"+flaky.ID+"/verify", k, "", 200)); v.CheckError == nil || find(v, "spf", nil).Error == nil {
		t.Errorf("SERVFAIL not reported: %+v", v)
	}

	first := find(d, "dkim", nil)
	publish(first)
	publish(find(d, "spf", nil))
	zone.CNAME("bounces.mail.example.test", "mx.mailbolt.test")
	zone.TXT("_dmarc.mail.example.test", "v=DMARC1; p=none")
	if v := parseDomain(do("POST", "/v1/domains/"+d.ID+"/verify", k, "", 200)); v.Status != "verified" {
		t.Errorf("verify: status %q", v.Status)
	}
	rot := parseDomain(do("POST", "/v1/domains/"+d.ID+"/dkim/rotate", k, `{"dkim_algorithm":"ed25519"}`, 200))
	next := find(rot, "dkim", func(r record) bool { return r.Selector != first.Selector })
	do("POST", "/v1/domains/"+d.ID+"/dkim/rotate", k, "", 409)                         // a rotation is pending
	do("POST", "/v1/domains/"+d.ID+"/dkim/rotate", k, `{"dkim_algorithm":"dsa"}`, 400) // checked first
	do("POST", "/v1/domains/"+d.ID+"/dkim/rotate", k, `{"colour":"red"}`, 400)         // unknown field
	zone.TXT(next.Name, "v=DKIM1; k=ed25519; p=AAAA")                                  // a wrong value
	v := parseDomain(do("POST", "/v1/domains/"+d.ID+"/verify", k, "", 200))
	if r := find(v, "dkim", func(r record) bool { return r.Selector == next.Selector }); r.Status != "mismatch" || r.Active == nil || *r.Active {
		t.Errorf("a wrong DKIM value: %+v", r)
	}
	zone.Remove(next.Name)
	publish(next)
	v = parseDomain(do("POST", "/v1/domains/"+d.ID+"/verify", k, "", 200))
	if old := find(v, "dkim", func(r record) bool { return r.Selector == first.Selector }); old.RemovableAfter == nil {
		t.Errorf("the replaced key has no removable_after: %+v", old)
	}
	clock.Add(8 * 24 * time.Hour)
	v = parseDomain(do("GET", "/v1/domains/"+d.ID, k, "", 200))
	if old := find(v, "dkim", func(r record) bool { return r.Selector == first.Selector }); old.Status != "removable" {
		t.Errorf("the replaced key is %q after its grace period", old.Status)
	}
	zone.Remove("mail.example.test") // SPF gone: the domain fails
	if v := parseDomain(do("POST", "/v1/domains/"+d.ID+"/verify", k, "", 200)); v.Status != "failed" {
		t.Errorf("verify without SPF: status %q", v.Status)
	}
	do("DELETE", "/v1/domains/"+d.ID, k, "", 204)
	do("DELETE", "/v1/domains/"+d.ID, k, "", 404)
	do("POST", "/v1/domains/"+d.ID+"/verify", k, "", 404)

	// Without a DNS resolver, verification is 503 with Retry-After.
	bare, bareApp := newOpenAPITestServer(t, app.DefaultOptions())
	bareAcct, e := bareApp.CreateAccount(app.AccountInput{Name: "bare", Plan: "enterprise", RateLimit: 100000})
	if e != nil {
		t.Fatal(e)
	}
	bareKey := issueKey(t, bareApp, bareAcct.ID, app.KeyInput{Name: "full"})
	_, data := doOn(bare, "POST", "/v1/domains", bareKey.Secret, `{"name":"bare.test"}`, 201)
	bareDomain := parseDomain(data)
	resp, _ := doOn(bare, "POST", "/v1/domains/"+bareDomain.ID+"/verify", bareKey.Secret, "", 503, "Idempotency-Key", "v1")
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}

	// Templates.
	var tpl struct{ ID string }
	_ = json.Unmarshal(do("POST", "/v1/templates", k, `{"name":"Welcome","subject":"Hi {{name}}","html":"<p>{{name}}</p>","text":"Hi {{name}}"}`, 201), &tpl)
	do("POST", "/v1/templates", k, `{"name":"x","subject":"s","html":"<p>\n{{#open}}"}`, 400)   // INVALID_TEMPLATE with a line
	do("POST", "/v1/templates", k, `{"name":"x","subject":"s","text":"{{> partial}}"}`, 400)    // INVALID_TEMPLATE without
	do("POST", "/v1/templates", k, `{"name":"x","subject":"s"}`, 400)                           // no html or text
	do("POST", "/v1/templates", k, `{"name":"x","subject":"s","text":"t","strict":"yes"}`, 400) // wrong type
	var lenient struct{ ID string }
	_ = json.Unmarshal(do("POST", "/v1/templates", k, `{"name":"Lenient","subject":"Hi {{name}}","html":null,"text":"{{name}}","strict":false}`, 201), &lenient)
	do("POST", "/v1/templates/"+lenient.ID+"/render", k, `{}`, 200) // no data: variables render empty
	do("POST", "/v1/templates", narrow.Secret, `{"name":"x","subject":"s","text":"t"}`, 403)
	do("GET", "/v1/templates", k, "", 200)
	do("GET", "/v1/templates?page=1&limit=1", k, "", 200)
	do("GET", "/v1/templates/"+tpl.ID, k, "", 200)
	do("GET", "/v1/templates/nope", k, "", 404)
	do("PUT", "/v1/templates/"+tpl.ID, k, `{"subject":"Hello {{name}}","html":""}`, 200)
	do("PUT", "/v1/templates/"+tpl.ID, k, `{}`, 200)
	do("PUT", "/v1/templates/"+tpl.ID, k, `{"text":"{{/x}}"}`, 400)
	do("PUT", "/v1/templates/"+tpl.ID, k, `{"text":""}`, 400) // neither html nor text left
	do("PUT", "/v1/templates/nope", k, `{"name":"n"}`, 404)
	do("GET", "/v1/templates/"+tpl.ID+"?version=1", k, "", 200)
	do("GET", "/v1/templates/"+tpl.ID+"?version=0", k, "", 400)
	do("GET", "/v1/templates/"+tpl.ID+"?version=9", k, "", 404)
	do("GET", "/v1/templates/"+tpl.ID+"/versions", k, "", 200)
	do("GET", "/v1/templates/"+tpl.ID+"/versions?page=1&limit=2", k, "", 200)
	do("GET", "/v1/templates/nope/versions", k, "", 404)
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{"name":"<Ann>"}}`, 200, "Idempotency-Key", "r1")
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{"name":"<Ann>"}}`, 200, "Idempotency-Key", "r1")
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{"name":"Bo"},"version":1}`, 200)
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{}}`, 422)              // a missing variable
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{"name":"a\nb"}}`, 422) // a line break in the subject
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":null}`, 422)
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{},"version":-1}`, 400)
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{},"version":null}`, 400)
	do("POST", "/v1/templates/"+tpl.ID+"/render", k, `{"data":{},"version":9}`, 404)
	do("POST", "/v1/templates/nope/render", k, `{"data":{}}`, 404)
	do("POST", "/v1/templates/"+tpl.ID+"/render", narrow.Secret, `{"data":{}}`, 403)
}

// TestOpenAPIDescribesWebhookAnswers drives the webhook routes of a real
// Server, with the background workers delivering to real receivers, through
// every delivery status and the error answers, and checks each answer
// against the document.
func TestOpenAPIDescribesWebhookAnswers(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	o := appOptions(clock.Now)
	dispatch := &o.Webhooks.Dispatch
	dispatch.BaseDelay, dispatch.Timeout = 10*time.Millisecond, time.Second
	dispatch.Guard = hooks.Guard{AllowPrivate: true, AllowHTTP: true}
	s, a := newOpenAPITestServer(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	acct, e := a.CreateAccount(app.AccountInput{Name: "acme", Plan: "enterprise", RateLimit: 100000})
	if e != nil {
		t.Fatal(e)
	}
	newKey := func(accountID string, test bool, scopes ...string) string {
		t.Helper()
		return issueKey(t, a, accountID, app.KeyInput{Name: "k", Mode: modeOf(test), Scopes: scopes}).Secret
	}
	k, sandbox, narrow := newKey(acct.ID, false), newKey(acct.ID, true), newKey(acct.ID, false, "account:read")

	doOn := func(s *Server, method, path, key, body string, want int, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		return serveChecked(t, s, method, path, key, body, want, hdr...)
	}
	do := func(method, path, key, body string, want int, hdr ...string) []byte {
		t.Helper()
		_, data := doOn(s, method, path, key, body, want, hdr...)
		return data
	}
	type attempt struct {
		StatusCode *int    `json:"status_code"`
		Error      *string `json:"error"`
	}
	type delivery struct {
		EventID  string `json:"event_id"`
		Status   string
		Attempts []attempt
	}
	// waitFor polls the deliveries of a webhook until the event's delivery
	// has the status and at least n attempts with an outcome.
	waitFor := func(hookID, eventID, status string, n int) delivery {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var list struct{ Data []delivery }
			_ = json.Unmarshal(do("GET", "/v1/webhooks/"+hookID+"/deliveries", k, "", 200), &list)
			for _, d := range list.Data {
				if d.EventID != eventID || d.Status != status || len(d.Attempts) < n {
					continue
				}
				if last := d.Attempts[len(d.Attempts)-1]; last.StatusCode != nil || (last.Error != nil && !strings.HasPrefix(*last.Error, "interrupted")) {
					return d
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the delivery of %s to %s never became %s with %d attempts: %+v", eventID, hookID, status, n, list.Data)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	receiver := func(code int, hdr ...string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(code)
			io.WriteString(w, "thanks")
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	type webhook struct{ ID, Secret string }
	create := func(url string, events ...string) webhook {
		t.Helper()
		ev, _ := json.Marshal(events)
		var w webhook
		_ = json.Unmarshal(do("POST", "/v1/webhooks", k, `{"url":"`+url+`","events":`+string(ev)+`}`, 201), &w)
		if w.ID == "" || w.Secret == "" {
			t.Fatalf("created webhook without id or secret: %+v", w)
		}
		return w
	}
	record := func(typ string) string {
		t.Helper()
		ev, err := a.RecordEvent(acct.ID, false, typ, map[string]any{"messageId": "m1", "to": "ann@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}

	// Create, with its errors.
	ok := create(receiver(200), "message.accepted", "message.delivered", "message.sent")
	unsubscribes := `{"url":"` + receiver(200) + `","events":["recipient.unsubscribed"],"description":"ops"}`
	var other webhook
	_ = json.Unmarshal(do("POST", "/v1/webhooks", k, unsubscribes, 201, "Idempotency-Key", "w1"), &other)
	do("POST", "/v1/webhooks", k, unsubscribes, 201, "Idempotency-Key", "w1") // replayed
	do("POST", "/v1/webhooks", k, `{"url":"https://x.test","events":["message.sent"]}`, 409, "Idempotency-Key", "w1")
	do("POST", "/v1/webhooks", k, `{"url":"https://hooks.example.test/in","events":["message.exploded"]}`, 400) // details.allowed
	do("POST", "/v1/webhooks", k, `{"url":"https://hooks.example.test/in","events":[]}`, 400)
	do("POST", "/v1/webhooks", k, `{"url":"https://hooks.example.test/in","events":null}`, 400)
	do("POST", "/v1/webhooks", k, `{"url":"https://hooks.example.test/in"}`, 400)
	do("POST", "/v1/webhooks", k, `{"url":"not a url","events":["message.sent"]}`, 400)
	do("POST", "/v1/webhooks", k, `{"url":"ftp://hooks.example.test/in","events":["message.sent"]}`, 400)
	do("POST", "/v1/webhooks", k, `{"url":"https://hooks.example.test/in","events":["message.sent"],"secret":"mine"}`, 400)
	do("POST", "/v1/webhooks", k, `{"url":"https://hooks.example.test/in","events":["message.sent"],"description":"`+strings.Repeat("d", 501)+`"}`, 400)
	do("POST", "/v1/webhooks", narrow, `{"url":"https://hooks.example.test/in","events":["message.sent"]}`, 403)
	do("POST", "/v1/webhooks", "", `{"url":"https://hooks.example.test/in","events":["message.sent"]}`, 401)
	var testHook webhook
	_ = json.Unmarshal(do("POST", "/v1/webhooks", sandbox, `{"url":"https://hooks.example.test/in","events":["message.sent"]}`, 201), &testHook)

	// The SSRF guard of a server without --dev.
	strict, strictApp := newOpenAPITestServer(t, app.DefaultOptions())
	strictAcct, e := strictApp.CreateAccount(app.AccountInput{Name: "strict", Plan: "enterprise", RateLimit: 100000})
	if e != nil {
		t.Fatal(e)
	}
	strictKey := issueKey(t, strictApp, strictAcct.ID, app.KeyInput{Name: "k"})
	for _, url := range []string{"https://127.0.0.1/hook", "https://10.1.2.3/hook", "https://[::1]/hook",
		"https://169.254.169.254/latest", "https://localhost/hook", "http://93.184.216.34/hook"} {
		doOn(strict, "POST", "/v1/webhooks", strictKey.Secret, `{"url":"`+url+`","events":["message.sent"]}`, 400)
	}
	doOn(strict, "POST", "/v1/webhooks", strictKey.Secret, `{"url":"https://93.184.216.34/hook","events":["message.sent"]}`, 201)

	// The webhook quota: 100 per account.
	for i := 0; i < app.MaxWebhooks-1; i++ {
		req := httptest.NewRequest("POST", "/v1/webhooks", strings.NewReader(`{"url":"https://93.184.216.34/hook","events":["message.sent"]}`))
		req.Header.Set("X-API-Key", strictKey.Secret)
		rec := httptest.NewRecorder()
		strict.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("webhook %d: %d %s", i+2, rec.Code, rec.Body)
		}
	}
	doOn(strict, "POST", "/v1/webhooks", strictKey.Secret, `{"url":"https://93.184.216.34/hook","events":["message.sent"]}`, 429)

	// Read.
	do("GET", "/v1/webhooks", k, "", 200)
	do("GET", "/v1/webhooks?limit=1", k, "", 200)
	do("GET", "/v1/webhooks?page=2&limit=1", k, "", 200)
	do("GET", "/v1/webhooks?limit=0", k, "", 400)
	do("GET", "/v1/webhooks", sandbox, "", 200)
	do("GET", "/v1/webhooks", narrow, "", 403)
	do("GET", "/v1/webhooks/"+ok.ID, k, "", 200)
	do("GET", "/v1/webhooks/"+ok.ID, sandbox, "", 404) // another mode
	do("GET", "/v1/webhooks/"+testHook.ID, sandbox, "", 200)
	do("GET", "/v1/webhooks/nope", k, "", 404)
	do("PUT", "/v1/webhooks/"+ok.ID, k, "{}", 405)

	// Deliveries through every status.
	delivered := record(app.EventSent)
	waitFor(ok.ID, delivered, "delivered", 1)
	retrying := create(receiver(503, "Retry-After", "3600"), "message.sent")
	refused := create("http://127.0.0.1:1/hook", "message.sent") // connection refused: no status code
	failing := create(receiver(400), "message.sent")
	ev := record(app.EventSent)
	waitFor(retrying.ID, ev, "pending", 1)
	waitFor(refused.ID, ev, "pending", 1)
	waitFor(failing.ID, ev, "failed", 1)
	do("GET", "/v1/webhooks/"+ok.ID+"/deliveries?status=delivered", k, "", 200)
	do("GET", "/v1/webhooks/"+retrying.ID+"/deliveries?status=pending", k, "", 200)
	do("GET", "/v1/webhooks/"+failing.ID+"/deliveries?status=failed", k, "", 200)
	do("GET", "/v1/webhooks/"+failing.ID+"/deliveries?status=lost", k, "", 400)
	do("GET", "/v1/webhooks/"+ok.ID+"/deliveries?page=1&limit=1", k, "", 200)
	record(app.EventDelivered)
	do("GET", "/v1/webhooks/"+ok.ID+"/deliveries?limit=1", k, "", 200)
	do("GET", "/v1/webhooks/nope/deliveries", k, "", 404)
	do("GET", "/v1/webhooks/"+ok.ID+"/deliveries", sandbox, "", 404)
	do("GET", "/v1/webhooks/"+ok.ID+"/deliveries", narrow, "", 403)

	// Replay.
	do("POST", "/v1/webhooks/"+failing.ID+"/events/"+ev+"/replay", k, "", 202)
	waitFor(failing.ID, ev, "failed", 2)
	do("POST", "/v1/webhooks/"+failing.ID+"/events/"+ev+"/replay", k, "{}", 202, "Idempotency-Key", "r1")
	waitFor(failing.ID, ev, "failed", 3)
	do("POST", "/v1/webhooks/"+failing.ID+"/events/"+ev+"/replay", k, `{"force":true}`, 400)
	do("POST", "/v1/webhooks/"+ok.ID+"/events/"+delivered+"/replay", k, "", 409)
	do("POST", "/v1/webhooks/"+retrying.ID+"/events/"+ev+"/replay", k, "", 409)
	do("POST", "/v1/webhooks/"+other.ID+"/events/"+ev+"/replay", k, "", 404) // never sent to this webhook
	do("POST", "/v1/webhooks/nope/events/"+ev+"/replay", k, "", 404)
	do("POST", "/v1/webhooks/"+failing.ID+"/events/"+ev+"/replay", narrow, "", 403)
	clock.Add(7*24*time.Hour + time.Minute)
	do("POST", "/v1/webhooks/"+failing.ID+"/events/"+ev+"/replay", k, "", 404) // past the retention

	// Rotation.
	var rotated struct {
		Secret                  string
		PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	}
	_ = json.Unmarshal(do("POST", "/v1/webhooks/"+ok.ID+"/rotate-secret", k, "", 200), &rotated)
	if rotated.Secret == "" || rotated.Secret == ok.Secret || rotated.PreviousSecretExpiresAt == nil {
		t.Errorf("rotate-secret: %+v", rotated)
	}
	do("POST", "/v1/webhooks/"+ok.ID+"/rotate-secret", k, "{}", 200)
	do("POST", "/v1/webhooks/"+ok.ID+"/rotate-secret", k, `{"secret":"mine"}`, 400)
	do("GET", "/v1/webhooks/"+ok.ID, k, "", 200) // previous_secret_expires_at set
	do("POST", "/v1/webhooks/nope/rotate-secret", k, "", 404)
	do("POST", "/v1/webhooks/"+ok.ID+"/rotate-secret", sandbox, "", 404)

	// Delete.
	do("DELETE", "/v1/webhooks/"+ok.ID, narrow, "", 403)
	do("DELETE", "/v1/webhooks/"+ok.ID, k, "", 204)
	do("DELETE", "/v1/webhooks/"+ok.ID, k, "", 404)
	do("GET", "/v1/webhooks/"+ok.ID+"/deliveries", k, "", 404)
	if n := a.Panics(); n != 0 {
		t.Errorf("%d worker panics", n)
	}
}

// serveChecked sends one request through s in-process, checks its status
// and validates the answer against the OpenAPI document.
func serveChecked(t *testing.T, s *Server, method, path, key, body string, want int, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	resp := rec.Result()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Errorf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	checkOpenAPI(t, req, resp, data)
	return resp, data
}
