package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-message"
	msgauth "github.com/emersion/go-msgauth/dkim"

	"mailbolt/mta"
	"mailbolt/mta/dkim"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/mta/queue"
	"mailbolt/mta/smtptest"
	"mailbolt/netguard"
	"mailbolt/storage"
)

// sendEnv is an App that delivers over real SMTP on loopback: a dnstest
// zone holds the sending domain's records and dest.test's MX, which points
// at a scripted smtptest server.
type sendEnv struct {
	*domainEnv
	sink   *smtptest.Server
	live   Principal
	test   Principal
	domain storage.Domain
	// failWrites, while set, fails every write to the database; failNth,
	// when set to n, fails the n-th write from then on (once).
	failWrites *atomic.Bool
	failNth    *atomic.Int64
}

func newSendEnv(t *testing.T, alg string, tune func(*Options)) *sendEnv {
	t.Helper()
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	zone := dnstest.Start(t)
	zone.MX("dest.test", 10, "mx.dest.test")
	zone.A("mx.dest.test", "127.0.0.1")
	resolver := &dns.Resolver{Server: zone.Addr, Timeout: 300 * time.Millisecond}
	mo := mta.DefaultOptions()
	mo.Resolver, mo.MXPort, mo.HELO = resolver, sink.Port, "mx.mailbolt.test"
	// The MX is on loopback, which the SMTP client refuses unless allowed
	// (--mx-allow-cidrs): TestMXOnLoopbackHardBounces.
	mo.MXGuard.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	mo.CommandTimeout, mo.ConnectTimeout, mo.DataTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	d, err := mta.NewDeliverer(mo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	failWrites, failNth := &atomic.Bool{}, &atomic.Int64{}
	db, err := storage.Open(t.TempDir(), faults(t, func() error {
		if failWrites.Load() || failNth.Load() > 0 && failNth.Add(-1) == 0 {
			return errors.New("injected write fault")
		}
		return nil
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	opts := options(c.now)
	opts.Domains.Resolver, opts.Domains.Hostname = resolver, "mx.mailbolt.test"
	q := &opts.Delivery
	q.Sender, q.RetryBase, q.RetryMax, q.QueueLifetime = d, time.Minute, 4*time.Minute, time.Hour
	if tune != nil {
		tune(&opts)
	}
	a := mustNew(t, db, opts)
	acct, ae := a.CreateAccount(AccountInput{Name: "acme", Plan: "scale"})
	if ae != nil {
		t.Fatal(ae)
	}
	e := &sendEnv{domainEnv: &domainEnv{t: t, app: a, clock: c, zone: zone, acct: acct.ID}, sink: sink, failWrites: failWrites, failNth: failNth}
	dom, ae := a.CreateDomain(keyIn(acct.ID), "acme.test", alg)
	if ae != nil {
		t.Fatal(ae)
	}
	e.publish(dom)
	if e.domain = e.verify(dom); e.domain.Status != DomainVerified {
		t.Fatalf("domain not verified: %+v", e.domain)
	}
	e.live = e.principal(false)
	e.test = e.principal(true)
	return e
}

func (e *sendEnv) principal(test bool) Principal {
	mode := ModeLive
	if test {
		mode = ModeTest
	}
	k, ae := e.app.CreateKey(operatorOf(e.t, e.app, e.acct), KeyInput{Name: "k", Mode: mode})
	if ae != nil {
		e.t.Fatal(ae)
	}
	p, ae := e.app.Authenticate(k.Secret)
	if ae != nil {
		e.t.Fatal(ae)
	}
	return p
}

func (e *sendEnv) send(p Principal, in MessageInput) storage.Message {
	e.t.Helper()
	m, ae := e.app.SendMessage(p, in)
	if ae != nil {
		e.t.Fatalf("send: %v", ae)
	}
	return m
}

// drain runs the queue by hand until nothing is due at the clock's time.
func (e *sendEnv) drain() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.app.queue.Drain(ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *sendEnv) message(p Principal, id string) storage.Message {
	e.t.Helper()
	var m storage.Message
	err := e.app.db.View(func(tx *storage.Tx) error {
		var err error
		m, err = tx.Message(p.Account.ID, id)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// events lists a message's events, oldest first, as envelopes.
func (e *sendEnv) events(p Principal, id string) []map[string]any {
	e.t.Helper()
	list, _, _, ae := e.app.ListEvents(p, EventQuery{MessageID: id}, storage.ListOptions{Limit: 200}, false)
	if ae != nil {
		e.t.Fatal(ae)
	}
	var out []map[string]any
	for i := len(list) - 1; i >= 0; i-- {
		var env map[string]any
		if err := json.Unmarshal(list[i].Envelope, &env); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

func eventTypes(evs []map[string]any) string {
	var names []string
	for _, ev := range evs {
		names = append(names, ev["event"].(string))
	}
	return strings.Join(names, ",")
}

func text(s string) *string { return &s }

func no() *bool { f := false; return &f }

func TestLiveMessageArrivesSignedWithVERP(t *testing.T) {
	for _, alg := range []string{dkim.AlgRSA2048, dkim.AlgEd25519} {
		t.Run(alg, func(t *testing.T) {
			e := newSendEnv(t, alg, nil)
			m := e.send(e.live, MessageInput{From: "Acme <hello@acme.test>", To: []string{"Ann <ann@dest.test>"},
				Cc: []string{"cc@dest.test"}, Bcc: []string{"hidden@dest.test"}, Subject: text("Grüße"),
				Text: text("plain body"), HTML: text("<p>html body</p>"), Headers: map[string]string{"X-Campaign": "nov"},
				Attachments: []AttachmentInput{{Filename: "a.txt", Content: "aGVsbG8="}},
				Metadata:    json.RawMessage(`{"order":42}`), CampaignID: "nov", Unsubscribe: no()})
			if m.Status != StatusQueued {
				t.Fatalf("status %s", m.Status)
			}
			e.drain()
			got := e.sink.Messages()
			if len(got) != 3 {
				t.Fatalf("%d transactions, want 3 (one per recipient)", len(got))
			}
			for i, want := range []string{"ann@dest.test", "cc@dest.test", "hidden@dest.test"} {
				if from := queue.ReturnPath(e.app.returnPathKey, m, i); got[i].From != from || strings.Join(got[i].To, ",") != want {
					t.Errorf("envelope %s → %v, want %s → %s", got[i].From, got[i].To, from, want)
				}
			}
			tx := got[0]
			if tx.HELO != "mx.mailbolt.test" {
				t.Errorf("EHLO %q", tx.HELO)
			}
			vs, err := msgauth.VerifyWithOptions(bytes.NewReader(tx.Data), &msgauth.VerifyOptions{
				LookupTXT: func(name string) ([]string, error) {
					return e.app.opts.Domains.Resolver.LookupTXT(context.Background(), name)
				}})
			if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "acme.test" {
				t.Fatalf("DKIM: %v %+v", err, vs)
			}
			msg, err := mail.ReadMessage(bytes.NewReader(tx.Data))
			if err != nil {
				t.Fatal(err)
			}
			h := msg.Header
			if h.Get("Message-Id") != m.HeaderID || h.Get("X-Campaign") != "nov" || h.Get("Bcc") != "" {
				t.Errorf("headers: %v", h)
			}
			if subj, _ := new(mime.WordDecoder).DecodeHeader(h.Get("Subject")); subj != "Grüße" {
				t.Errorf("subject %q", h.Get("Subject"))
			}
			if bytes.Contains(tx.Data, []byte("hidden@dest.test")) {
				t.Error("the Bcc address leaked into the message")
			}
			ent, err := message.Read(bytes.NewReader(tx.Data))
			if err != nil {
				t.Fatal(err)
			}
			if ct, _, _ := ent.Header.ContentType(); ct != "multipart/mixed" {
				t.Errorf("top-level type %s", ct)
			}
			stored := e.message(e.live, m.ID)
			if stored.Status != StatusDelivered || stored.CompletedAt == nil {
				t.Fatalf("stored: %+v", stored)
			}
			for _, r := range stored.Recipients {
				if r.Status != StatusDelivered || r.Attempts != 1 || r.SMTPCode != 250 || r.MX == "" {
					t.Errorf("recipient %+v", r)
				}
			}
			evs := e.events(e.live, m.ID)
			if eventTypes(evs) != "message.sent,message.delivered,message.delivered,message.delivered" {
				t.Fatalf("events %s", eventTypes(evs))
			}
			sent := evs[0]["data"].(map[string]any)
			if sent["messageId"] != m.ID || sent["from"] != "Acme <hello@acme.test>" || sent["campaignId"] != "nov" ||
				sent["metadata"].(map[string]any)["order"] != 42.0 {
				t.Errorf("message.sent data %v", sent)
			}
			dl := evs[1]["data"].(map[string]any)
			if dl["to"] != "ann@dest.test" || !strings.HasPrefix(dl["smtpResponse"].(string), "250") || dl["deliveredAt"] == "" {
				t.Errorf("message.delivered data %v", dl)
			}
		})
	}
}

func TestTemporaryFailuresRetryWithBackoffThenDeliver(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	e.sink.FailFirst("greylist", 2)
	e.sink.FailFirst("tempfail", 1)
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"greylist@dest.test", "tempfail@dest.test"},
		Subject: text("s"), Text: text("t")})
	e.drain()
	st := e.message(e.live, m.ID)
	if st.Status != StatusDeferred || st.QueueAt == nil || !st.QueueAt.Equal(e.clock.now().Add(time.Minute)) {
		t.Fatalf("after the first attempt: %s next %v", st.Status, st.QueueAt)
	}
	for _, r := range st.Recipients {
		if r.Status != StatusDeferred || r.SMTPCode/100 != 4 {
			t.Errorf("recipient %+v", r)
		}
	}
	e.clock.add(30 * time.Second)
	e.drain() // not due yet
	if len(e.sink.Messages()) != 0 || e.message(e.live, m.ID).Recipients[0].Attempts != 1 {
		t.Fatal("retried before its time")
	}
	e.clock.add(30 * time.Second)
	e.drain() // second attempt: tempfail passes, greylist fails again; next wait doubles
	st = e.message(e.live, m.ID)
	if st.Recipients[1].Status != StatusDelivered || st.Recipients[0].Status != StatusDeferred ||
		!st.Recipients[0].NextAttemptAt.Equal(e.clock.now().Add(2*time.Minute)) {
		t.Fatalf("after the second attempt: %+v", st.Recipients)
	}
	e.clock.add(2 * time.Minute)
	e.drain()
	st = e.message(e.live, m.ID)
	if st.Status != StatusDelivered || st.Recipients[0].Attempts != 3 {
		t.Fatalf("final: %s %+v", st.Status, st.Recipients)
	}
	if got := eventTypes(e.events(e.live, m.ID)); got != "message.sent,message.delivered,message.delivered" {
		t.Errorf("events %s (no bounce for a deferral)", got)
	}
}

func TestPermanentFailuresBounceAndSuppress(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"unknown@dest.test", "full@dest.test", "blocked@dest.test", "ok@dest.test"},
		Subject: text("s"), Text: text("t")})
	e.drain()
	st := e.message(e.live, m.ID)
	if st.Status != StatusDelivered {
		t.Errorf("status %s: one recipient was delivered", st.Status)
	}
	want := map[string][2]string{"unknown@dest.test": {"hard", "unknown_user"}, "full@dest.test": {"soft", "mailbox_full"},
		"blocked@dest.test": {"block", "policy"}}
	for _, r := range st.Recipients {
		if w, ok := want[r.Email]; ok && (r.Status != StatusBounced || r.BounceType != w[0] || r.BounceCategory != w[1]) {
			t.Errorf("%s: %s %s/%s", r.Email, r.Status, r.BounceType, r.BounceCategory)
		}
	}
	bounces := 0
	for _, ev := range e.events(e.live, m.ID) {
		if ev["event"] != EventBounced {
			continue
		}
		bounces++
		d := ev["data"].(map[string]any)
		if d["to"] == "unknown@dest.test" && (d["bounceCode"] != "5.1.1" || d["bounceType"] != "hard" ||
			!strings.HasPrefix(d["diagnosticCode"].(string), "smtp; 550 5.1.1")) {
			t.Errorf("bounce data %v", d)
		}
	}
	if bounces != 3 {
		t.Errorf("%d bounce events", bounces)
	}
	// Only the hard bounce is suppressed, with its source message.
	for rcpt, want := range map[string]bool{"unknown@dest.test": true, "full@dest.test": false, "blocked@dest.test": false} {
		var s storage.Suppression
		err := e.app.db.View(func(tx *storage.Tx) error { var err error; s, err = tx.Suppression(e.acct, rcpt, ""); return err })
		if (err == nil) != want || (want && (s.Reason != "hard_bounce" || s.SourceMessageID != m.ID)) {
			t.Errorf("%s suppressed=%v %+v", rcpt, err == nil, s)
		}
	}
	// The next message to the suppressed address is not sent to it.
	m2 := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"unknown@dest.test"}, Subject: text("s"), Text: text("t")})
	if m2.Status != StatusSuppressed || m2.Recipients[0].Status != StatusSuppressed {
		t.Fatalf("second message %s %+v", m2.Status, m2.Recipients)
	}
	// Nothing is left to try: it is complete from its acceptance, as read
	// back too, and never queued.
	for _, got := range []storage.Message{m2, e.message(e.live, m2.ID)} {
		if got.CompletedAt == nil || !got.CompletedAt.Equal(got.CreatedAt) || got.QueuedAt != nil || got.QueueAt != nil {
			t.Errorf("a message suppressed at acceptance: completed %v (created %v), queued %v, queue entry %v",
				got.CompletedAt, got.CreatedAt, got.QueuedAt, got.QueueAt)
		}
	}
	if got := eventTypes(e.events(e.live, m2.ID)); got != "" {
		t.Errorf("events for a fully suppressed message: %s", got)
	}
}

func TestConnectionFailuresAreTemporary(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"drop@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	if r := e.message(e.live, m.ID).Recipients[0]; r.Status != StatusDeferred {
		t.Fatalf("dropped connection: %+v", r)
	}
	// Past the queue lifetime the recipient soft-bounces.
	e.clock.add(2 * time.Hour)
	e.drain()
	st := e.message(e.live, m.ID)
	if r := st.Recipients[0]; st.Status != StatusBounced || r.BounceType != "soft" || r.BounceCategory != "expired" {
		t.Fatalf("after the queue lifetime: %s %+v", st.Status, r)
	}
}

func TestNullMXBouncesHard(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	e.zone.MX("nomail.test", 0, ".")
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"x@nomail.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	r := e.message(e.live, m.ID).Recipients[0]
	if r.Status != StatusBounced || r.BounceType != "hard" || r.EnhancedCode != "5.1.10" {
		t.Fatalf("null MX: %+v", r)
	}
}

// TestMXOnLoopbackHardBounces: without an allowance, a recipient whose MX
// is on loopback is never connected to; it hard-bounces (and is
// suppressed) with the refused address in the SMTP response.
func TestMXOnLoopbackHardBounces(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, func(o *Options) {
		mo := o.Delivery.Sender.(*mta.Deliverer).Options()
		mo.MXGuard = netguard.Policy{}
		d, err := mta.NewDeliverer(mo)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		o.Delivery.Sender = d
	})
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	r := e.message(e.live, m.ID).Recipients[0]
	if r.Status != StatusBounced || r.BounceType != "hard" || r.EnhancedCode != "5.1.2" ||
		!strings.Contains(r.SMTPResponse, "127.0.0.1 is in 127.0.0.0/8 (loopback)") {
		t.Fatalf("loopback MX: %+v", r)
	}
	if n := len(e.sink.Messages()); n != 0 {
		t.Fatalf("the loopback MX got %d messages", n)
	}
	err := e.app.db.View(func(tx *storage.Tx) error { _, err := tx.Suppression(e.acct, "x@dest.test", ""); return err })
	if err != nil {
		t.Fatalf("not suppressed: %v", err)
	}
}

func TestSandboxOutcomes(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	m := e.send(e.test, MessageInput{From: "a@unverified.test", To: []string{"bounce@x.test", "softbounce@x.test",
		"blocked@x.test", "complaint@x.test", "anyone@x.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	if n := len(e.sink.Messages()); n != 0 {
		t.Fatalf("the sandbox opened a connection: %d messages", n)
	}
	st := e.message(e.test, m.ID)
	want := map[string]string{"bounce@x.test": "bounced/hard", "softbounce@x.test": "bounced/soft", "blocked@x.test": "bounced/block",
		"complaint@x.test": "delivered/", "anyone@x.test": "delivered/"}
	for _, r := range st.Recipients {
		if got := r.Status + "/" + r.BounceType; got != want[r.Email] {
			t.Errorf("%s: %s, want %s", r.Email, got, want[r.Email])
		}
	}
	types := eventTypes(e.events(e.test, m.ID))
	for _, w := range []string{"message.sent", "message.bounced", "message.delivered", "message.complained"} {
		if !strings.Contains(types, w) {
			t.Errorf("events %s lack %s", types, w)
		}
	}
	// Test-mode records are invisible to live keys and the other way round.
	if _, _, ae := e.app.Message(e.live, m.ID); ae == nil || AsError(ae).Status() != 404 {
		t.Errorf("a live key sees a test message: %v", ae)
	}
	if evs := e.events(e.live, m.ID); len(evs) != 0 {
		t.Errorf("a live key sees test events: %s", eventTypes(evs))
	}
}

func TestUnverifiedDomainIsRefusedForLiveKeys(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	_, ae := e.app.SendMessage(e.live, MessageInput{From: "a@other.test", To: []string{"x@dest.test"}, Subject: text("s"), Text: text("t")})
	if ae == nil || AsError(ae).Status() != 422 || AsError(ae).Code != CodeDomainNotVerified {
		t.Fatalf("got %v", ae)
	}
}

func TestScheduledMessageBecomesDueAndCanBeCancelled(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	at := e.clock.now().Add(time.Hour)
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"}, Subject: text("s"), Text: text("t"), SendAt: &at})
	c := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"y@dest.test"}, Subject: text("s"), Text: text("t"), SendAt: &at})
	if m.Status != StatusScheduled {
		t.Fatalf("status %s", m.Status)
	}
	if evs := e.events(e.live, m.ID); len(evs) != 0 {
		t.Fatalf("a scheduled message has events: %s", eventTypes(evs))
	}
	if got, ae := e.app.CancelMessage(e.live, c.ID); ae != nil || got.Status != StatusCancelled {
		t.Fatalf("cancel: %v", ae)
	}
	if _, _, ae := e.app.Message(e.live, c.ID); ae == nil || AsError(ae).Status() != 410 || AsError(ae).Code != CodeGone {
		t.Fatalf("GET after cancel: %v", ae)
	}
	if _, ae := e.app.CancelMessage(e.live, c.ID); ae == nil || AsError(ae).Status() != 410 {
		t.Fatalf("second cancel: %v", ae)
	}
	e.drain()
	if len(e.sink.Messages()) != 0 {
		t.Fatal("sent before send_at")
	}
	e.clock.add(time.Hour)
	e.drain()
	st := e.message(e.live, m.ID)
	if st.Status != StatusDelivered || st.QueuedAt == nil || !st.QueuedAt.Equal(at) {
		t.Fatalf("after send_at: %+v", st)
	}
	if got := eventTypes(e.events(e.live, m.ID)); got != "message.sent,message.delivered" {
		t.Errorf("events %s", got)
	}
	if n := len(e.sink.Messages()); n != 1 {
		t.Errorf("%d messages arrived; the cancelled one must not", n)
	}
	if _, ae := e.app.CancelMessage(e.live, m.ID); ae == nil || AsError(ae).Status() != 409 || AsError(ae).Code != CodeConflict {
		t.Fatalf("cancel after delivery: %v", ae)
	}
	far := e.clock.now().Add(31 * 24 * time.Hour)
	if _, ae := e.app.SendMessage(e.live, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"}, Subject: text("s"), Text: text("t"), SendAt: &far}); ae == nil || AsError(ae).Code != CodeValidation {
		t.Errorf("31 days ahead: %v", ae)
	}
}

// A scheduled message to a suppressed address is finished when accepted,
// as an immediate one is: suppressed, complete, no queue entry and never
// a message.sent. One whose recipient is suppressed while it waits ends
// the same way at its send_at.
func TestScheduledMessageToSuppressedAddresses(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	if _, _, ae := e.app.AddSuppression(e.live, "gone@dest.test", "manual", ""); ae != nil {
		t.Fatal(ae)
	}
	at := e.clock.now().Add(time.Hour)
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"gone@dest.test"}, Subject: text("s"), Text: text("t"), SendAt: &at})
	later := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"later@dest.test"}, Subject: text("s"), Text: text("t"), SendAt: &at})
	for _, got := range []storage.Message{m, e.message(e.live, m.ID)} {
		if got.Status != StatusSuppressed || got.CompletedAt == nil || !got.CompletedAt.Equal(got.CreatedAt) || got.QueueAt != nil {
			t.Errorf("a scheduled message to a suppressed address: %s, completed %v, queue entry %v", got.Status, got.CompletedAt, got.QueueAt)
		}
	}
	if later.Status != StatusScheduled {
		t.Fatalf("the other: %s", later.Status)
	}
	if _, _, ae := e.app.AddSuppression(e.live, "later@dest.test", "manual", ""); ae != nil {
		t.Fatal(ae)
	}
	e.clock.add(time.Hour)
	e.drain()
	if got := e.message(e.live, later.ID); got.Status != StatusSuppressed || got.CompletedAt == nil || got.QueuedAt != nil {
		t.Errorf("suppressed while scheduled, after send_at: %s, completed %v, queued %v", got.Status, got.CompletedAt, got.QueuedAt)
	}
	for _, id := range []string{m.ID, later.ID} {
		if got := eventTypes(e.events(e.live, id)); got != "" {
			t.Errorf("events of a message sent to nobody: %s", got)
		}
	}
	if n := len(e.sink.Messages()); n != 0 {
		t.Errorf("%d messages arrived", n)
	}
}

func TestDedicatedIPsBindAndWaitAtTheirCap(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		if _, ae := e.app.AddIP(ip, "o"+ip[len(ip)-1:]+".mailbolt.test", "warm", "2"); ae != nil {
			t.Fatal(ae)
		}
		if _, ae := e.app.AssignIP(ip, e.acct); ae != nil {
			t.Fatal(ae)
		}
	}
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.send(e.live, MessageInput{From: "a@acme.test", To: []string{fmt.Sprintf("u%d@dest.test", i)},
			Subject: text("s"), Text: text("t"), IPPool: "warm"}).ID)
	}
	e.drain()
	got := e.sink.Messages()
	if len(got) != 4 {
		t.Fatalf("%d messages left on day one; two IPs with a cap of 2 allow 4", len(got))
	}
	seen := map[string]int{}
	for _, m := range got {
		seen[m.RemoteIP+" "+m.HELO]++
	}
	if seen["127.0.0.2 o2.mailbolt.test"] != 2 || seen["127.0.0.3 o3.mailbolt.test"] != 2 {
		t.Fatalf("source addresses and EHLO names: %v", seen)
	}
	var waiting storage.Message
	for _, id := range ids {
		if m := e.message(e.live, id); m.Status == StatusDeferred {
			waiting = m
		}
	}
	next := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	if waiting.ID == "" || waiting.QueueAt == nil || !waiting.QueueAt.Equal(next) || waiting.Recipients[0].Attempts != 0 {
		t.Fatalf("the fifth message should wait for the next day without an attempt: %+v", waiting)
	}
	e.clock.add(12 * time.Hour)
	e.drain()
	if n := len(e.sink.Messages()); n != 5 {
		t.Fatalf("%d messages after the daily reset", n)
	}
}

func TestStalledServerTimesOutAndIsRetried(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, func(o *Options) {
		prev := o.Delivery.Sender.(*mta.Deliverer)
		mo := prev.Options()
		mo.CommandTimeout = 300 * time.Millisecond
		d, err := mta.NewDeliverer(mo)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		o.Delivery.Sender = d
	})
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"stall@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	r := e.message(e.live, m.ID).Recipients[0]
	if r.Status != StatusDeferred || r.NextAttemptAt == nil {
		t.Fatalf("a stalled server: %+v", r)
	}
}

// Each recipient has its own transaction (its own return path), whatever
// its domain; the message is built and signed once for all of them.
func TestRecipientsOfTwoDomainsGoOneTransactionEach(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	e.zone.MX("other.test", 10, "mx.dest.test")
	e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"a@dest.test", "b@other.test", "c@dest.test"},
		Subject: text("s"), Text: text("t"), Unsubscribe: no()})
	e.drain()
	got := e.sink.Messages()
	if len(got) != 3 {
		t.Fatalf("%d transactions", len(got))
	}
	for i, want := range []string{"a@dest.test", "b@other.test", "c@dest.test"} {
		if strings.Join(got[i].To, ",") != want {
			t.Errorf("transaction %d: %v, want %s", i, got[i].To, want)
		}
		if !bytes.Equal(got[i].Data, got[0].Data) {
			t.Error("the copies differ: the message must be built and signed once")
		}
	}
}

func TestWorkerDeliversWhatIsAccepted(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, func(o *Options) { o.Delivery.Poll = 20 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.app.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for i := 0; i < 20; i++ {
		e.send(e.live, MessageInput{From: "a@acme.test", To: []string{fmt.Sprintf("u%d@dest.test", i)}, Subject: text("s"), Text: text("t")})
	}
	if !e.sink.WaitFor(20, 10*time.Second) {
		t.Fatalf("%d of 20 delivered", e.sink.Received())
	}
}
