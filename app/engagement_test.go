package app

import (
	"bytes"
	"io"
	"net"
	"net/mail"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/emersion/go-message"
	"github.com/emersion/go-smtp"

	"mailbolt/mta/dkim"
	"mailbolt/mta/inbound"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// htmlPart returns the decoded text/html part of a raw message.
func htmlPart(t *testing.T, raw []byte) string {
	t.Helper()
	ent, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out string
	ent.Walk(func(_ []int, e *message.Entity, _ error) error {
		if ct, _, _ := e.Header.ContentType(); ct == "text/html" {
			b, _ := io.ReadAll(e.Body)
			out = string(b)
		}
		return nil
	})
	return out
}

var (
	openRe  = regexp.MustCompile(`/v1/t/o/([A-Za-z0-9_-]+)`)
	clickRe = regexp.MustCompile(`/v1/t/c/([A-Za-z0-9_-]+)`)
	unsubRe = regexp.MustCompile(`/v1/u/([A-Za-z0-9_-]+)>`)
)

func (e *sendEnv) eventData(p Principal, id, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range e.events(p, id) {
		if ev["event"] == typ {
			out = append(out, ev["data"].(map[string]any))
		}
	}
	return out
}

func (e *sendEnv) suppressed(rcpt string) (storage.Suppression, bool) {
	var s storage.Suppression
	err := e.app.db.View(func(tx *storage.Tx) error {
		var err error
		if s, err = tx.Suppression(e.acct, rcpt, ""); err != nil {
			s, err = tx.Suppression(e.acct, rcpt, storage.StreamBroadcast)
		}
		return err
	})
	return s, err == nil
}

func TestTrackingAndUnsubscribeEndToEnd(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, func(o *Options) { o.PublicURL = "https://mail.acme.test" })
	yes := true
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test"}, Subject: text("s"),
		HTML:     text(`<p>Hi <a href="https://shop.test/a?x=1&amp;y=2">shop</a> <a href="mailto:x@y.test">mail</a> <a href="https://shop.test/b" data-mb-notrack>raw</a></p></body>`),
		Tracking: &TrackingInput{Opens: &yes, Clicks: &yes}, CampaignID: "nov", Stream: "broadcast"})
	e.drain()
	got := e.sink.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages arrived", len(got))
	}
	raw := got[0].Data
	html := htmlPart(t, raw)
	if !strings.Contains(html, "https://mail.acme.test/v1/t/o/") || !strings.Contains(html, `href="mailto:x@y.test"`) ||
		!strings.Contains(html, `href="https://shop.test/b" data-mb-notrack`) {
		t.Fatalf("tracked HTML:\n%s", html)
	}
	clicks := clickRe.FindAllStringSubmatch(html, -1)
	if len(clicks) != 1 {
		t.Fatalf("%d tracked links, want 1:\n%s", len(clicks), html)
	}
	msg, _ := mail.ReadMessage(bytes.NewReader(raw))
	lu := msg.Header.Get("List-Unsubscribe")
	if !strings.Contains(lu, "<https://mail.acme.test/v1/u/") || !strings.Contains(lu, "<mailto:u+") ||
		msg.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("List-Unsubscribe %q", lu)
	}
	if !strings.Contains(strings.ToLower(msg.Header.Get("Dkim-Signature")), "list-unsubscribe") {
		t.Error("the signature does not cover List-Unsubscribe")
	}

	// Opens: the first is first; a forged token records nothing.
	open := openRe.FindStringSubmatch(html)[1]
	ua := "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"
	if !e.app.RecordOpen(open, NewClientContext(nil, "192.0.2.7", ua)) || !e.app.RecordOpen(open, NewClientContext(nil, "192.0.2.7", ua)) {
		t.Fatal("open not recorded")
	}
	if e.app.RecordOpen(open[:len(open)-2]+"AA", ClientContext{}) {
		t.Fatal("a tampered open token was recorded")
	}
	opens := e.eventData(e.live, m.ID, EventOpened)
	if len(opens) != 2 || opens[0]["isFirstOpen"] != true || opens[1]["isFirstOpen"] != false || opens[1]["openCount"] != 2.0 {
		t.Fatalf("opens %v", opens)
	}
	if c := opens[0]["context"].(map[string]any); c["ip"] != "192.0.2.7" || c["device"] != "mobile" || c["os"] != "iOS" {
		t.Errorf("open context %v", c)
	}

	// Clicks: the redirect goes to the recorded URL only.
	url, err := e.app.RecordClick(clicks[0][1], ClientContext{IP: "192.0.2.8"})
	if err != nil || url != "https://shop.test/a?x=1&y=2" {
		t.Fatalf("click → %q %v", url, err)
	}
	if _, err := e.app.RecordClick(strings.Replace(clicks[0][1], "A", "B", 1)+"x", ClientContext{}); !HasCode(err, CodeNotFound) {
		t.Fatalf("a tampered click token: %v, want NOT_FOUND", err)
	}
	if _, err := e.app.RecordClick(open, ClientContext{}); !HasCode(err, CodeNotFound) {
		t.Fatalf("an open token as a click token: %v, want NOT_FOUND", err)
	}
	cl := e.eventData(e.live, m.ID, EventClicked)
	if len(cl) != 1 || cl[0]["url"] != "https://shop.test/a?x=1&y=2" || cl[0]["isFirstClick"] != true || cl[0]["linkId"] != LinkID("https://shop.test/a?x=1&y=2") {
		t.Fatalf("clicks %v", cl)
	}

	// One-click unsubscribe: suppressed once, one event.
	tok := unsubRe.FindStringSubmatch(lu)[1]
	if email, err := e.app.UnsubscribeTarget(tok); err != nil || email != "ann@dest.test" {
		t.Fatalf("target %q %v", email, err)
	}
	for range 2 {
		if email, err := e.app.Unsubscribe(tok, MethodOneClick); err != nil || email != "ann@dest.test" {
			t.Fatalf("unsubscribe %q %v", email, err)
		}
	}
	un := e.eventData(e.live, m.ID, EventUnsubscribed)
	if len(un) != 1 || un[0]["method"] != "one-click" || un[0]["email"] != "ann@dest.test" || len(un[0]["listIds"].([]any)) != 1 {
		t.Fatalf("unsubscribed %v", un)
	}
	if s, ok := e.suppressed("ann@dest.test"); !ok || s.Reason != "unsubscribe" || s.SourceMessageID != m.ID {
		t.Fatalf("suppression %+v %v", s, ok)
	}

	// The summary counts all of it, by campaign too.
	for _, q := range []SummaryQuery{{}, {CampaignID: "nov"}, {Domain: "acme.test"}} {
		q.From, q.To = e.clock.now(), e.clock.now()
		sum, ae := e.app.AnalyticsSummary(e.live, q)
		if ae != nil {
			t.Fatal(ae)
		}
		tt := sum.Totals
		if tt.Sent != 1 || tt.Delivered != 1 || tt.Opened != 2 || tt.UniqueOpened != 1 || tt.Clicked != 1 ||
			tt.UniqueClicked != 1 || tt.Unsubscribed != 1 || sum.Rates.Open != 1 || len(sum.Daily) != 1 {
			t.Errorf("summary %+v: %+v %+v", q, tt, sum.Rates)
		}
	}
	if sum, _ := e.app.AnalyticsSummary(e.live, SummaryQuery{From: e.clock.now(), To: e.clock.now(), CampaignID: "other"}); sum.Totals.Sent != 0 {
		t.Errorf("another campaign counts %+v", sum.Totals)
	}
}

// inboundListener runs the inbound SMTP server of e's App on loopback.
func (e *sendEnv) inboundListener() string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	srv := inbound.NewServer(e.app.Inbound(), inbound.Options{Domain: "mx.mailbolt.test"})
	go srv.Serve(ln)
	e.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// sendPlain delivers one message over SMTP without TLS, as many MTAs
// deliver bounces.
func sendPlain(addr, from, rcpt string, data []byte) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	if err := c.Rcpt(rcpt, nil); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// fixture reads a report from testdata with its placeholders replaced.
func fixture(t *testing.T, path string, repl ...string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.NewReplacer(repl...).Replace(string(b)))
}

func TestInboundBouncesAndComplaints(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"nobody@dest.test", "reader@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	paths := e.returnPaths(m)
	nobody, reader := paths["nobody@dest.test"], paths["reader@dest.test"]
	send := func(rcpt string, data []byte) error { return sendPlain(addr, "", rcpt, data) }

	// A relay attempt is refused, and so is any address of a bounce
	// domain that is not one of ours; our addresses are taken.
	for _, to := range []string{"someone@example.org", "postmaster@bounces.acme.test", "b+x@bounces.acme.test"} {
		if err := send(to, []byte("Subject: x\r\n\r\nx\r\n")); err == nil || !strings.Contains(err.Error(), "550") {
			t.Fatalf("mail for %s: %v", to, err)
		}
	}
	dsn := fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "nobody@dest.test",
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com", nobody)
	for range 2 { // the same DSN twice gives one event
		if err := send(nobody, dsn); err != nil {
			t.Fatal(err)
		}
	}
	delayed := fixture(t, "dsn/postfix-delayed.eml", "slow@example.org", "reader@dest.test")
	if err := send(reader, delayed); err != nil {
		t.Fatal(err)
	}
	st := e.message(e.live, m.ID)
	r := st.Recipients[0]
	if r.Email != "nobody@dest.test" || r.Status != StatusBounced || r.BounceType != "hard" || r.EnhancedCode != "5.1.1" {
		t.Fatalf("after the DSN: %+v", r)
	}
	if st.Recipients[1].Status != StatusDelivered {
		t.Fatalf("a delayed DSN changed the other recipient: %+v", st.Recipients[1])
	}
	b := e.eventData(e.live, m.ID, EventBounced)
	if len(b) != 1 || b[0]["to"] != "nobody@dest.test" || b[0]["bounceCode"] != "5.1.1" ||
		!strings.HasPrefix(b[0]["diagnosticCode"].(string), "smtp; 550 5.1.1") {
		t.Fatalf("bounce events %v", b)
	}
	if s, ok := e.suppressed("nobody@dest.test"); !ok || s.Reason != "hard_bounce" {
		t.Fatalf("not suppressed: %+v", s)
	}

	// An ARF report at the feedback-loop address, matched through the
	// return path its returned message carries, and the same report at
	// that return path: one complaint.
	arf := withReturnPath(fixture(t, "arf/yahoo-abuse.eml", "reader@yahoo.example", "reader@dest.test"), reader)
	for _, to := range []string{"fbl@bounces.acme.test", reader} {
		if err := send(to, arf); err != nil {
			t.Fatal(err)
		}
	}
	// An auth-failure report is not a complaint about the recipient.
	if err := send(reader, fixture(t, "arf/auth-failure-headers.eml")); err != nil {
		t.Fatal(err)
	}
	c := e.eventData(e.live, m.ID, EventComplained)
	if len(c) != 1 || c[0]["to"] != "reader@dest.test" || c[0]["feedbackType"] != "abuse" || c[0]["feedbackId"] == "" {
		t.Fatalf("complaints %v", c)
	}
	if s, ok := e.suppressed("reader@dest.test"); !ok || s.Reason != "complaint" {
		t.Fatalf("not suppressed: %+v", s)
	}

	// Unmatched and unparsable mail is accepted and dropped: a report at a
	// well-signed address of a message that is gone, an auto-reply.
	gone := storage.Message{ID: "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", Domain: "acme.test"}
	if err := send(queue.ReturnPath(e.app.returnPathKey, gone, 0), dsn); err != nil {
		t.Fatalf("unmatched DSN: %v", err)
	}
	if err := send(reader, []byte("Subject: out of office\r\n\r\nI am away.\r\n")); err != nil {
		t.Fatalf("auto-reply: %v", err)
	}
	sum, _ := e.app.AnalyticsSummary(e.live, SummaryQuery{From: e.clock.now(), To: e.clock.now()})
	if sum.Totals.Bounced.Hard != 1 || sum.Totals.Complained != 1 || sum.Totals.Sent != 2 || sum.Totals.Delivered != 2 {
		t.Errorf("summary %+v", sum.Totals)
	}
}

// A report that cannot be recorded is not acknowledged: the sender gets
// 451 and its retry is recorded.
func TestInboundReportNotRecordedIsRetried(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"nobody@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	verp := e.returnPaths(m)["nobody@dest.test"]
	dsn := fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "nobody@dest.test",
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com", verp)
	e.failWrites.Store(true)
	err := sendPlain(addr, "", verp, dsn)
	e.failWrites.Store(false)
	if err == nil || !strings.Contains(err.Error(), "451") {
		t.Fatalf("a DSN that could not be recorded: %v, want a 451", err)
	}
	if r := e.message(e.live, m.ID).Recipients[0]; r.Status != StatusDelivered {
		t.Fatalf("after the refused DSN: %+v", r)
	}
	if err := sendPlain(addr, "", verp, dsn); err != nil {
		t.Fatal(err)
	}
	if r := e.message(e.live, m.ID).Recipients[0]; r.Status != StatusBounced {
		t.Fatalf("after the retried DSN: %+v", r)
	}
}

func TestMailtoUnsubscribe(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test"}, Subject: text("s"), Text: text("t"),
		Stream: "broadcast"})
	e.drain()
	msg, _ := mail.ReadMessage(bytes.NewReader(e.sink.Messages()[0].Data))
	to := regexp.MustCompile(`<mailto:([^>]+)>`).FindStringSubmatch(msg.Header.Get("List-Unsubscribe"))[1]
	if err := sendPlain(addr, "ann@dest.test", to, []byte("Subject: unsubscribe\r\n\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	un := e.eventData(e.live, m.ID, EventUnsubscribed)
	if len(un) != 1 || un[0]["method"] != "mailto" {
		t.Fatalf("unsubscribed %v", un)
	}
}

func TestInvitationIsMailedFromTheSystemSender(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, func(o *Options) {
		o.SystemFrom = "Mailbolt <team@acme.test>"
		o.PublicURL = "https://mail.acme.test"
	})
	other, _ := e.app.CreateAccount(AccountInput{Name: "Other Co"})
	// The inviter may invite (team:write) without being allowed to send mail:
	// the server sends the invitation on its own authority.
	inv, ae := e.app.Invite(keyIn(other.ID, ScopeTeamWrite), "New@Dest.test", "developer")
	if ae != nil {
		t.Fatal(ae)
	}
	if inv.EmailStatus != "queued" || !strings.HasPrefix(inv.AcceptURL, "https://mail.acme.test/v1/team/accept/") {
		t.Fatalf("invitation %+v", inv)
	}
	e.drain()
	got := e.sink.Messages()
	if len(got) != 1 || got[0].To[0] != "new@dest.test" ||
		!strings.Contains(strings.ReplaceAll(string(got[0].Data), "=\r\n", ""), inv.AcceptURL) {
		t.Fatalf("invitation mail: %d messages", len(got))
	}
	if body := strings.ReplaceAll(string(got[0].Data), "=\r\n", ""); !strings.Contains(body, "the link works for 7 days") {
		t.Errorf("the invitation mail does not say how long the link works: %s", body)
	}
	if _, err := e.app.Invitee(inv.Token[:len(inv.Token)-2] + "xx"); !HasCode(err, CodeNotFound) {
		t.Fatalf("a tampered token: %v, want NOT_FOUND", err)
	}
	m, ae := e.app.AcceptInvitation(inv.Token, "", "")
	if ae != nil || m.Status != "active" || m.AcceptedAt == nil {
		t.Fatalf("accept: %+v %v", m, ae)
	}
	// The member and its invitation mail are committed together: a fault
	// on the request's second write leaves both in place (one write holds
	// them), never a member whose mail was lost.
	e.failNth.Store(2)
	inv, ae = e.app.Invite(keyIn(other.ID, ScopeTeamWrite), "fourth@dest.test", "viewer")
	e.failNth.Store(0)
	if ae != nil || inv.EmailStatus != "queued" || inv.MessageID == "" {
		t.Fatalf("invitation with a fault on a second write: %+v %v", inv, ae)
	}
	// Without a system sender the link is still returned.
	e.app.opts.SystemFrom = ""
	inv, _ = e.app.Invite(keyIn(other.ID), "second@dest.test", "viewer")
	if inv.EmailStatus != "not_configured" || inv.AcceptURL == "" {
		t.Fatalf("without --system-from: %+v", inv)
	}
	e.app.opts.SystemFrom = "team@unverified.test"
	inv, _ = e.app.Invite(keyIn(other.ID), "third@dest.test", "viewer")
	if inv.EmailStatus != "sender_unverified" {
		t.Fatalf("unverified sender: %+v", inv)
	}
}

func TestAccountTrackingDefaults(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	acct, _ := e.app.CreateAccount(AccountInput{Name: "Tracker", TrackOpens: true, TrackClicks: true})
	p := KeyPrincipal(storage.APIKey{AccountID: acct.ID, Scopes: []string{ScopeAll}, Test: true}, acct)
	m := e.send(p, MessageInput{From: "a@x.test", To: []string{"a@y.test"}, Subject: text("s"), HTML: text("<p>x</p>")})
	if !m.Tracking.Opens || !m.Tracking.Clicks {
		t.Fatalf("account defaults not applied: %+v", m.Tracking)
	}
	no := false
	m = e.send(p, MessageInput{From: "a@x.test", To: []string{"a@y.test"}, Subject: text("s"), HTML: text("<p>x</p>"),
		Tracking: &TrackingInput{Clicks: &no}})
	if !m.Tracking.Opens || m.Tracking.Clicks {
		t.Fatalf("a message's own setting must win: %+v", m.Tracking)
	}
}
