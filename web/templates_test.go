package web

import (
	"strings"
	"testing"
)

func TestTemplatesOverHTTP(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	created := e.do("POST", "/v1/templates", e.key, `{"name":"Welcome","subject":"Hi {{name}}","html":"<p>{{name}}</p>","text":"Hi {{name}}"}`).want(t, 201)
	tpl := created.json(t)
	id := tpl["id"].(string)
	if tpl["version"] != 1.0 || tpl["strict"] != true || created.Header.Get("Location") != "/v1/templates/"+id {
		t.Fatalf("created %v", tpl)
	}
	bad := e.do("POST", "/v1/templates", e.key, `{"name":"x","subject":"s","html":"<p>\n{{#open}}"}`).want(t, 400, "INVALID_TEMPLATE")
	details := bad.json(t)["error"].(map[string]any)["details"].(map[string]any)
	if details["part"] != "html" || details["line"] == nil || details["reason"] != "section_no_closing_tag" {
		t.Errorf("parse error details %v", details)
	}
	e.do("POST", "/v1/templates", e.key, `{"name":"x","subject":"s"}`).want(t, 400, "VALIDATION_ERROR")

	r := e.do("POST", "/v1/templates/"+id+"/render", e.key, `{"data":{"name":"<Ann>"}}`).want(t, 200).json(t)
	if r["subject"] != "Hi <Ann>" || r["html"] != "<p>&lt;Ann&gt;</p>" || r["text"] != "Hi <Ann>" || r["version"] != 1.0 {
		t.Fatalf("render %v", r)
	}
	miss := e.do("POST", "/v1/templates/"+id+"/render", e.key, `{"data":{}}`).want(t, 422, "TEMPLATE_RENDER_FAILED")
	if miss.json(t)["error"].(map[string]any)["details"].(map[string]any)["variable"] != "name" {
		t.Errorf("missing variable not named: %s", miss.body)
	}

	up := e.do("PUT", "/v1/templates/"+id, e.key, `{"subject":"Hello {{name}}"}`).want(t, 200).json(t)
	if up["version"] != 2.0 || up["html"] != "<p>{{name}}</p>" {
		t.Fatalf("update %v", up)
	}
	e.do("PUT", "/v1/templates/"+id, e.key, `{"text":"{{/x}}"}`).want(t, 400, "INVALID_TEMPLATE")
	v1 := e.do("GET", "/v1/templates/"+id+"?version=1", e.key, nil).want(t, 200).json(t)
	if v1["subject"] != "Hi {{name}}" || v1["version"] != 1.0 {
		t.Errorf("version 1: %v", v1)
	}
	e.do("GET", "/v1/templates/"+id+"?version=0", e.key, nil).want(t, 400, "VALIDATION_ERROR")
	e.do("GET", "/v1/templates/"+id+"?version=9", e.key, nil).want(t, 404, "NOT_FOUND")
	pinned := e.do("POST", "/v1/templates/"+id+"/render", e.key, `{"data":{"name":"Bo"},"version":1}`).want(t, 200).json(t)
	if pinned["subject"] != "Hi Bo" {
		t.Errorf("pinned render %v", pinned)
	}
	versions := e.do("GET", "/v1/templates/"+id+"/versions", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(versions) != 2 || versions[0].(map[string]any)["version"] != 2.0 {
		t.Errorf("versions %v", versions)
	}
	list := e.do("GET", "/v1/templates", e.key, nil).want(t, 200)
	if strings.Contains(string(list.body), "<p>") {
		t.Error("list carries template bodies")
	}
	_, other := e.account("other", "enterprise", 100000)
	for _, c := range [][2]string{{"GET", ""}, {"GET", "/versions"}} {
		e.do(c[0], "/v1/templates/"+id+c[1], other, nil).want(t, 404, "NOT_FOUND")
	}
	e.do("PUT", "/v1/templates/"+id, other, `{"name":"mine"}`).want(t, 404, "NOT_FOUND")
	e.do("POST", "/v1/templates/"+id+"/render", other, `{"data":{}}`).want(t, 404, "NOT_FOUND")
}

// TestTemplateDataIntegersExact: template_data's integers render digit for
// digit beyond 2^53 (a float64 would print 12345678901234567890 as
// 12345678901234567000), through the render route and in the message
// stored from a send, and other numbers as before.
func TestTemplateDataIntegersExact(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	id := e.do("POST", "/v1/templates", e.key, `{"name":"n","subject":"n={{n}}","text":"n={{n}}"}`).want(t, 201).json(t)["id"].(string)
	for n, want := range map[string]string{
		"12345678901234567890":  "n=12345678901234567890",
		"9007199254740993":      "n=9007199254740993",
		"-12345678901234567890": "n=-12345678901234567890",
		"85":                    "n=85",
		"1.5":                   "n=1.5",
		"1e3":                   "n=1000",
		"1.0":                   "n=1",
		"-0":                    "n=0",
	} {
		r := e.do("POST", "/v1/templates/"+id+"/render", e.key, `{"data":{"n":`+n+`}}`).want(t, 200).json(t)
		if r["subject"] != want || r["text"] != want {
			t.Errorf("n %s: rendered %v, want %q", n, r, want)
		}
	}
	key := e.newKey(e.acct.ID, nil, true, nil)
	for _, body := range []string{
		`{"from":"shop@unverified.test","to":"ann@example.com","template_id":"` + id + `","template_data":{"n":12345678901234567890}}`,
		`{"from":"shop@unverified.test","to":"ann@example.com","subject":"n={{n}}","text":"n={{n}}","template_data":{"n":12345678901234567890}}`,
	} {
		sent := e.do("POST", "/v1/messages", key, body).want(t, 202).json(t)
		m := e.do("GET", "/v1/messages/"+sent["id"].(string), key, nil).want(t, 200).json(t)
		if text := m["content"].(map[string]any)["text"]; m["subject"] != "n=12345678901234567890" || text != "n=12345678901234567890" {
			t.Errorf("%s: stored subject %q, text %q", body, m["subject"], text)
		}
	}
}
