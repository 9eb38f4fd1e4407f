package web

import (
	"bytes"
	"testing"

	"github.com/emersion/go-smtp"

	"mailbolt/app"
	"mailbolt/storage"
)

// receivedIDs are the inboundMessageIds of the email.received events key
// sees.
func (e *env) receivedIDs(key string) []string {
	e.t.Helper()
	var ids []string
	for _, ev := range e.do("GET", "/v1/events?type=email.received&limit=100", key, nil).want(e.t, 200).json(e.t)["data"].([]any) {
		ids = append(ids, ev.(map[string]any)["data"].(map[string]any)["inboundMessageId"].(string))
	}
	return ids
}

// TestInboundModes: inbound domains are the account's (as sending domains
// are), routes have their webhook's mode, and a key sees and changes only
// the routes, and reads only the raw messages, of its own mode. A test key
// cannot delete a domain that live routes use.
func TestInboundModes(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	testKey := e.newKey(e.acct.ID, []string{"*"}, true, nil)
	hookSrv, _ := receiver(t)
	live := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	test := e.do("POST", "/v1/webhooks", testKey, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(e.key, "in.acme.test")
	id := d["id"].(string)
	// The domain is seen by both modes.
	e.do("GET", "/v1/inbound/domains/"+id, testKey, nil).want(t, 200)

	e.do("POST", "/v1/inbound/routes", testKey, map[string]any{"domain_id": id, "pattern": "x", "webhook_id": live["id"]}).want(t, 400, "VALIDATION_ERROR")
	liveRoute := e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": id, "pattern": "support", "webhook_id": live["id"]}).want(t, 201).json(t)
	testRoute := e.do("POST", "/v1/inbound/routes", testKey, map[string]any{"domain_id": id, "pattern": "qa", "webhook_id": test["id"]}).want(t, 201).json(t)
	lr, tr := liveRoute["id"].(string), testRoute["id"].(string)

	e.do("GET", "/v1/inbound/routes/"+lr, testKey, nil).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/inbound/routes/"+tr, e.key, nil).want(t, 404, "NOT_FOUND")
	e.do("DELETE", "/v1/inbound/routes/"+lr, testKey, nil).want(t, 404, "NOT_FOUND")
	for key, want := range map[string]string{e.key: lr, testKey: tr} {
		l := e.do("GET", "/v1/inbound/routes?page=1", key, nil).want(t, 200).json(t)
		data := l["data"].([]any)
		if l["total"] != 1.0 || len(data) != 1 || data[0].(map[string]any)["id"] != want {
			t.Errorf("routes seen: %v, want only %s", l, want)
		}
	}
	e.do("DELETE", "/v1/inbound/domains/"+id, testKey, nil).want(t, 403, "FORBIDDEN")

	// Mail to each route; each key reads only its mode's raw message.
	addr := e.inboundListener(0)
	msg := []byte("From: a@sender.test\r\nSubject: hi\r\n\r\nhello\r\n")
	for _, to := range []string{"support@in.acme.test", "qa@in.acme.test"} {
		if err := sendSMTP(t, addr, "a@sender.test", []string{to}, msg, 0); err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
	}
	liveIDs, testIDs := e.receivedIDs(e.key), e.receivedIDs(testKey)
	if len(liveIDs) != 1 || len(testIDs) != 1 {
		t.Fatalf("events: live %v, test %v", liveIDs, testIDs)
	}
	e.do("GET", "/v1/inbound/messages/"+liveIDs[0]+"/raw", e.key, nil).want(t, 200)
	e.do("GET", "/v1/inbound/messages/"+liveIDs[0]+"/raw", testKey, nil).want(t, 404, "NOT_FOUND")
	e.do("GET", "/v1/inbound/messages/"+testIDs[0]+"/raw", testKey, nil).want(t, 200)
	e.do("GET", "/v1/inbound/messages/"+testIDs[0]+"/raw", e.key, nil).want(t, 404, "NOT_FOUND")

	// Once the live route is gone (by a live key), the test key may
	// delete the domain; its test route goes with it.
	e.do("DELETE", "/v1/inbound/routes/"+lr, e.key, nil).want(t, 204)
	e.do("DELETE", "/v1/inbound/domains/"+id, testKey, nil).want(t, 204)
	e.do("GET", "/v1/inbound/routes/"+tr, testKey, nil).want(t, 404, "NOT_FOUND")
}

// TestInboundRouteGoneBeforeData: when the only recipient's route is
// deleted between RCPT and the end of DATA, nothing is stored, and the
// sender is told so (550 5.1.1), not 250.
func TestInboundRouteGoneBeforeData(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(e.key, "in.acme.test")
	route := e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": d["id"], "pattern": "support", "webhook_id": hook["id"]}).want(t, 201).json(t)
	addr := e.inboundListener(0)

	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mail("a@sender.test", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("support@in.acme.test", nil); err != nil {
		t.Fatal(err)
	}
	e.do("DELETE", "/v1/inbound/routes/"+route["id"].(string), e.key, nil).want(t, 204)
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("From: a@sender.test\r\nSubject: hi\r\n\r\nhello\r\n"))
	if r := smtpReply(w.Close()); r != "550 5.1.1" {
		t.Errorf("a message stored for nobody was answered %q", r)
	}
	if ids := e.receivedIDs(e.key); len(ids) != 0 {
		t.Errorf("events %v", ids)
	}
}

// TestInboundAndReportsInSeparateTransactions: a transaction holds either
// reports to the listener's own addresses or mail for inbound domains; a
// recipient of the other kind is answered 452 4.5.3 (the sender sends it
// again in another transaction), so a 452 or 451 for the inbound mail can
// never make reports already recorded come back.
func TestInboundAndReportsInSeparateTransactions(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(e.key, "in.acme.test")
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": d["id"], "pattern": "*", "webhook_id": hook["id"]}).want(t, 201)
	addr := e.inboundListener(0)
	const own, routed = "fbl@bounces.acme.test", "support@in.acme.test"
	for _, order := range [][2]string{{own, routed}, {routed, own}} {
		c, err := smtp.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Mail("a@sender.test", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Rcpt(order[0], nil); err != nil {
			t.Fatalf("first recipient %s: %v", order[0], err)
		}
		if r := smtpReply(c.Rcpt(order[1], nil)); r != "452 4.5.3" {
			t.Errorf("%s after %s: %q", order[1], order[0], r)
		}
		c.Close()
	}
	// Each kind alone, and two of a kind, are taken.
	if err := sendSMTP(t, addr, "a@sender.test", []string{routed, "sales@in.acme.test"}, []byte("Subject: x\r\n\r\nx\r\n"), 0); err != nil {
		t.Errorf("two inbound recipients: %v", err)
	}
}

// TestInboundStaleClaimMoves: an account whose verified name's token is no
// longer published loses the name to the account that verifies with its
// own token: that domain becomes failed, the claim moves, and mail goes to
// the new holder. While the holder's token is published, the name stays.
func TestInboundStaleClaimMoves(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	first := e.inboundDomain(e.key, "in.acme.test")
	_, key2 := e.account("rival", "enterprise", 100000)
	d2 := e.do("POST", "/v1/inbound/domains", key2, `{"name":"in.acme.test"}`).want(t, 201).json(t)
	token2 := d2["records"].([]any)[1].(map[string]any)["value"].(string)
	e.zone.TXT("_mailbolt.in.acme.test", token2) // both tokens published
	verify := "/v1/inbound/domains/" + d2["id"].(string) + "/verify"
	e.do("POST", verify, key2, nil).want(t, 409, "CONFLICT")

	// The first account's token is removed: only the rival's remains.
	e.zone.Remove("_mailbolt.in.acme.test")
	e.zone.TXT("_mailbolt.in.acme.test", token2)
	if v := e.do("POST", verify, key2, nil).want(t, 200).json(t); v["status"] != "verified" {
		t.Fatalf("the rival with the only published token: %v", v)
	}
	old := e.do("GET", "/v1/inbound/domains/"+first["id"].(string), e.key, nil).want(t, 200).json(t)
	if old["status"] != "failed" || old["records"].([]any)[1].(map[string]any)["status"] != "missing" {
		t.Errorf("the former holder's domain: %v", old)
	}

	// Mail for the name now goes to the rival's routes.
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", key2, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	e.do("POST", "/v1/inbound/routes", key2, map[string]any{"domain_id": d2["id"], "pattern": "*", "webhook_id": hook["id"]}).want(t, 201)
	addr := e.inboundListener(0)
	if err := sendSMTP(t, addr, "a@sender.test", []string{"x@in.acme.test"}, []byte("Subject: x\r\n\r\nx\r\n"), 0); err != nil {
		t.Fatal(err)
	}
	if ids := e.receivedIDs(key2); len(ids) != 1 {
		t.Errorf("the new holder's events: %v", ids)
	}
}

// TestInboundRawStoredOnce: one message to three routed addresses is three
// events and three message records, all pointing at one raw record.
func TestInboundRawStoredOnce(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(e.key, "in.acme.test")
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": d["id"], "pattern": "*", "webhook_id": hook["id"]}).want(t, 201)
	addr := e.inboundListener(0)
	msg := append([]byte("From: a@sender.test\r\nSubject: big\r\n\r\n"), bytes.Repeat([]byte("0123456789abcdef\r\n"), 4096)...)
	if err := sendSMTP(t, addr, "a@sender.test", []string{"a@in.acme.test", "b@in.acme.test", "c@in.acme.test"}, msg, 0); err != nil {
		t.Fatal(err)
	}
	ids := e.receivedIDs(e.key)
	if len(ids) != 3 {
		t.Fatalf("events %v", ids)
	}
	raws := map[string]bool{}
	e.db.View(func(tx *storage.Tx) error {
		for _, id := range ids {
			m, err := tx.InboundMessage(e.acct.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			raws[m.RawID] = true
		}
		return nil
	})
	if len(raws) != 1 {
		t.Errorf("three copies, %d raw records", len(raws))
	}
	for _, id := range ids {
		if r := e.do("GET", "/v1/inbound/messages/"+id+"/raw", e.key, nil).want(t, 200); !bytes.Equal(r.body, msg) {
			t.Errorf("raw of %s: %d bytes", id, len(r.body))
		}
	}
}

// TestInboundSpamJudgesTheEventsBody: the content score judges the bodies
// the event carries. A text/html part with a file name is an attachment in
// the event (html ""); its spam phrase and shortened link must not count.
func TestInboundSpamJudgesTheEventsBody(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(e.key, "in.acme.test")
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": d["id"], "pattern": "*", "webhook_id": hook["id"]}).want(t, 201)
	addr := e.inboundListener(0)
	msg := []byte("From: Ann <ann@sender.test>\r\nTo: x@in.acme.test\r\nSubject: Your order\r\n" +
		"Date: Mon, 02 Mar 2026 10:15:00 +0000\r\nMessage-ID: <1@sender.test>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour order has shipped and will arrive on Monday.\r\n" +
		"--b\r\nContent-Type: text/html; name=\"offer.html\"\r\n\r\n<p>Act now: <a href=\"https://bit.ly/x\">offer</a></p>\r\n" +
		"--b--\r\n")
	if err := sendSMTP(t, addr, "ann@sender.test", []string{"x@in.acme.test"}, msg, 0); err != nil {
		t.Fatal(err)
	}
	evs := e.do("GET", "/v1/events?type=email.received", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	data := evs[0].(map[string]any)["data"].(map[string]any)
	spam := data["spam"].(map[string]any)
	if data["html"] != "" || len(data["attachments"].([]any)) != 1 {
		t.Fatalf("the named HTML part should be an attachment: html %q, attachments %v", data["html"], data["attachments"])
	}
	if spam["score"] != spam["max"] {
		t.Errorf("the score judged a body the event does not show: %v", spam)
	}
}

// TestInboundByteQuota: the raw bytes an account stores per day count too
// (once per message): a free account (100 MiB a day) near its bytes is
// refused a message that would pass them, whole, at DATA, takes one that
// fits, and once there is refused at RCPT.
func TestInboundByteQuota(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	acct, key := e.account("small", "free", 100000)
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(key, "in.small.test")
	e.do("POST", "/v1/inbound/routes", key, map[string]any{"domain_id": d["id"], "pattern": "*", "webhook_id": hook["id"]}).want(t, 201)
	addr := e.inboundListener(0)
	quota := app.InboundByteQuota(acct)
	day := uint32(e.clock.Now().Unix() / 86400)
	if err := e.db.Update(func(tx *storage.Tx) error {
		return tx.AddInboundReceived(acct.ID, day, storage.InboundUsage{Bytes: quota - 1000})
	}); err != nil {
		t.Fatal(err)
	}
	msg := func(n int) []byte {
		b := append([]byte("Subject: x\r\n\r\n"), bytes.Repeat([]byte("x"), n-16)...)
		return append(b, "\r\n"...)
	}
	// Three copies of 600 bytes are 600 bytes stored: they fit.
	if err := sendSMTP(t, addr, "a@sender.test", []string{"a@in.small.test", "b@in.small.test", "c@in.small.test"}, msg(600), 0); err != nil {
		t.Fatalf("600 bytes, 1000 left: %v", err)
	}
	if r := smtpReply(sendSMTP(t, addr, "a@sender.test", []string{"a@in.small.test"}, msg(401), 0)); r != "452 4.2.2" {
		t.Fatalf("401 bytes, 400 left: %q", r)
	}
	if err := sendSMTP(t, addr, "a@sender.test", []string{"a@in.small.test"}, msg(400), 0); err != nil {
		t.Fatalf("400 bytes, 400 left: %v", err)
	}
	if r := smtpReply(sendSMTP(t, addr, "a@sender.test", []string{"a@in.small.test"}, msg(20), 0)); r != "452 4.2.2" {
		t.Fatalf("at the quota, RCPT: %q", r)
	}
	e.db.View(func(tx *storage.Tx) error {
		if u := tx.InboundReceived(acct.ID, day); u.Bytes != quota || u.Messages != 4 {
			t.Errorf("usage %+v, want %d bytes and 4 messages", u, quota)
		}
		return nil
	})
}
