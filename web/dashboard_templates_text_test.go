package web

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// The template preview's form must be text, as the API's bodies: data
// with a byte that is not UTF-8, or a lone surrogate escape, is refused
// on the page (as the form's error, the data shown again with U+FFFD for
// the bytes) and in the JSON envelope, naming the path within the data;
// so is a draft's subject, html or text that is not UTF-8, while "\ud800"
// in them is text. encoding/json rendered U+FFFD in their place.
func TestDashboardTemplatePreviewRefusesWhatIsNotText(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	dev := e.loggedIn(e.acct, "dev@example.com", "developer")
	const list = "/dashboard/templates"
	made := dev.post(list, list, url.Values{"name": {"welcome"}, "subject": {"Hi {{name}}"},
		"html": {"<p>Hello {{name}}</p>"}, "text": {"Hello {{name}}"}})
	edit := made.Header.Get("Location")
	if made.StatusCode != 303 || edit == "" {
		t.Fatalf("creating: %d %s", made.StatusCode, made.body)
	}

	for _, c := range []struct{ data, want string }{
		{"{\"name\": \"A\xffnn\"}", "data.name: must be valid UTF-8"},
		{`{"name": "\ud800"}`, `data.name: must not contain a lone UTF-16 surrogate (\ud800)`},
		{`{"list": [1, "x\udc00"]}`, `data.list[1]: must not contain a lone UTF-16 surrogate (\udc00)`},
		{"{\"na\xc3me\": 1}", "data.na\uFFFDme: must be valid UTF-8"},
	} {
		p := dev.post(edit, edit+"/preview", url.Values{"data": {c.data}, "version": {"1"}})
		wantStatus(t, "a preview of "+c.data, p, 400)
		wantIn(t, "a preview of "+c.data, p, `<p class="error" role="alert">`+c.want)
		if !utf8.ValidString(p.body) || strings.Contains(p.body, "Rendered output") {
			t.Errorf("a preview of %q: the page is not UTF-8, or renders: %s", c.data, p.body)
		}
	}
	wantIn(t, "the data shown again", dev.post(edit, edit+"/preview", url.Values{"data": {"{\"name\": \"A\xffnn\"}"}}),
		`{&#34;name&#34;: &#34;A`+"\uFFFD"+`nn&#34;}</textarea>`)

	previewJSON := func(form url.Values) (int, map[string]any) {
		t.Helper()
		dev.hdr = []string{"Accept", "application/json"}
		defer func() { dev.hdr = nil }()
		form.Set("csrf", dev.csrf(edit))
		r := dev.do("POST", edit+"/preview", form)
		var v map[string]any
		if err := json.Unmarshal([]byte(r.body), &v); err != nil {
			t.Fatalf("the JSON preview: %d %v: %s", r.StatusCode, err, r.body)
		}
		return r.StatusCode, v
	}
	for _, c := range []struct {
		form         url.Values
		field, start string
	}{
		{url.Values{"data": {"{\"name\": \"A\xffnn\"}"}}, "data.name", "must be valid UTF-8"},
		{url.Values{"data": {`{"a": {"b": "\ud83d"}}`}, "html": {"x"}}, "data.a.b", "must not contain a lone UTF-16 surrogate"},
		{url.Values{"data": {"{}"}, "subject": {"Hi"}, "html": {"<p>\xe2\x82</p>"}}, "html", "must be valid UTF-8"},
		{url.Values{"data": {"{}"}, "subject": {"Hi \xff"}}, "subject", "must be valid UTF-8"},
		{url.Values{"data": {"{}"}, "text": {"\xc0\xaf"}}, "text", "must be valid UTF-8"},
	} {
		status, v := previewJSON(c.form)
		env, _ := v["error"].(map[string]any)
		details, _ := env["details"].(map[string]any)
		if msg, _ := env["message"].(string); status != 400 || env["code"] != "VALIDATION_ERROR" || details["field"] != c.field ||
			!strings.HasPrefix(msg, c.field+": "+c.start) {
			t.Errorf("the JSON preview of %v: %d %v, want 400 naming %s", c.form, status, v, c.field)
		}
	}
	// In a draft, which is not JSON, "\ud800" is six characters.
	status, v := previewJSON(url.Values{"data": {`{"name": "Ann \ud83d\ude00"}`}, "subject": {`Hi \ud800`}, "html": {`<p>{{name}}</p>`}})
	if status != 200 || v["subject"] != `Hi \ud800` || v["html"] != "<p>Ann \U0001F600</p>" {
		t.Errorf("a draft with the text \\ud800 and data with a pair: %d %v", status, v)
	}
}
