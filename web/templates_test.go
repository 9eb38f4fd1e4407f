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
