package web

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/mta"
	"mailbolt/mta/smtptest"
)

// The raw source of a message (GET /v1/messages/{id}/raw) against a live
// server delivering over SMTP to a sink: for a signed message to two
// recipients with tracking and List-Unsubscribe on, each recipient's raw
// source is byte for byte what the sink received for that recipient, and
// before the first attempt it is the same bytes without the signature.
func TestMessageRawEqualsWhatTheSinkReceived(t *testing.T) {
	e, sink := newDeliveringEnv(t, DefaultConfig(), smtptest.Options{}, func(o *app.Options, mo *mta.Options) {
		o.PublicURL = "https://mail.acme.test"
	})

	sent := e.do("POST", "/v1/messages", e.key, map[string]any{
		"from": "News <news@acme.test>", "to": []string{"Ann <ann@dest.test>"}, "cc": []string{"bob@dest.test"},
		"subject": "November", "html": trackedHTML, "text": "Hi\nthere", "stream": "broadcast",
		"attachments": []map[string]string{{"filename": "a.txt", "content": "aGVsbG8="}},
		"tracking":    map[string]bool{"opens": true, "clicks": true}}).want(t, 202).json(t)
	id := sent["id"].(string)

	// Before the first attempt (the workers are not running yet): the
	// message as it will be built, without a signature.
	before := map[string][]byte{}
	for _, rcpt := range []string{"ann@dest.test", "BOB@dest.test"} {
		r := e.do("GET", "/v1/messages/"+id+"/raw?recipient="+rcpt, e.key, nil).want(t, 200)
		if r.Header.Get("Content-Type") != "message/rfc822" || r.Header.Get("Mailbolt-DKIM-Signed") != "false" ||
			r.Header.Get("Mailbolt-Recipient") != strings.ToLower(rcpt) || bytes.HasPrefix(r.body, []byte("DKIM-Signature:")) {
			t.Fatalf("before the first attempt: %v\n%s", r.Header, r.body)
		}
		before[strings.ToLower(rcpt)] = r.body
	}
	if bytes.Equal(before["ann@dest.test"], before["bob@dest.test"]) {
		t.Fatal("both recipients' sources are the same: their List-Unsubscribe links should differ")
	}

	e.runWorkers()
	deadline := time.Now().Add(15 * time.Second)
	for len(sink.Messages()) < 2 || e.do("GET", "/v1/messages/"+id, e.key, nil).want(t, 200).json(t)["status"] != "delivered" {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %d copies at the sink", len(sink.Messages()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := sink.Messages()
	if len(got) != 2 {
		t.Fatalf("%d copies at the sink, want one per recipient", len(got))
	}
	for _, m := range got {
		rcpt := m.To[0]
		r := e.do("GET", "/v1/messages/"+id+"/raw?recipient="+rcpt, e.key, nil).want(t, 200)
		if !bytes.Equal(r.body, m.Data) {
			t.Fatalf("raw source for %s differs from what the sink received:\n%s\n---- sink ----\n%s", rcpt, r.body, m.Data)
		}
		if r.Header.Get("Mailbolt-DKIM-Signed") != "true" || r.Header.Get("Mailbolt-Envelope-From") != m.From {
			t.Fatalf("headers %v; the sink's MAIL FROM was %s", r.Header, m.From)
		}
		sig, rest, ok := cutField(m.Data)
		if !ok || !strings.HasPrefix(sig, "DKIM-Signature:") || !strings.Contains(sig, "d=acme.test") {
			t.Fatalf("the sink's copy does not start with a DKIM-Signature:\n%s", m.Data)
		}
		if !bytes.Equal(rest, before[rcpt]) {
			t.Fatalf("the copy sent to %s is not the source answered before the attempt plus the signature:\n%s\n---- before ----\n%s", rcpt, rest, before[rcpt])
		}
	}

	// recipient is required with several recipients; an address that is
	// not one of them is 400 too; another account's key sees nothing.
	for _, q := range []string{"", "?recipient=", "?recipient=carol@dest.test"} {
		r := e.do("GET", "/v1/messages/"+id+"/raw"+q, e.key, nil).want(t, 400, "VALIDATION_ERROR")
		if d, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["field"] != "recipient" {
			t.Fatalf("%q: details %v", q, d)
		}
	}
	_, otherKey := e.account("other", "enterprise", 100000)
	e.do("GET", "/v1/messages/"+id+"/raw?recipient=ann@dest.test", otherKey, nil).want(t, 404, "NOT_FOUND")
	writeOnly := e.newKey(e.acct.ID, []string{"messages:write"}, false, nil)
	e.do("GET", "/v1/messages/"+id+"/raw?recipient=ann@dest.test", writeOnly, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	readOnly := e.newKey(e.acct.ID, []string{"messages:read"}, false, nil)
	e.do("GET", "/v1/messages/"+id+"/raw?recipient=ann@dest.test", readOnly, nil).want(t, 200)

	// One recipient: recipient may be left out. A test-mode message has
	// no signature, ever.
	testKey := e.newKey(e.acct.ID, nil, true, nil)
	one := e.do("POST", "/v1/messages", testKey, map[string]any{"from": "news@acme.test", "to": []string{"dan@dest.test"},
		"subject": "Hi", "text": "Hi"}).want(t, 202).json(t)["id"].(string)
	r := e.do("GET", "/v1/messages/"+one+"/raw", testKey, nil).want(t, 200)
	if r.Header.Get("Mailbolt-Recipient") != "dan@dest.test" || r.Header.Get("Mailbolt-DKIM-Signed") != "false" ||
		!bytes.Contains(r.body, []byte("Subject: Hi\r\n")) {
		t.Fatalf("single recipient: %v\n%s", r.Header, r.body)
	}
	e.do("GET", "/v1/messages/"+one+"/raw", e.key, nil).want(t, 404, "NOT_FOUND") // the other mode
}

// cutField splits the first header field (with its folded lines) off a
// message.
func cutField(data []byte) (string, []byte, bool) {
	for i := 0; i+2 < len(data); i++ {
		if data[i] == '\r' && data[i+1] == '\n' && data[i+2] != ' ' && data[i+2] != '\t' {
			return string(data[:i+2]), data[i+2:], true
		}
	}
	return "", nil, false
}
