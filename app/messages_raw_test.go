package app

import (
	"bytes"
	"testing"
	"time"

	"mailbolt/mta/dkim"
)

// The raw source carries the DKIM-Signature of the recipient's latest
// attempt: a deferred first attempt (signed, refused at RCPT) leaves its
// signature, and the retry that delivers replaces it with the one the sink
// received, byte for byte.
func TestMessageRawFollowsTheLatestAttempt(t *testing.T) {
	e := newSendEnv(t, dkim.AlgRSA2048, nil)
	e.sink.FailFirst("greylist", 1)
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"greylist@dest.test"}, Subject: text("s"), Text: text("t")})
	before, ae := e.app.MessageRaw(e.live, m.ID, "")
	if ae != nil || before.Signed || bytes.HasPrefix(before.Data, []byte("DKIM-Signature:")) {
		t.Fatalf("before the first attempt: %v signed=%v\n%s", ae, before.Signed, before.Data)
	}
	e.drain()
	first, ae := e.app.MessageRaw(e.live, m.ID, "GREYLIST@dest.test")
	if ae != nil || !first.Signed || !bytes.HasPrefix(first.Data, []byte("DKIM-Signature:")) || !bytes.HasSuffix(first.Data, before.Data) {
		t.Fatalf("after a deferred attempt: %v signed=%v\n%s", ae, first.Signed, first.Data)
	}
	e.clock.add(time.Minute)
	e.drain()
	got := e.sink.Messages()
	if len(got) != 1 || e.message(e.live, m.ID).Status != StatusDelivered {
		t.Fatalf("%d messages at the sink", len(got))
	}
	last, ae := e.app.MessageRaw(e.live, m.ID, "")
	if ae != nil || !bytes.Equal(last.Data, got[0].Data) || last.ReturnPath != got[0].From {
		t.Fatalf("after the delivery (%v), raw:\n%s\n---- sink (MAIL FROM %s) ----\n%s", ae, last.Data, got[0].From, got[0].Data)
	}
	// A test-mode message is never signed; a cancelled one is gone.
	tm := e.send(e.test, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	if r, ae := e.app.MessageRaw(e.test, tm.ID, ""); ae != nil || r.Signed {
		t.Fatalf("test mode: %v %v", ae, r.Signed)
	}
	if _, ae := e.app.MessageRaw(e.live, tm.ID, ""); ae == nil {
		t.Fatal("a live key read a test-mode message")
	}
	later := e.clock.now().Add(time.Hour)
	sched := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"}, Subject: text("s"), Text: text("t"), SendAt: &later})
	if _, ae := e.app.CancelMessage(e.live, sched.ID); ae != nil {
		t.Fatal(ae)
	}
	if _, ae := e.app.MessageRaw(e.live, sched.ID, ""); ae == nil || ae.(*Error).Code != CodeGone {
		t.Fatalf("cancelled: %v", ae)
	}
}
