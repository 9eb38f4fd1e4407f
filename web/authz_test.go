package web

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
)

// documentedScopes reads the scope each operation of the OpenAPI document
// says it requires ("Requires scope `x`."), by "METHOD /path".
func documentedScopes(t *testing.T) map[string]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Description string `json:"description"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("Requires scope `([a-z_:]+)`")
	out := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if m := re.FindAllStringSubmatch(op.Description, -1); len(m) == 1 {
				out[strings.ToUpper(method)+" "+path] = m[0][1]
			} else if len(m) > 1 {
				t.Errorf("openapi.json: %s %s names %d scopes", method, path, len(m))
			}
		}
	}
	return out
}

// scopeTable reads docs/authentication.md's table of scopes and the routes
// that require them, by "METHOD /path".
func scopeTable(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../docs/authentication.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_]+:[a-z]+)` \\| (.*) \\|$")
	route := regexp.MustCompile("`((?:GET|POST|PUT|PATCH|DELETE) /v1/[^`]*)`")
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, r := range route.FindAllStringSubmatch(m[2], -1) {
			if prev, ok := out[r[1]]; ok {
				t.Errorf("docs/authentication.md lists %s under %s and %s", r[1], prev, m[1])
			}
			out[r[1]] = m[1]
		}
	}
	return out
}

// Each route's Scope, checked before its body is read, and what the use
// case its handler calls enforces (app's authorize) are held equal to what
// the OpenAPI document and docs/authentication.md say: a key holding every
// scope but the documented one is refused with required_scope naming it,
// whatever body it sends (an undecodable one included: 403, not 400), and
// a key holding only that scope is not refused for want of another.
func TestRouteScopesAreEnforcedAndDocumented(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	documented, table := documentedScopes(t), scopeTable(t)
	listed := map[string]bool{}
	for _, rt := range mustNew(t, e.app, DefaultConfig()).routes() {
		what := rt.Method + " " + openAPIPath(rt.Path)
		listed[what] = true
		scope := documented[what]
		if rt.Public {
			if scope != "" {
				t.Errorf("%s is public but openapi.json says it requires %s", what, scope)
			}
			continue
		}
		if scope == "" {
			t.Errorf("%s: openapi.json names no scope", what)
			continue
		}
		if table[what] != scope {
			t.Errorf("%s: docs/authentication.md lists it under %q, openapi.json under %q", what, table[what], scope)
		}
		if rt.Scope != scope {
			t.Errorf("%s: the route requires %q, openapi.json %q", what, rt.Scope, scope)
		}
		path := regexp.MustCompile(`:[a-z_]+`).ReplaceAllString(rt.Path, "x")
		// A body that web decodes, so the request reaches the use case:
		// a body web cannot decode is 400 before any scope is checked.
		var body any
		if rt.Method == "POST" || rt.Method == "PUT" || rt.Method == "PATCH" {
			body = "{}"
		}
		if what == "POST /v1/messages/batch" {
			body = `{"messages":[]}`
		}
		if what == "POST /v1/suppressions/import" {
			body = `{"suppressions":[]}`
		}
		var others []string
		for _, s := range app.Scopes {
			if s != scope {
				others = append(others, s)
			}
		}
		without := e.newKey(e.acct.ID, others, false, nil)
		for _, body := range []any{body, "not JSON {"} {
			r := e.do(rt.Method, path, without, body)
			errObj, _ := r.json(t)["error"].(map[string]any)
			details, _ := errObj["details"].(map[string]any)
			if r.StatusCode != 403 || details["required_scope"] != scope {
				t.Errorf("%s by a key without %s, body %v: %d %s", what, scope, body, r.StatusCode, r.body)
			}
		}
		r := e.do(rt.Method, path, e.newKey(e.acct.ID, []string{scope}, false, nil), body)
		if r.StatusCode == 401 || r.StatusCode == 403 {
			t.Errorf("%s by a key holding only %s: %d %s", what, scope, r.StatusCode, r.body)
		}
	}
	for what := range table {
		if !listed[what] {
			t.Errorf("docs/authentication.md lists %s, which is not a route", what)
		}
	}
	for _, s := range app.Scopes {
		if !slices.Contains(slices.Collect(maps.Values(table)), s) {
			t.Errorf("docs/authentication.md lists no route for %s", s)
		}
	}
}

func TestKeyCannotOutliveItsCreator(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	exp := e.clock.Now().Add(24 * time.Hour)
	creator := e.newKey(e.acct.ID, nil, false, &exp)
	r := e.do("POST", "/v1/api-keys", creator, `{"name":"later","expires_at":"2026-11-24T12:00:00Z"}`).want(t, 400, "VALIDATION_ERROR")
	details := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	if details["field"] != "expires_at" || details["max_expires_at"] != "2026-11-23T12:00:00Z" {
		t.Errorf("details = %v", details)
	}
	if got := e.do("POST", "/v1/api-keys", creator, `{"name":"default"}`).want(t, 201).json(t); got["expires_at"] != "2026-11-23T12:00:00Z" {
		t.Errorf("default expiry = %v, want the creator's", got["expires_at"])
	}
	e.do("POST", "/v1/api-keys", creator, `{"name":"sooner","expires_at":"2026-11-23T00:00:00Z"}`).want(t, 201)
	// A key that never expires may make one that does, or does not.
	e.do("POST", "/v1/api-keys", e.key, `{"name":"far","expires_at":"2030-01-01T00:00:00Z"}`).want(t, 201)
	if got := e.do("POST", "/v1/api-keys", e.key, `{"name":"forever"}`).want(t, 201).json(t); got["expires_at"] != nil {
		t.Errorf("expires_at = %v, want null", got["expires_at"])
	}
}
