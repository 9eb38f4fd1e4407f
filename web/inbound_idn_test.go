package web

import (
	"net/url"
	"slices"
	"testing"
)

// TestInboundIDNRecipient: mail to either spelling of an internationalised
// inbound domain, in any case, takes the one route, and the recipient is
// recorded and shown in the one form addresses take (lower case, the
// domain in A-labels); an address whose domain is not a valid IDN is
// refused at RCPT with 553 5.1.3, whether it looks like an inbound
// domain's or a bounce domain's, and nothing is stored.
func TestInboundIDNRecipient(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(e.key, "in.exämple.test")
	if d["name"] != "in.xn--exmple-cua.test" {
		t.Fatalf("domain %v", d)
	}
	route := e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": d["id"], "pattern": "support", "webhook_id": hook["id"]}).want(t, 201).json(t)
	addr := e.inboundListener(0)
	msg := []byte("From: a@sender.test\r\nSubject: hi\r\n\r\nhello\r\n")
	for _, to := range []string{"support@in.exämple.test", "Support@IN.XN--EXMPLE-CUA.test", "support+7@in.EXÄMPLE.test"} {
		if err := sendSMTP(t, addr, "a@sender.test", []string{to}, msg, 0); err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
	}
	var rcpts []string
	for _, ev := range e.do("GET", "/v1/events?type=email.received&limit=100", e.key, nil).want(t, 200).json(t)["data"].([]any) {
		data := ev.(map[string]any)["data"].(map[string]any)
		if data["routeId"] != route["id"] {
			t.Errorf("event for route %v, want %v", data["routeId"], route["id"])
		}
		rcpts = append(rcpts, data["envelope"].(map[string]any)["rcptTo"].(string))
	}
	slices.Sort(rcpts)
	if want := []string{"support+7@in.xn--exmple-cua.test", "support@in.xn--exmple-cua.test", "support@in.xn--exmple-cua.test"}; !slices.Equal(rcpts, want) {
		t.Errorf("rcptTo %v, want %v", rcpts, want)
	}
	// The events are found by the recipient in either spelling.
	for _, q := range []string{"support@in.exämple.test", "support@in.xn--exmple-cua.test"} {
		l := e.do("GET", "/v1/events?type=email.received&recipient="+url.QueryEscape(q), e.key, nil).want(t, 200).json(t)["data"].([]any)
		if len(l) != 2 {
			t.Errorf("recipient=%s: %d events, want 2", q, len(l))
		}
	}

	for _, to := range []string{"support@in.-ämple.test", "fbl@bounces.-ämple.test", "support@in.ex\u0301\u200dample.test"} {
		if r := smtpReply(sendSMTP(t, addr, "a@sender.test", []string{to}, msg, 0)); r != "553 5.1.3" {
			t.Errorf("to %s: %q, want 553 5.1.3", to, r)
		}
	}
	if ids := e.receivedIDs(e.key); len(ids) != 3 {
		t.Errorf("%d messages stored, want 3", len(ids))
	}
}
