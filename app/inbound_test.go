package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dkim"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// returnPaths maps each recipient of m to the envelope sender (MAIL FROM)
// its copy left with, as the sink received it; every transaction must
// carry one recipient.
func (e *sendEnv) returnPaths(m storage.Message) map[string]string {
	e.t.Helper()
	hex := strings.ReplaceAll(m.ID, "-", "")
	out := map[string]string{}
	for _, got := range e.sink.Messages() {
		if !strings.Contains(got.From, hex) {
			continue
		}
		if len(got.To) != 1 {
			e.t.Fatalf("one envelope for %d recipients (%v): a return path must name one recipient", len(got.To), got.To)
		}
		out[got.To[0]] = got.From
	}
	return out
}

// withReturnPath gives the message a feedback report returns a
// Return-Path field.
func withReturnPath(arf []byte, verp string) []byte {
	return bytes.Replace(arf, []byte("\nDKIM-Signature: "), []byte("\nReturn-Path: <"+verp+">\nDKIM-Signature: "), 1)
}

// One SMTP transaction per recipient, each with its own return path that
// names the message and the recipient under a MAC, within RFC 5321's 64
// octets; without per-recipient List-Unsubscribe links, the message is
// signed once for all of them.
func TestOneEnvelopePerRecipient(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test"}, Cc: []string{"bob@dest.test"},
		Bcc: []string{"carl@dest.test"}, Subject: text("s"), Text: text("t"), Unsubscribe: new(false)})
	e.drain()
	got := e.sink.Messages()
	if len(got) != 3 {
		t.Fatalf("%d transactions at the sink, want one per recipient", len(got))
	}
	for _, g := range got {
		i := recipientIndexOf(m, g.To[0])
		if want := queue.ReturnPath(e.app.returnPathKey, m, i); len(g.To) != 1 || g.From != want {
			t.Errorf("envelope %s → %v; want %s → [%s]", g.From, g.To, want, m.Recipients[i].Email)
		}
		if local, _, _ := strings.Cut(g.From, "@"); len(local) > 64 {
			t.Errorf("local part of %s is %d octets", g.From, len(local))
		}
		if !bytes.Equal(g.Data, got[0].Data) {
			t.Errorf("the copy for %v differs from the first: one signature per message", g.To)
		}
	}
	if st := e.message(e.live, m.ID); st.Status != StatusDelivered {
		t.Errorf("message %s", st.Status)
	}
}

func recipientIndexOf(m storage.Message, email string) int {
	for i, r := range m.Recipients {
		if r.Email == email {
			return i
		}
	}
	return -1
}

// The finding of issue 13: recipient ann of a message to ann and bob sent
// a DSN for bob to the return path she saw and got bob bounced and
// suppressed. Her return path now speaks for her alone.
func TestForgedDSNForAnotherRecipientIsIgnored(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test", "bob@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	ann := e.returnPaths(m)["ann@dest.test"]
	forged := fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "bob@dest.test",
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com", ann)
	if err := sendPlain(addr, "", ann, forged); err != nil {
		t.Fatal(err)
	}
	st := e.message(e.live, m.ID)
	if bob := st.Recipients[recipientIndexOf(m, "bob@dest.test")]; bob.Status != StatusDelivered {
		t.Fatalf("a DSN at ann's return path bounced bob: %+v", bob)
	}
	if _, ok := e.suppressed("bob@dest.test"); ok {
		t.Fatal("bob suppressed by ann's DSN")
	}
	for _, ev := range e.eventData(e.live, m.ID, EventBounced) {
		if ev["to"] != "ann@dest.test" {
			t.Errorf("bounce event for %v", ev["to"])
		}
	}
}

// RCPT to a bounce address with a missing or wrong MAC is refused; one
// whose case changed on the way is the same address.
func TestBounceAddressMAC(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test", "bob@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	paths := e.returnPaths(m)
	ann, bob := paths["ann@dest.test"], paths["bob@dest.test"]
	local, domain, _ := strings.Cut(ann, "@")
	hex, _, _ := strings.Cut(local, ".")
	mac := local[strings.LastIndexByte(local, '.')+1:]
	flipped := "a"
	if mac[0] == 'a' {
		flipped = "b"
	}
	for name, rcpt := range map[string]string{
		"wrong MAC":               hex + ".0." + flipped + mac[1:] + "@" + domain,
		"no MAC":                  hex + ".0@" + domain,
		"old form, sent after":    hex + "@" + domain,
		"ann's MAC for bob":       hex + ".1." + mac + "@" + domain,
		"another bounces domain":  local + "@bounces.evil.test",
		"short MAC":               hex + ".0." + mac[:16] + "@" + domain,
		"an unsigned other local": "bounce@" + domain,
	} {
		dsn := fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "ann@dest.test")
		if err := sendPlain(addr, "", rcpt, dsn); err == nil || !strings.Contains(err.Error(), "550") {
			t.Errorf("%s (%s): %v, want 550", name, rcpt, err)
		}
	}
	if st := e.message(e.live, m.ID); st.Recipients[0].Status != StatusDelivered || st.Recipients[1].Status != StatusDelivered {
		t.Fatalf("refused mail changed the message: %+v", st.Recipients)
	}
	// Upper case on the way (some MTAs do): still bob's address.
	dsn := fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "bob@dest.test")
	if err := sendPlain(addr, "", strings.ToUpper(bob), dsn); err != nil {
		t.Fatal(err)
	}
	if st := e.message(e.live, m.ID); st.Recipients[1].Status != StatusBounced || st.Recipients[0].Status != StatusDelivered {
		t.Fatalf("after bob's DSN: %+v", st.Recipients)
	}
}

// The old per-message form b+<hex> is taken for messages created before
// the upgrade, for DSNs only, until the queue lifetime plus two days after
// the upgrade.
func TestLegacyReturnPathTransition(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test", "bob@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	legacy := "b+" + strings.ReplaceAll(m.ID, "-", "") + "@bounces.acme.test"
	dsn := func(rcpt string) []byte {
		return fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", rcpt)
	}
	// Sent after the upgrade: the old form is refused.
	if err := sendPlain(addr, "", legacy, dsn("bob@dest.test")); err == nil || !strings.Contains(err.Error(), "550") {
		t.Fatalf("old form for a message sent after the upgrade: %v", err)
	}
	// The upgrade happened after the message was created (as it is
	// recorded at the first start of this version).
	e.app.returnPathSince = m.CreatedAt.Add(time.Second)
	e.clock.add(time.Hour)

	// A feedback report there is taken but changes nothing.
	arf := fixture(t, "arf/yahoo-abuse.eml", "b+0195a1c0abcdef0123456789abcdef01@bounces.example.com", legacy,
		"reader@yahoo.example", "ann@dest.test")
	if err := sendPlain(addr, "", legacy, arf); err != nil {
		t.Fatal(err)
	}
	if c := e.eventData(e.live, m.ID, EventComplained); len(c) != 0 {
		t.Fatalf("a complaint through the old form: %v", c)
	}
	// A DSN is read as before: the recipient it names.
	if err := sendPlain(addr, "", legacy, dsn("bob@dest.test")); err != nil {
		t.Fatal(err)
	}
	if st := e.message(e.live, m.ID); st.Recipients[1].Status != StatusBounced || st.Recipients[0].Status != StatusDelivered {
		t.Fatalf("after the old-form DSN: %+v", st.Recipients)
	}
	// The queue lifetime (1 h here) plus two days after the upgrade, the
	// old form is refused.
	e.clock.add(e.app.queue.Options().QueueLifetime + legacyReturnPathGrace)
	if err := sendPlain(addr, "", legacy, dsn("ann@dest.test")); err == nil || !strings.Contains(err.Error(), "550") {
		t.Fatalf("old form after the transition: %v", err)
	}
	if st := e.message(e.live, m.ID); st.Recipients[0].Status != StatusDelivered {
		t.Fatalf("ann after the transition: %+v", st.Recipients[0])
	}
}

// The upgrade time is recorded once, at the first start, and kept.
func TestReturnPathSinceRecordedOnce(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	first := e.app.returnPathSince
	if first.IsZero() || !first.Equal(e.clock.now()) {
		t.Fatalf("recorded %v at %v", first, e.clock.now())
	}
	again, err := recordReturnPathSince(e.app.db, first.Add(72*time.Hour))
	if err != nil || !again.Equal(first) {
		t.Fatalf("second start: %v, %v; want %v", again, err, first)
	}
}

// Complaints at fbl@bounces.<domain> count only when the returned
// message's Return-Path is one of our return paths with a valid MAC, and
// then only for the recipient it names.
func TestFeedbackLoopAddress(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test", "bob@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	paths := e.returnPaths(m)
	ann := paths["ann@dest.test"]
	hex := "b+" + strings.ReplaceAll(m.ID, "-", "")
	// Every report names bob in Original-Rcpt-To and To.
	report := func(returnPath string) []byte {
		arf := fixture(t, "arf/yahoo-abuse.eml", "reader@yahoo.example", "bob@dest.test",
			"b+0195a1c0abcdef0123456789abcdef01@bounces.example.com", hex+"@bounces.acme.test")
		if returnPath != "" {
			arf = withReturnPath(arf, returnPath)
		}
		return arf
	}
	local, _, _ := strings.Cut(ann, "@")
	// A MAC one character off: the last one changed to one it is not.
	other := "q"
	if strings.HasSuffix(local, other) {
		other = "r"
	}
	for name, data := range map[string][]byte{
		"no Return-Path":        report(""),
		"old-form Return-Path":  report(hex + "@bounces.acme.test"),
		"Return-Path, bad MAC":  report(local[:len(local)-1] + other + "@bounces.acme.test"),
		"a DSN, not a report":   fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "bob@dest.test"),
		"Return-Path elsewhere": report("bounce@example.org"),
	} {
		if err := sendPlain(addr, "", "fbl@bounces.acme.test", data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c := e.eventData(e.live, m.ID, EventComplained); len(c) != 0 {
			t.Fatalf("%s: complaints %v", name, c)
		}
	}
	if st := e.message(e.live, m.ID); st.Recipients[1].Status != StatusDelivered {
		t.Fatalf("bob: %+v", st.Recipients[1])
	}
	// Ann's return path, whatever the report says of bob: ann complained.
	if err := sendPlain(addr, "", "FBL@Bounces.Acme.Test", report(strings.ToUpper(ann))); err != nil {
		t.Fatal(err)
	}
	c := e.eventData(e.live, m.ID, EventComplained)
	if len(c) != 1 || c[0]["to"] != "ann@dest.test" {
		t.Fatalf("complaints %v", c)
	}
	if _, ok := e.suppressed("bob@dest.test"); ok {
		t.Fatal("bob suppressed")
	}
	if s, ok := e.suppressed("ann@dest.test"); !ok || s.Reason != "complaint" {
		t.Fatalf("ann: %+v %v", s, ok)
	}
}

// A report to a return path of an internationalised sending domain, with
// the domain in its Unicode spelling (in any case), is the report to that
// return path: the MAC covers the domain's A-label form, which the
// listener reads the address in. A feedback report quoting the return
// path in that spelling counts too.
func TestReturnPathInUnicodeSpelling(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	dom, ae := e.app.CreateDomain(keyIn(e.acct), "exämple.test", dkim.AlgEd25519)
	if ae != nil {
		t.Fatal(ae)
	}
	e.publish(dom)
	if d := e.verify(dom); d.Status != DomainVerified || d.Name != "xn--exmple-cua.test" {
		t.Fatalf("domain %+v", d)
	}
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@exämple.test", To: []string{"ann@dest.test", "bob@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	paths := e.returnPaths(m)
	unicode := func(rp string) string {
		if !strings.HasSuffix(rp, "@bounces.xn--exmple-cua.test") {
			t.Fatalf("return path %s", rp)
		}
		return strings.Replace(rp, "@bounces.xn--exmple-cua.test", "@bounces.EXÄMPLE.test", 1)
	}
	ann, bob := unicode(paths["ann@dest.test"]), unicode(paths["bob@dest.test"])
	if err := sendPlain(addr, "", ann, fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "ann@dest.test")); err != nil {
		t.Fatalf("DSN to %s: %v", ann, err)
	}
	arf := withReturnPath(fixture(t, "arf/yahoo-abuse.eml", "reader@yahoo.example", "bob@dest.test"), bob)
	if err := sendPlain(addr, "", "fbl@bounces.exämple.test", arf); err != nil {
		t.Fatalf("report to fbl@: %v", err)
	}
	st := e.message(e.live, m.ID)
	if st.Recipients[0].Status != StatusBounced || st.Recipients[1].Status != StatusDelivered {
		t.Errorf("after the DSN: %+v", st.Recipients)
	}
	if c := e.eventData(e.live, m.ID, EventComplained); len(c) != 1 || c[0]["to"] != "bob@dest.test" {
		t.Errorf("complaints %v", c)
	}
}
