package app

import (
	"testing"

	"mailbolt/storage"
)

func TestValidateAlias(t *testing.T) {
	for alias, ok := range map[string]bool{
		"welcome": true, "password-reset_2": true, "a": true, "0123456789": true,
		"": false, "Welcome": false, "a b": false, "a.b": false, "é": false,
		"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b": false, // a UUID would read as an id
		"0190a1b2c3d47e5f8a9b0c1d2e3f4a5b":     false, // so would its 32-digit form
		"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5":  true,
	} {
		if got := ValidateAlias(alias) == nil; got != ok {
			t.Errorf("%q: accepted %v, want %v", alias, got, ok)
		}
	}
	if e := ValidateAlias(string(make([]byte, 65))); e == nil {
		t.Error("65 bytes accepted")
	}
}

// TestTemplateAliases: created with an alias, a template is read, updated,
// rendered and sent by it; aliases are unique per account, and an update
// moves or clears one and frees the old.
func TestTemplateAliases(t *testing.T) {
	a, _ := newTestApp(t)
	p := keyIn("acct")
	tpl, _, e := a.CreateTemplate(p, TemplateInput{Name: ptr("Welcome"), Alias: ptr("welcome"), Subject: ptr("Hi {{name}}"), Text: ptr("Hello")})
	if e != nil || tpl.Alias != "welcome" {
		t.Fatalf("create: %+v %v", tpl, e)
	}
	if got, _, e := a.Template(p, "welcome", 0); e != nil || got.ID != tpl.ID {
		t.Fatalf("by alias: %+v %v", got, e)
	}
	if r, e := a.RenderTemplate(p, "welcome", 0, map[string]any{"name": "Ann"}); e != nil || r.Subject != "Hi Ann" {
		t.Fatalf("render by alias: %+v %v", r, e)
	}
	if _, _, total, e := a.TemplateVersions(p, "welcome", storage.ListOptions{Limit: 10}); e != nil || total != 1 {
		t.Fatalf("versions by alias: %d %v", total, e)
	}
	c, ref, e := a.content("acct", MessageInput{TemplateID: "welcome", TemplateData: map[string]any{"name": "Bo"}})
	if e != nil || c.Subject != "Hi Bo" || ref == nil || ref.ID != tpl.ID {
		t.Fatalf("a message by alias: %+v %+v %v", c, ref, e)
	}

	_, _, e = a.CreateTemplate(p, TemplateInput{Name: ptr("Dup"), Alias: ptr("welcome"), Subject: ptr("s"), Text: ptr("t")})
	if e == nil || AsError(e).Code != CodeConflict {
		t.Fatalf("a taken alias: %v", e)
	}
	if _, _, e := a.CreateTemplate(keyIn("other"), TemplateInput{Name: ptr("Theirs"), Alias: ptr("welcome"), Subject: ptr("s"), Text: ptr("t")}); e != nil {
		t.Fatalf("another account's alias: %v", e)
	}
	if _, _, e := a.Template(keyIn("other"), tpl.ID, 0); e == nil || AsError(e).Status() != 404 {
		t.Error("cross-tenant read by id")
	}
	_, _, e = a.CreateTemplate(p, TemplateInput{Name: ptr("U"), Alias: ptr("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), Subject: ptr("s"), Text: ptr("t")})
	if e == nil || AsError(e).Code != CodeValidation || AsError(e).Details["field"] != "alias" {
		t.Fatalf("a UUID as alias: %v", e)
	}

	moved, _, e := a.UpdateTemplate(p, "welcome", TemplateInput{Alias: ptr("hello")})
	if e != nil || moved.Alias != "hello" || moved.ID != tpl.ID {
		t.Fatalf("move: %+v %v", moved, e)
	}
	if _, _, e := a.Template(p, "welcome", 0); e == nil || AsError(e).Status() != 404 {
		t.Errorf("the old alias still resolves: %v", e)
	}
	if _, _, e := a.content("acct", MessageInput{TemplateID: "welcome"}); e == nil || AsError(e).Code != CodeInvalidTemplate {
		t.Errorf("sending by the freed alias: %v", e)
	}
	dup, _, e := a.CreateTemplate(p, TemplateInput{Name: ptr("Dup"), Alias: ptr("welcome"), Subject: ptr("s"), Text: ptr("t")})
	if e != nil {
		t.Fatalf("the freed alias is not reusable: %v", e)
	}
	if _, _, e := a.UpdateTemplate(p, dup.ID, TemplateInput{Alias: ptr("hello")}); e == nil || AsError(e).Code != CodeConflict {
		t.Errorf("moving onto a taken alias: %v", e)
	}
	if kept, _, e := a.UpdateTemplate(p, "hello", TemplateInput{Subject: ptr("Hey")}); e != nil || kept.Alias != "hello" {
		t.Errorf("an update without alias: %+v %v", kept, e)
	}
	cleared, _, e := a.UpdateTemplate(p, tpl.ID, TemplateInput{Alias: ptr("")})
	if e != nil || cleared.Alias != "" {
		t.Fatalf("clear: %+v %v", cleared, e)
	}
	if _, _, e := a.Template(p, "hello", 0); e == nil || AsError(e).Status() != 404 {
		t.Errorf("a cleared alias still resolves: %v", e)
	}
}
