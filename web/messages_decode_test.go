package web

import "testing"

// A message body's fields around the one a case adds.
const decodeBase = `"from":"shop@unverified.test","to":"ann@example.com","subject":"s","text":"t"`

// decodeCase is a message body (decodeBase plus extra) and the answer
// expected: 202, or 400 with details.field and details.reason.
type decodeCase struct {
	extra  string
	status int
	field  string
	reason string
}

// checkDecode sends each case as one message and, in a batch, as the
// second message of two (its field then prefixed messages[1].).
func checkDecode(t *testing.T, cases []decodeCase) {
	t.Helper()
	e := newEnv(t, DefaultConfig())
	key := e.newKey(e.acct.ID, nil, true, nil)
	for _, c := range cases {
		body := "{" + decodeBase + "," + c.extra + "}"
		check := func(path, body, field string) {
			t.Helper()
			r := e.do("POST", path, key, body)
			if r.StatusCode != c.status {
				t.Errorf("%s %s: status %d, want %d: %s", path, c.extra, r.StatusCode, c.status, r.body)
				return
			}
			if c.status == 202 {
				return
			}
			d := errDetails(t, r)
			if d["field"] != field || d["reason"] != c.reason {
				t.Errorf("%s %s: field %q reason %q, want %q %q", path, c.extra, d["field"], d["reason"], field, c.reason)
			}
		}
		check("/v1/messages", body, c.field)
		check("/v1/messages/batch", `{"messages":[{`+decodeBase+`},`+body+`]}`, "messages[1]."+c.field)
	}
}

func errDetails(t *testing.T, r reply) map[string]any {
	t.Helper()
	errObj, _ := r.json(t)["error"].(map[string]any)
	d, _ := errObj["details"].(map[string]any)
	if d == nil {
		t.Fatalf("no details: %s", r.body)
	}
	return d
}

// TestMessageNulls holds POST /v1/messages to docs/errors.md's rule: null
// leaves out a list, an object or a time (and the fields sending.md
// lists), and is refused anywhere else, booleans included.
func TestMessageNulls(t *testing.T) {
	left := []string{"cc", "bcc", "reply_to", "html", "headers", "attachments", "template_data", "send_at", "metadata", "tags", "tracking"}
	var cases []decodeCase
	for _, f := range left {
		cases = append(cases, decodeCase{extra: `"` + f + `":null`, status: 202})
	}
	cases = append(cases, decodeCase{extra: `"tracking":{"opens":null,"clicks":null}`, status: 202}) // docs/tracking.md: the account's default
	for _, f := range []string{"unsubscribe", "require_tls", "stream", "campaign_id", "ip_pool", "template_id", "template_version"} {
		cases = append(cases, decodeCase{extra: `"` + f + `":null`, status: 400, field: f, reason: "must not be null"})
	}
	checkDecode(t, cases)
}
