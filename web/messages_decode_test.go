package web

import (
	"fmt"
	"strings"
	"testing"
)

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
// second message of two (its field then prefixed messages[1]., and
// details.index 1).
func checkDecode(t *testing.T, cases []decodeCase) {
	t.Helper()
	e := newEnv(t, DefaultConfig())
	key := e.newKey(e.acct.ID, nil, true, nil)
	for _, c := range cases {
		body := "{" + decodeBase + "," + c.extra + "}"
		check := func(path, body, field string, index any) {
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
			if d["field"] != field || d["reason"] != c.reason || d["index"] != index {
				t.Errorf("%s %s: field %q reason %q index %v, want %q %q %v", path, c.extra, d["field"], d["reason"], d["index"], field, c.reason, index)
			}
		}
		check("/v1/messages", body, c.field, nil)
		check("/v1/messages/batch", `{"messages":[{`+decodeBase+`},`+body+`]}`, "messages[1]."+c.field, 1.0)
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
// lists), and is refused anywhere else, booleans and list items included.
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
	// A null item of a list of strings is refused as null, not taken as
	// the "" encoding/json would make of it and refused by the item's rule.
	cases = append(cases,
		decodeCase{`"cc":["ann@example.com",null]`, 400, "cc[1]", "must not be null"},
		decodeCase{`"tags":[null]`, 400, "tags[0]", "must not be null"},
		decodeCase{`"tags":["a",null]`, 400, "tags[1]", "must not be null"})
	checkDecode(t, cases)
}

// TestMessageWrongTypeNamesTheField: a wrong type inside a nested value is
// named as docs/errors.md says, an item by its index and an entry by its
// name, with the reasons of the top-level fields.
func TestMessageWrongTypeNamesTheField(t *testing.T) {
	checkDecode(t, []decodeCase{
		{`"tracking":true`, 400, "tracking", "must be of type object, not bool"},
		{`"tracking":[]`, 400, "tracking", "must be of type object, not array"},
		{`"tracking":{"opens":"yes"}`, 400, "tracking.opens", "must be of type boolean, not string"},
		{`"attachments":[{"filename":5,"content":""}]`, 400, "attachments[0].filename", "must be of type string, not number"},
		{`"attachments":[{"filename":"a","content":""},{"filename":"b","content":"","bogus":1}]`, 400, "attachments[1].bogus", "unknown field"},
		{`"attachments":[{"filename":"a","content":"","filename":"b"}]`, 400, "attachments[0].filename", "appears more than once"},
		{`"attachments":[null]`, 400, "attachments[0]", "must not be null"},
		{`"attachments":["a.txt"]`, 400, "attachments[0]", "must be of type object, not string"},
		{`"attachments":{}`, 400, "attachments", "must be of type array, not object"},
		{`"tags":["a",5]`, 400, "tags[1]", "must be of type string, not number"},
		{`"tags":"a"`, 400, "tags", "must be of type array, not string"},
		{`"cc":["b@example.com",{}]`, 400, "cc[1]", "must be of type string, not object"},
		{`"headers":{"X-Foo":5}`, 400, "headers.X-Foo", "must be of type string, not number"},
		{`"headers":{"X-A":"1","X-B":true}`, 400, "headers.X-B", "must be of type string, not bool"},
		{`"headers":[]`, 400, "headers", "must be of type object, not array"},
		{`"send_at":123`, 400, "send_at", "must be an RFC 3339 time such as 2027-01-01T00:00:00Z"},
		{`"send_at":"tomorrow"`, 400, "send_at", "must be an RFC 3339 time such as 2027-01-01T00:00:00Z"},
		{`"template_version":"1"`, 400, "template_version", "must be of type integer, not string"},
		{`"require_tls":"true"`, 400, "require_tls", "must be of type boolean, not string"},
	})
}

// TestMessageRepeatedNames: a name repeated inside headers or metadata (at
// any depth) is refused as a repeated field is, not merged with a value
// lost.
func TestMessageRepeatedNames(t *testing.T) {
	checkDecode(t, []decodeCase{
		{`"headers":{"X-A":"1","X-A":"2"}`, 400, "headers.X-A", "appears more than once"},
		{`"headers":{"X-A":"1","X-B":"2"}`, 202, "", ""},
		{`"headers":{"X-Tag":"a","x-tag":"b"}`, 400, "headers.x-tag", "appears more than once (header names are case-insensitive)"},
		{`"headers":{"X-A":"a:b\\\":\"c","X-B":"2"}`, 202, "", ""},
		{`"headers":{"X-A":"1","X-A":"1"}`, 400, "headers.X-A", "appears more than once"},
		// More names than a message may have go the linear way: a repeat
		// is still found, and otherwise the count refuses them.
		{`"headers":{` + manyHeaders(60) + `,"x-h0":"again"}`, 400, "headers.x-h0", "appears more than once (header names are case-insensitive)"},
		{`"headers":{` + manyHeaders(60) + `}`, 400, "headers", "at most 50 headers"},
		{`"headers":{"X-A":null}`, 400, "headers.X-A", "must not be null"},
		{`"metadata":{"a":1,"a":2}`, 400, "metadata.a", "appears more than once"},
		{`"metadata":{"a":{"b":1,"b":1}}`, 400, "metadata.a.b", "appears more than once"},
		{`"metadata":{"a":[{"b":1},{"b":1,"c":{"d":1,"d":1}}]}`, 400, "metadata.a[1].c.d", "appears more than once"},
		{`"metadata":{"a":{"b":1},"b":{"a":1}}`, 202, "", ""},
		{`"tracking":{"opens":true,"opens":false}`, 400, "tracking.opens", "appears more than once"},
		{`"template_data":{"name":"a","name":"b"}`, 400, "template_data.name", "appears more than once"},
		{`"template_data":{"a":{"b":1},"c":[{"d":1,"d":2}]}`, 400, "template_data.c[0].d", "appears more than once"},
	})
}

// TestMessageInlineTemplateParseError: a message's inline template that
// does not parse answers as POST /v1/templates does (part, reason, line),
// and in a batch names the message like every other batch error.
func TestMessageInlineTemplateParseError(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	key := e.newKey(e.acct.ID, nil, true, nil)
	const msg = `"from":"shop@unverified.test","to":"ann@example.com","text":"x","template_data":{},"subject":"{{#a}}"`
	want := e.do("POST", "/v1/templates", key, `{"name":"n","text":"x","subject":"{{#a}}"}`).want(t, 400, "INVALID_TEMPLATE")
	wantErr := want.json(t)["error"].(map[string]any)
	wantDetails := wantErr["details"].(map[string]any)
	if wantDetails["reason"] != "section_no_closing_tag" || wantDetails["line"] != 1.0 {
		t.Fatalf("the templates route: %s", want.body)
	}

	r := e.do("POST", "/v1/messages", key, "{"+msg+"}").want(t, 400, "INVALID_TEMPLATE")
	got := r.json(t)["error"].(map[string]any)
	d := got["details"].(map[string]any)
	for _, k := range []string{"part", "reason", "line"} {
		if d[k] != wantDetails[k] {
			t.Errorf("details.%s = %v, want %v: %s", k, d[k], wantDetails[k], r.body)
		}
	}
	if got["message"] != wantErr["message"] || d["field"] != "subject" {
		t.Errorf("message %q field %v, want %q and subject", got["message"], d["field"], wantErr["message"])
	}

	r = e.do("POST", "/v1/messages/batch", key, `{"messages":[{`+decodeBase+`},{`+msg+`}]}`).want(t, 400, "INVALID_TEMPLATE")
	got = r.json(t)["error"].(map[string]any)
	d = got["details"].(map[string]any)
	if d["field"] != "messages[1].subject" || d["index"] != 1.0 || d["part"] != "subject" || d["reason"] != "section_no_closing_tag" || d["line"] != 1.0 ||
		got["message"] != "messages[1].subject: "+wantErr["message"].(string) {
		t.Errorf("batch: %s", r.body)
	}

	// An unknown template_id in a batch: its message is placed too.
	r = e.do("POST", "/v1/messages/batch", key, `{"messages":[{"from":"shop@unverified.test","to":"ann@example.com","template_id":"nope"}]}`).want(t, 400, "INVALID_TEMPLATE")
	if m := r.json(t)["error"].(map[string]any)["message"].(string); !strings.HasPrefix(m, "messages[0].template_id: ") {
		t.Errorf("unknown template in a batch: %s", r.body)
	}
}

// TestBatchSizeErrors: an empty batch and one over the plan's size are
// validation errors of the usual form, field messages with a reason, and
// both give the plan's batch size in details.limit.
func TestBatchSizeErrors(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	free, _ := e.account("small", "free", 100000)
	key := e.newKey(free.ID, nil, true, nil)
	big := "{" + decodeBase + "}" + strings.Repeat(",{"+decodeBase+"}", 100)
	for _, c := range []struct{ body, reason string }{
		{`{"messages":[]}`, "must hold at least one message (and at most 100 on the free plan)"},
		{`{"messages":[` + big + `]}`, "must hold at most 100 messages on the free plan (got 101)"},
		// The size is checked before the messages are read: a bad one past
		// the limit does not hide it.
		{`{"messages":[` + big + `,{"bogus":1}]}`, "must hold at most 100 messages on the free plan (got 102)"},
	} {
		r := e.do("POST", "/v1/messages/batch", key, c.body).want(t, 400, "VALIDATION_ERROR")
		got := r.json(t)["error"].(map[string]any)
		d := got["details"].(map[string]any)
		if d["field"] != "messages" || d["reason"] != c.reason || d["limit"] != 100.0 || got["message"] != "messages: "+c.reason {
			t.Errorf("%.40s…: %s", c.body, r.body)
		}
	}
	// An item that is not an object is named as the item.
	for _, item := range []string{"1", "null", `"x"`, "[]"} {
		r := e.do("POST", "/v1/messages/batch", key, `{"messages":[{`+decodeBase+`},`+item+`]}`).want(t, 400, "VALIDATION_ERROR")
		if d := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["field"] != "messages[1]" || d["index"] != 1.0 {
			t.Errorf("batch item %s: %s", item, r.body)
		}
	}
}

// manyHeaders is n distinct header fields, X-H0 to X-H<n-1>, without the
// braces.
func manyHeaders(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"X-H%d":"v"`, i)
	}
	return b.String()
}

// TestMessageBadText: invalid UTF-8 and a \u escape of half a surrogate
// pair are refused naming the field (encoding/json would store U+FFFD in
// their place); pairs and escaped backslashes are text like any other.
func TestMessageBadText(t *testing.T) {
	lone := func(esc string) string {
		return `must not contain a lone UTF-16 surrogate (` + esc + `): a character above U+FFFF is sent as UTF-8 or as a pair of escapes such as \ud83d\ude00`
	}
	checkDecode(t, []decodeCase{
		{`"reply_to":"\ud800@example.com"`, 400, "reply_to", lone(`\ud800`)},
		{"\"campaign_id\":\"spring\xff\xfe\"", 400, "campaign_id", "must be valid UTF-8"},
		{`"tags":["a","b\uDFFF"]`, 400, "tags[1]", lone(`\uDFFF`)},
		{`"attachments":[{"filename":"\ud83d.txt","content":""}]`, 400, "attachments[0].filename", lone(`\ud83d`)},
		{`"headers":{"X-A":"\ud800\u0041"}`, 400, "headers.X-A", lone(`\ud800`)},
		{"\"metadata\":{\"a\":{\"b\":\"\xc3\"}}", 400, "metadata.a.b", "must be valid UTF-8"},
		{`"template_data":{"x":["\udc00"]}`, 400, "template_data.x[0]", lone(`\udc00`)},
		{`"tags":["\ud83d\ude00","\\ud800"]`, 202, "", ""},
	})
}

// TestMessageBadSubjectNotStored is the audit's case through the handler:
// a subject "\ud800", or with the raw bytes FF FE, is 400
// VALIDATION_ERROR on subject, and no message is stored.
func TestMessageBadSubjectNotStored(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	key := e.newKey(e.acct.ID, nil, true, nil)
	for _, subject := range []string{`\ud800`, "x\xff\xfe"} {
		r := e.do("POST", "/v1/messages", key, `{"from":"shop@unverified.test","to":"ann@example.com","subject":"`+subject+`","text":"t"}`).want(t, 400, "VALIDATION_ERROR")
		if d := errDetails(t, r); d["field"] != "subject" {
			t.Errorf("subject %q: details %v, want field subject", subject, d)
		}
	}
	if list := e.do("GET", "/v1/messages", key, nil).want(t, 200).json(t)["data"].([]any); len(list) != 0 {
		t.Fatalf("a refused message was stored: %v", list)
	}
}

// TestMessageNumberOutOfRange: a number too large for its field, or in
// metadata or template_data too large for a double, is named with
// "number out of range", not as a wrong type or a non-object.
func TestMessageNumberOutOfRange(t *testing.T) {
	checkDecode(t, []decodeCase{
		{`"metadata":{"a":1e400}`, 400, "metadata.a", "number out of range"},
		{`"metadata":{"a":{"b":[1,-1e999]}}`, 400, "metadata.a.b[1]", "number out of range"},
		{`"template_data":{"n":1e400}`, 400, "template_data.n", "number out of range"},
		{`"template_version":99999999999999999999`, 400, "template_version", "number out of range"},
		{`"template_version":1.5`, 400, "template_version", "must be of type integer, not number 1.5"},
		{`"template_data":5`, 400, "template_data", "must be of type object, not number"},
		{`"metadata":{"a":1e-400,"b":"1e400","c":12345678901234567890}`, 202, "", ""},
	})
}
