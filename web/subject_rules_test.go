package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSubjectRulesAsDocumented holds POST /v1/messages to the subject's
// rules as docs/sending.md states them: at most 998 bytes and no CR, LF
// or NUL (field subject); as header text, no run of more than 900 bytes
// without a space or tab and no other control character (field message).
// A 998-byte subject without a space is refused, one with spaces taken.
func TestSubjectRulesAsDocumented(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	sandbox := e.newKey(e.acct.ID, []string{"*"}, true, nil)
	send := func(subject string) reply {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"from": "a@acme.test", "to": "b@example.com", "subject": subject, "text": "hello"})
		return e.do("POST", "/v1/messages", sandbox, string(body))
	}
	for _, c := range []struct {
		name, subject, field string
	}{
		{"998 bytes with spaces", strings.Repeat("a", 900) + " " + strings.Repeat("b", 97), ""},
		{"a run of 900 bytes", strings.Repeat("a", 900), ""},
		{"a run of 900 bytes in 450 é", strings.Repeat("é", 450), ""},
		{"tabs break runs", strings.Repeat("a", 900) + "\t" + strings.Repeat("b", 97), ""},
		{"999 bytes", strings.Repeat("a b ", 249) + "abc", "subject"},
		{"LF", "a\nb", "subject"},
		{"NUL", "a\x00b", "subject"},
		{"998 bytes without a space", strings.Repeat("a", 998), "message"},
		{"a run of 901 bytes", strings.Repeat("a", 901), "message"},
		{"a run of 902 bytes in 451 é", strings.Repeat("é", 451), "message"},
		{"another control character", "a\x01b", "message"},
	} {
		r := send(c.subject)
		if c.field == "" {
			if r.StatusCode != 202 {
				t.Errorf("%s: %d %s, want 202", c.name, r.StatusCode, r.body)
			}
			continue
		}
		if r.StatusCode != 400 || r.code(t) != "VALIDATION_ERROR" {
			t.Errorf("%s: %d %s, want 400 VALIDATION_ERROR", c.name, r.StatusCode, r.body)
			continue
		}
		if d := errDetails(t, r); d["field"] != c.field {
			t.Errorf("%s: field %v, want %s (%v)", c.name, d["field"], c.field, d["reason"])
		}
	}
}
