package app

import (
	"encoding/json"
	"strings"
	"testing"

	"mailbolt/storage"
)

func ptr[T any](v T) *T { return &v }

// mustacheSpec holds cases from the Mustache specification (interpolation,
// sections, inverted sections, comments, delimiters). Each renders as the
// html part (escaping) unless raw is set (text/subject: no escaping).
var mustacheSpec = []struct {
	name, tmpl, data, want string
	raw                    bool
}{
	{"no interpolation", "Hello from {Mustache}!", `{}`, "Hello from {Mustache}!", false},
	{"basic interpolation", "Hello, {{subject}}!", `{"subject":"world"}`, "Hello, world!", false},
	{"HTML escaping", "These characters should be HTML escaped: {{forbidden}}", `{"forbidden":"& \" < >"}`, "These characters should be HTML escaped: &amp; &#34; &lt; &gt;", false},
	{"triple mustache", "These characters should not be HTML escaped: {{{forbidden}}}", `{"forbidden":"& \" < >"}`, "These characters should not be HTML escaped: & \" < >", false},
	{"ampersand", "These characters should not be HTML escaped: {{&forbidden}}", `{"forbidden":"& \" < >"}`, "These characters should not be HTML escaped: & \" < >", false},
	{"integer", `"{{mph}} miles an hour!"`, `{"mph":85}`, `"85 miles an hour!"`, false},
	{"decimal", `"{{power}} jiggawatts!"`, `{"power":1.21}`, `"1.21 jiggawatts!"`, false},
	{"dotted names", `"{{person.name}}" == "{{#person}}{{name}}{{/person}}"`, `{"person":{"name":"Joe"}}`, `"Joe" == "Joe"`, false},
	{"dotted names, arbitrary depth", `"{{a.b.c.d.e.name}}" == "Phil"`, `{"a":{"b":{"c":{"d":{"e":{"name":"Phil"}}}}}}`, `"Phil" == "Phil"`, false},
	{"interpolation surrounding whitespace", "| {{string}} |", `{"string":"---"}`, "| --- |", false},
	{"interpolation with padding", "|{{ string }}|", `{"string":"---"}`, "|---|", false},
	{"section truthy", `"{{#boolean}}This should be rendered.{{/boolean}}"`, `{"boolean":true}`, `"This should be rendered."`, false},
	{"section falsey", `"{{#boolean}}This should not be rendered.{{/boolean}}"`, `{"boolean":false}`, `""`, false},
	{"section context", `"{{#context}}Hi {{name}}.{{/context}}"`, `{"context":{"name":"Joe"}}`, `"Hi Joe."`, false},
	{"section list", `"{{#list}}{{item}}{{/list}}"`, `{"list":[{"item":1},{"item":2},{"item":3}]}`, `"123"`, false},
	{"section empty list", `"{{#list}}Yay lists!{{/list}}"`, `{"list":[]}`, `""`, false},
	{"section doubled", "{{#bool}}\n* first\n{{/bool}}\n* {{two}}\n{{#bool}}\n* third\n{{/bool}}\n", `{"bool":true,"two":"second"}`, "* first\n* second\n* third\n", false},
	{"nested truthy", "| A {{#bool}}B {{#bool}}C{{/bool}} D{{/bool}} E |", `{"bool":true}`, "| A B C D E |", false},
	{"implicit iterator", `"{{#list}}({{.}}){{/list}}"`, `{"list":["a","b","c","d","e"]}`, `"(a)(b)(c)(d)(e)"`, false},
	{"inverted falsey", `"{{^boolean}}This should be rendered.{{/boolean}}"`, `{"boolean":false}`, `"This should be rendered."`, false},
	{"inverted truthy", `"{{^boolean}}This should not be rendered.{{/boolean}}"`, `{"boolean":true}`, `""`, false},
	{"inverted list", `"{{^list}}{{n}}{{/list}}"`, `{"list":[{"n":1},{"n":2}]}`, `""`, false},
	{"inverted empty list", `"{{^list}}Yay lists!{{/list}}"`, `{"list":[]}`, `"Yay lists!"`, false},
	{"inverted missing is falsey", "[{{^missing}}Found key 'missing'!{{/missing}}]", `{}`, "[Found key 'missing'!]", false},
	{"standalone lines", "| This Is\n{{#boolean}}\n|\n{{/boolean}}\n| A Line\n", `{"boolean":true}`, "| This Is\n|\n| A Line\n", false},
	{"comment inline", "12345{{! Comment Block! }}67890", `{}`, "1234567890", false},
	{"delimiters pair behavior", "{{=<% %>=}}(<%text%>)", `{"text":"Hey!"}`, "(Hey!)", false},
	{"text parts do not escape", "Hi {{name}} & co", `{"name":"<Ann>"}`, "Hi <Ann> & co", true},
}

func TestMustacheSpec(t *testing.T) {
	for _, c := range mustacheSpec {
		t.Run(c.name, func(t *testing.T) {
			var data map[string]any
			if err := json.Unmarshal([]byte(c.data), &data); err != nil {
				t.Fatal(err)
			}
			v := storage.TemplateVersion{Name: "t", Subject: "s", HTML: c.tmpl, Strict: true}
			if c.raw {
				v.HTML, v.Text = "", c.tmpl
			}
			got, e := render(v, data, defaultLimits())
			if e != nil {
				t.Fatal(e)
			}
			out := got.HTML
			if c.raw {
				out = got.Text
			}
			if out != c.want {
				t.Errorf("got  %q\nwant %q", out, c.want)
			}
		})
	}
}

func TestTemplateParseErrors(t *testing.T) {
	for _, c := range []struct {
		in       TemplateInput
		part     string
		line     int
		reason   string
		codeWant string
	}{
		{TemplateInput{Name: ptr("t"), Subject: ptr("Hi {{name"), Text: ptr("x")}, "subject", 1, "unmatched_open_tag", CodeInvalidTemplate},
		{TemplateInput{Name: ptr("t"), Subject: ptr("s"), HTML: ptr("<p>\nline two\n{{#items}}\n{{name}}\n")}, "html", 4, "section_no_closing_tag", CodeInvalidTemplate},
		{TemplateInput{Name: ptr("t"), Subject: ptr("s"), Text: ptr("a\n{{/items}}")}, "text", 2, "unmatched_close_tag", CodeInvalidTemplate},
		{TemplateInput{Name: ptr("t"), Subject: ptr("s"), Text: ptr("{{> footer}}")}, "text", 0, "", CodeInvalidTemplate},
	} {
		a, _ := newTestApp(t)
		_, _, e := a.CreateTemplate(keyIn("acct"), c.in)
		if e == nil || AsError(e).Code != c.codeWant || AsError(e).Status() != 400 {
			t.Fatalf("%+v: %v", c.in, e)
		}
		if AsError(e).Details["part"] != c.part {
			t.Errorf("part = %v, want %s (%s)", AsError(e).Details["part"], c.part, AsError(e).Message)
		}
		if c.line > 0 && (AsError(e).Details["line"] != c.line || AsError(e).Details["reason"] != c.reason) {
			t.Errorf("%s: details %v, want line %d %s", c.part, AsError(e).Details, c.line, c.reason)
		}
	}
	a, _ := newTestApp(t)
	for _, in := range []TemplateInput{
		{Subject: ptr("s"), Text: ptr("x")},
		{Name: ptr("t"), Text: ptr("x")},
		{Name: ptr("t"), Subject: ptr("s")},
	} {
		if _, _, e := a.CreateTemplate(keyIn("acct"), in); e == nil || AsError(e).Code != CodeValidation {
			t.Errorf("%+v: %v", in, e)
		}
	}
}

func TestTemplateVersionsAndRender(t *testing.T) {
	a, _ := newTestApp(t)
	tpl, v1, e := a.CreateTemplate(keyIn("acct"), TemplateInput{Name: ptr("Welcome"), Subject: ptr("Welcome, {{name}}"),
		HTML: ptr("<p>Hi {{name}}, {{#items}}<b>{{.}}</b>{{/items}}</p>"), Text: ptr("Hi {{name}}")})
	if e != nil || v1.Version != 1 || tpl.Version != 1 || !tpl.Strict {
		t.Fatal(e)
	}
	r, e := a.RenderTemplate(keyIn("acct"), tpl.ID, 0, map[string]any{"name": "<Ann>", "items": []any{"a", "b"}})
	if e != nil || r.Subject != "Welcome, <Ann>" || r.HTML != "<p>Hi &lt;Ann&gt;, <b>a</b><b>b</b></p>" || r.Text != "Hi <Ann>" {
		t.Fatalf("render: %+v %v", r, e)
	}
	// Strict by default: a missing variable names itself.
	_, e = a.RenderTemplate(keyIn("acct"), tpl.ID, 0, map[string]any{"items": []any{}})
	if e == nil || AsError(e).Code != CodeTemplateRenderFailed || AsError(e).Status() != 422 || AsError(e).Details["variable"] != "name" || AsError(e).Details["part"] != "subject" {
		t.Fatalf("missing variable: %v", e)
	}
	// A subject must not render a line break.
	if _, e := a.RenderTemplate(keyIn("acct"), tpl.ID, 0, map[string]any{"name": "x\r\nBcc: evil@example.test"}); e == nil || AsError(e).Code != CodeTemplateRenderFailed {
		t.Fatalf("header injection through the subject: %v", e)
	}
	// An update is a new version; the old one stays renderable.
	tpl2, v2, e := a.UpdateTemplate(keyIn("acct"), tpl.ID, TemplateInput{Subject: ptr("Hello {{name}}"), Strict: ptr(false)})
	if e != nil || v2.Version != 2 || tpl2.Version != 2 || v2.HTML != v1.HTML || tpl2.Strict {
		t.Fatalf("update: %+v %v", v2, e)
	}
	r, e = a.RenderTemplate(keyIn("acct"), tpl.ID, 0, map[string]any{})
	if e != nil || r.Subject != "Hello " || r.Version != 2 {
		t.Fatalf("lenient render: %+v %v", r, e)
	}
	if r, e = a.RenderTemplate(keyIn("acct"), tpl.ID, 1, map[string]any{"name": "Bo", "items": nil}); e != nil || r.Subject != "Welcome, Bo" || r.Version != 1 {
		t.Fatalf("pinned version 1: %+v %v", r, e)
	}
	if _, e = a.RenderTemplate(keyIn("acct"), tpl.ID, 7, nil); e == nil || AsError(e).Status() != 404 {
		t.Fatalf("missing version: %v", e)
	}
	// A bad update changes nothing.
	if _, _, e = a.UpdateTemplate(keyIn("acct"), tpl.ID, TemplateInput{HTML: ptr("{{#open}}")}); e == nil || AsError(e).Code != CodeInvalidTemplate {
		t.Fatalf("bad update: %v", e)
	}
	versions, _, total, _ := a.TemplateVersions(keyIn("acct"), tpl.ID, storage.ListOptions{Limit: 10})
	if total != 2 || len(versions) != 2 || versions[0].Version != 2 {
		t.Fatalf("versions: %d %v", total, versions)
	}
	// Another tenant sees nothing.
	if _, _, e := a.Template(keyIn("other"), tpl.ID, 0); e == nil || AsError(e).Status() != 404 {
		t.Error("cross-tenant read")
	}
	if _, _, e := a.UpdateTemplate(keyIn("other"), tpl.ID, TemplateInput{Name: ptr("x")}); e == nil || AsError(e).Status() != 404 {
		t.Error("cross-tenant update")
	}
}

func TestNumbersAndNullRenderPlainly(t *testing.T) {
	v := storage.TemplateVersion{Name: "t", Subject: "s", Text: "{{big}} {{huge}} {{pi}} [{{none}}] {{#list}}{{.}},{{/list}}"}
	var data map[string]any
	json.Unmarshal([]byte(`{"big":1000000,"huge":12345678901,"pi":3.25,"none":null,"list":[1,2.5]}`), &data)
	got, e := render(v, data, defaultLimits())
	if e != nil || got.Text != "1000000 12345678901 3.25 [] 1,2.5," {
		t.Fatalf("%q %v", got.Text, e)
	}
	a, _ := newTestApp(t)
	if _, _, e := a.CreateTemplate(keyIn("acct"), TemplateInput{Name: ptr("t"), Subject: ptr("a\nb"), Text: ptr("x")}); e == nil || AsError(e).Code != CodeValidation {
		t.Errorf("multi-line subject accepted: %v", e)
	}
}

// TestNumbersAsWrittenRenderExactly: data decoded with UseNumber (as the
// API decodes template_data) prints its integers digit for digit beyond
// 2^53 and int64, and its other numbers as float64 data prints them.
func TestNumbersAsWrittenRenderExactly(t *testing.T) {
	v := storage.TemplateVersion{Name: "t", Subject: "s", Text: "{{big}} {{b53}} {{neg}} {{i64}} {{one}} {{exp}} {{pi}} {{f21}} {{#list}}{{.}},{{/list}} [{{#zero}}z{{/zero}}] {{#big}}B{{/big}}"}
	dec := json.NewDecoder(strings.NewReader(`{"big":12345678901234567890,"b53":9007199254740993,"neg":-12345678901234567890,` +
		`"i64":-9223372036854775808,"one":1.0,"exp":1e3,"pi":3.25,"f21":1e21,"list":[1,2.5],"zero":-0}`))
	dec.UseNumber()
	var data map[string]any
	if err := dec.Decode(&data); err != nil {
		t.Fatal(err)
	}
	got, e := render(v, data, defaultLimits())
	want := "12345678901234567890 9007199254740993 -12345678901234567890 -9223372036854775808 1 1000 3.25 1000000000000000000000 1,2.5, [] B"
	if e != nil || got.Text != want {
		t.Fatalf("%q %v, want %q", got.Text, e, want)
	}
}

func TestLenientDefaultsFollowDottedNames(t *testing.T) {
	v := storage.TemplateVersion{Name: "t", Subject: "s", Text: "[{{user.name}}|{{user.email}}|{{top}}]"}
	got, e := render(v, map[string]any{"user": map[string]any{"name": "Ann"}}, defaultLimits())
	if e != nil || got.Text != "[Ann||]" {
		t.Fatalf("%q %v", got.Text, e)
	}
	if !strings.Contains(v.Text, "user.email") {
		t.Fatal("unreachable")
	}
}
