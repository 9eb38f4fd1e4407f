package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTemplateAliasesOverHTTP: an alias is set on create, shown, usable in
// place of the id in the template routes and in messages (single and
// batch), unique per account, refused when it looks like a UUID, and moved
// or cleared by an update, which frees the old one.
func TestTemplateAliasesOverHTTP(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	sandbox := e.newKey(e.acct.ID, nil, true, nil)
	created := e.do("POST", "/v1/templates", e.key, `{"name":"Welcome","alias":"welcome","subject":"Hi {{name}}","text":"Hello {{name}}"}`).want(t, 201).json(t)
	id := created["id"].(string)
	if created["alias"] != "welcome" {
		t.Fatalf("created %v", created)
	}
	if got := e.do("GET", "/v1/templates/welcome", e.key, nil).want(t, 200).json(t); got["id"] != id || got["alias"] != "welcome" {
		t.Fatalf("by alias: %v", got)
	}
	list := e.do("GET", "/v1/templates", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if list[0].(map[string]any)["alias"] != "welcome" {
		t.Errorf("list %v", list)
	}
	if r := e.do("POST", "/v1/templates/welcome/render", e.key, `{"data":{"name":"Ann"}}`).want(t, 200).json(t); r["subject"] != "Hi Ann" {
		t.Errorf("render by alias %v", r)
	}
	// A name repeated in the data is refused, not rendered with the last.
	r := e.do("POST", "/v1/templates/welcome/render", e.key, `{"data":{"name":"Ann","name":"Bob"}}`).want(t, 400, "VALIDATION_ERROR")
	if f := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"]; f != "data.name" {
		t.Errorf("a repeated name in the render's data: field %v", f)
	}
	e.do("GET", "/v1/templates/welcome/versions", e.key, nil).want(t, 200)

	sentWith := func(ref string) string {
		t.Helper()
		r := e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com",
			"template_id": ref, "template_data": map[string]any{"name": "Ann"}}).want(t, 202)
		var m struct{ ID string }
		json.Unmarshal(r.body, &m)
		var got struct {
			Subject  string
			Template *struct{ ID string }
		}
		json.Unmarshal(e.do("GET", "/v1/messages/"+m.ID, sandbox, nil).want(t, 200).body, &got)
		if got.Subject != "Hi Ann" || got.Template == nil {
			t.Fatalf("sent with %q: %+v", ref, got)
		}
		return got.Template.ID
	}
	if ref := sentWith("welcome"); ref != id {
		t.Errorf("a message sent by alias records template %q, want the id %q", ref, id)
	}
	batch := map[string]any{"messages": []map[string]any{{"from": "shop@unverified.test", "to": "bo@example.com",
		"template_id": "welcome", "template_data": map[string]any{"name": "Bo"}}}}
	e.do("POST", "/v1/messages/batch", sandbox, batch).want(t, 202)

	// Unique per account; another account may use the same alias.
	taken := `{"name":"Other","alias":"welcome","subject":"s","text":"t"}`
	e.do("POST", "/v1/templates", e.key, taken).want(t, 409, "CONFLICT")
	_, other := e.account("other", "enterprise", 100000)
	otherTpl := e.do("POST", "/v1/templates", other, taken).want(t, 201).json(t)
	e.do("GET", "/v1/templates/welcome", other, nil).want(t, 200)
	if got := e.do("GET", "/v1/templates/welcome", other, nil).json(t); got["id"] != otherTpl["id"] {
		t.Errorf("the other account's alias resolves to %v", got["id"])
	}

	for _, bad := range []string{`"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"`, `"0190a1b2c3d47e5f8a9b0c1d2e3f4a5b"`, `"Welcome"`, `"a b"`,
		`"` + strings.Repeat("a", 65) + `"`} {
		e.do("POST", "/v1/templates", e.key, `{"name":"x","subject":"s","text":"t","alias":`+bad+`}`).want(t, 400, "VALIDATION_ERROR")
	}

	// An update moves the alias and frees the old one; "" clears it.
	up := e.do("PUT", "/v1/templates/welcome", e.key, `{"alias":"hello"}`).want(t, 200).json(t)
	if up["alias"] != "hello" || up["id"] != id {
		t.Fatalf("update %v", up)
	}
	e.do("GET", "/v1/templates/welcome", e.key, nil).want(t, 404, "NOT_FOUND")
	e.do("POST", "/v1/messages", sandbox, map[string]any{"from": "shop@unverified.test", "to": "ann@example.com",
		"template_id": "welcome", "template_data": map[string]any{}}).want(t, 400, "INVALID_TEMPLATE")
	if ref := sentWith("hello"); ref != id {
		t.Errorf("sent by the new alias: %q", ref)
	}
	second := e.do("POST", "/v1/templates", e.key, taken).want(t, 201).json(t)
	e.do("PUT", "/v1/templates/"+second["id"].(string), e.key, `{"alias":"hello"}`).want(t, 409, "CONFLICT")
	kept := e.do("PUT", "/v1/templates/hello", e.key, `{"subject":"Hey {{name}}"}`).want(t, 200).json(t)
	if kept["alias"] != "hello" {
		t.Errorf("an update without alias dropped it: %v", kept)
	}
	cleared := e.do("PUT", "/v1/templates/"+id, e.key, `{"alias":""}`).want(t, 200).json(t)
	if cleared["alias"] != nil {
		t.Errorf("cleared %v", cleared)
	}
	e.do("GET", "/v1/templates/hello", e.key, nil).want(t, 404, "NOT_FOUND")
	e.do("PUT", "/v1/templates/"+second["id"].(string), e.key, `{"alias":"hello"}`).want(t, 200)
}
