package web

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	"github.com/emersion/go-smtp"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/mta/inbound"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// received is one request a webhook receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is an httptest webhook receiver that hands each request over.
func receiver(t *testing.T) (*httptest.Server, chan received) {
	ch := make(chan received, 200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- received{r.Header.Clone(), body}
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// inboundListener runs the App's inbound SMTP listener on loopback, taking
// messages of at most maxSize bytes.
func (e *env) inboundListener(maxSize int64) string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	srv := inbound.NewServer(e.app.Inbound(), inbound.Options{Domain: "mx.mailbolt.test", MaxMessageSize: maxSize})
	go srv.Serve(ln)
	e.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// smtpReply is the SMTP reply code and enhanced code of err ("" when nil).
func smtpReply(err error) string {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return fmt.Sprintf("%d %d.%d.%d", se.Code, se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2])
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// sendSMTP runs one transaction on addr and returns the reply that ended it.
func sendSMTP(t *testing.T, addr, from string, rcpts []string, data []byte, size int64) error {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mail.sender.test"); err != nil {
		t.Fatal(err)
	}
	var opts *smtp.MailOptions
	if size > 0 {
		opts = &smtp.MailOptions{Size: size}
	}
	if err := c.Mail(from, opts); err != nil {
		return err
	}
	for _, r := range rcpts {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

// inboundDomain adds an inbound domain, publishes its MX and ownership
// records as its answer shows them, and verifies it.
func (e *env) inboundDomain(key, name string) map[string]any {
	e.t.Helper()
	d := e.do("POST", "/v1/inbound/domains", key, `{"name":"`+name+`"}`).want(e.t, 201).json(e.t)
	for _, r := range d["records"].([]any) {
		rec := r.(map[string]any)
		switch rec["type"] {
		case "MX":
			e.zone.MX(rec["name"].(string), 10, rec["value"].(string))
		case "TXT":
			e.zone.TXT(rec["name"].(string), rec["value"].(string))
		}
	}
	v := e.do("POST", "/v1/inbound/domains/"+d["id"].(string)+"/verify", key, nil).want(e.t, 200).json(e.t)
	if v["status"] != "verified" {
		e.t.Fatalf("inbound domain not verified: %v", v)
	}
	return v
}

// signedMessage is a multipart message from ann@sender.test, DKIM-signed
// with a key published in the zone, with a small and a large attachment.
func (e *env) signedMessage(t *testing.T, large int) (raw, small, big []byte) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	e.zone.TXT("sel._domainkey.sender.test", "v=DKIM1; k=ed25519; p="+base64.StdEncoding.EncodeToString(pub))
	small = []byte("a small attachment\x00\x01\x02")
	big = bytes.Repeat([]byte("0123456789abcdef"), large/16)
	b64 := func(p []byte) string {
		s := base64.StdEncoding.EncodeToString(p)
		var out strings.Builder
		for len(s) > 76 {
			out.WriteString(s[:76] + "\r\n")
			s = s[76:]
		}
		out.WriteString(s + "\r\n")
		return out.String()
	}
	msg := "From: Ann Sender <ann@sender.test>\r\n" +
		"To: Support <support@in.acme.test>\r\n" +
		"Cc: other@example.test\r\n" +
		"Subject: =?UTF-8?Q?Caf=C3=A9_order?=\r\n" +
		"Date: Sun, 22 Nov 2026 12:00:00 +0000\r\n" +
		"Message-ID: <order-1@sender.test>\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=outer\r\n\r\n" +
		"--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n" +
		"--inner\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello, where is my order?\r\n" +
		"--inner\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Hello, where is my <b>order</b>?</p>\r\n" +
		"--inner--\r\n" +
		"--outer\r\nContent-Type: application/octet-stream; name=small.bin\r\nContent-Disposition: attachment; filename=small.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(small) +
		"--outer\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=big.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(big) +
		"--outer--\r\n"
	var signed bytes.Buffer
	if err := dkim.Sign(&signed, strings.NewReader(msg), &dkim.SignOptions{Domain: "sender.test", Selector: "sel", Signer: crypto.Signer(priv)}); err != nil {
		t.Fatal(err)
	}
	return signed.Bytes(), small, big
}

// TestInboundMailReachesTheRoutesWebhook: a message to a routed address is
// taken, stored, and arrives at the route's webhook signed, with its parts
// and the SPF, DKIM and DMARC results; the raw message is served as it
// arrived; unrouted, oversized and foreign mail is refused in SMTP.
func TestInboundMailReachesTheRoutesWebhook(t *testing.T) {
	e := newEnvWith(t, DefaultConfig(), func(o *app.Options) { o.PublicURL = "https://mail.acme.test" })
	e.runWorkers()
	hookSrv, got := receiver(t)
	otherSrv, otherGot := receiver(t)
	// The route's webhook is subscribed to something else: the route
	// decides, not the event list. The other one asks for email.received
	// and must get nothing: the event goes to the route's webhook only.
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.delivered"}}).want(t, 201).json(t)
	other := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": otherSrv.URL, "events": []string{"email.received"}}).want(t, 201).json(t)

	// Verification needs the MX and the token, both.
	d := e.do("POST", "/v1/inbound/domains", e.key, `{"name":"In.Acme.TEST"}`).want(t, 201).json(t)
	id := d["id"].(string)
	if d["name"] != "in.acme.test" || d["status"] != "pending" {
		t.Fatalf("created %v", d)
	}
	recs := d["records"].([]any)
	mx, txt := recs[0].(map[string]any), recs[1].(map[string]any)
	if mx["type"] != "MX" || mx["value"] != "mx.mailbolt.test" || txt["name"] != "_mailbolt.in.acme.test" ||
		!strings.HasPrefix(txt["value"].(string), "mailbolt-verify=") {
		t.Fatalf("records %v", recs)
	}
	e.do("POST", "/v1/inbound/domains", e.key, `{"name":"in.acme.test"}`).want(t, 409, "CONFLICT")
	e.zone.MX("in.acme.test", 10, "mx.mailbolt.test")
	v := e.do("POST", "/v1/inbound/domains/"+id+"/verify", e.key, nil).want(t, 200).json(t)
	if v["status"] != "pending" || v["records"].([]any)[0].(map[string]any)["status"] != "verified" ||
		v["records"].([]any)[1].(map[string]any)["status"] != "missing" {
		t.Fatalf("verified on the MX alone: %v", v)
	}
	// A lookup that fails changes nothing but check_error: the records
	// keep what the last completed check found, for a record stored before
	// found_at was kept too.
	if err := e.db.Update(func(tx *storage.Tx) error {
		d, err := tx.InboundDomain(e.acct.ID, id)
		if err != nil {
			return err
		}
		d.FoundAt = nil
		return tx.UpdateInboundDomain(d)
	}); err != nil {
		t.Fatal(err)
	}
	e.zone.ServFail("_mailbolt.in.acme.test", true)
	for range 2 {
		v = e.do("POST", "/v1/inbound/domains/"+id+"/verify", e.key, nil).want(t, 200).json(t)
		if v["check_error"] == nil || v["status"] != "pending" || v["records"].([]any)[0].(map[string]any)["status"] != "verified" ||
			v["records"].([]any)[1].(map[string]any)["status"] != "missing" {
			t.Fatalf("after a SERVFAIL: %v", v)
		}
	}
	e.zone.ServFail("_mailbolt.in.acme.test", false)
	e.zone.TXT("_mailbolt.in.acme.test", txt["value"].(string))
	if v := e.do("POST", "/v1/inbound/domains/"+id+"/verify", e.key, nil).want(t, 200).json(t); v["status"] != "verified" {
		t.Fatalf("MX and token published: %v", v)
	}

	// Another account: the same name, its own token published too, but
	// the name is taken; and it sees nothing of the first account's.
	acct2, key2 := e.account("rival", "enterprise", 100000)
	_ = acct2
	d2 := e.do("POST", "/v1/inbound/domains", key2, `{"name":"in.acme.test"}`).want(t, 201).json(t)
	e.zone.TXT("_mailbolt.in.acme.test", d2["records"].([]any)[1].(map[string]any)["value"].(string))
	e.do("POST", "/v1/inbound/domains/"+d2["id"].(string)+"/verify", key2, nil).want(t, 409, "CONFLICT")
	e.do("GET", "/v1/inbound/domains/"+id, key2, nil).want(t, 404, "NOT_FOUND")
	e.do("DELETE", "/v1/inbound/domains/"+id, key2, nil).want(t, 404, "NOT_FOUND")
	hook2 := e.do("POST", "/v1/webhooks", key2, map[string]any{"url": otherSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	e.do("POST", "/v1/inbound/routes", key2, map[string]any{"domain_id": id, "pattern": "*", "webhook_id": hook2["id"]}).want(t, 400, "VALIDATION_ERROR")

	// Routes.
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": id, "pattern": "sup port", "webhook_id": hook["id"]}).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": id, "pattern": "support", "webhook_id": hook2["id"]}).want(t, 400, "VALIDATION_ERROR")
	route := e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": id, "pattern": "Support", "webhook_id": hook["id"]}).want(t, 201).json(t)
	if route["pattern"] != "support" {
		t.Fatalf("route %v", route)
	}
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": id, "pattern": "support", "webhook_id": hook["id"]}).want(t, 409, "CONFLICT")
	e.do("GET", "/v1/inbound/routes/"+route["id"].(string), e.key, nil).want(t, 200)
	e.do("GET", "/v1/inbound/routes/"+route["id"].(string), key2, nil).want(t, 404, "NOT_FOUND")
	if l := e.do("GET", "/v1/inbound/routes?page=1", e.key, nil).want(t, 200).json(t); l["total"] != 1.0 {
		t.Fatalf("routes %v", l)
	}
	if l := e.do("GET", "/v1/inbound/domains", key2, nil).want(t, 200).json(t); len(l["data"].([]any)) != 1 {
		t.Fatalf("the rival's domains %v", l)
	}

	// The sender's domain: SPF for loopback, a DKIM key, DMARC reject.
	e.zone.TXT("sender.test", "v=spf1 ip4:127.0.0.1 -all")
	e.zone.TXT("_dmarc.sender.test", "v=DMARC1; p=reject")
	raw, small, big := e.signedMessage(t, 1<<20+4096)
	addr := e.inboundListener(2 << 20)

	// Refused in SMTP: unrouted at RCPT, a name that is no inbound
	// domain, and too large (by SIZE, then at DATA).
	if r := smtpReply(sendSMTP(t, addr, "ann@sender.test", []string{"nobody@in.acme.test"}, raw, 0)); r != "550 5.1.1" {
		t.Errorf("unrouted address: %q", r)
	}
	if r := smtpReply(sendSMTP(t, addr, "ann@sender.test", []string{"support@elsewhere.test"}, raw, 0)); r != "550 5.7.1" {
		t.Errorf("a domain nobody receives for: %q", r)
	}
	if r := smtpReply(sendSMTP(t, addr, "ann@sender.test", []string{"support@in.acme.test"}, raw, 3<<20)); r != "552 5.3.4" {
		t.Errorf("SIZE over the limit: %q", r)
	}
	huge := bytes.Repeat([]byte(strings.Repeat("x", 76)+"\r\n"), (3<<20)/78)
	if r := smtpReply(sendSMTP(t, addr, "ann@sender.test", []string{"support@in.acme.test"}, append([]byte("Subject: big\r\n\r\n"), huge...), 0)); r != "552 5.3.4" {
		t.Errorf("DATA over the limit: %q", r)
	}

	// Taken: support+tag goes where support goes.
	if err := sendSMTP(t, addr, "ann@sender.test", []string{"Support+Order@in.acme.test"}, raw, 0); err != nil {
		t.Fatalf("routed mail refused: %v", err)
	}
	var req received
	select {
	case req = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the route's webhook got nothing")
	}
	secret := hook["secret"].(string)
	if err := hooks.Verify(req.body, req.header.Get("X-Service-Signature"), []string{secret}, e.clock.Now(), 5*time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var ev struct {
		ID    string `json:"id"`
		Event string `json:"event"`
		Data  struct {
			InboundMessageID string            `json:"inboundMessageId"`
			RouteID          string            `json:"routeId"`
			Envelope         map[string]string `json:"envelope"`
			From, Subject    string
			To, Cc           []string
			Text, HTML       string
			Headers          []map[string]string
			Attachments      []struct {
				Filename string
				Size     int
				Content  *string
				Omitted  bool
				RawURL   string `json:"rawUrl"`
			}
			Spam struct {
				Verdict string
				SPF     map[string]string
				DKIM    []map[string]string
				DMARC   map[string]any
			}
			RawURL string `json:"rawUrl"`
		} `json:"data"`
	}
	if err := json.Unmarshal(req.body, &ev); err != nil {
		t.Fatal(err)
	}
	dd := ev.Data
	if ev.Event != "email.received" || dd.RouteID != route["id"] || dd.Envelope["rcptTo"] != "support+order@in.acme.test" ||
		dd.Envelope["mailFrom"] != "ann@sender.test" || dd.Envelope["remoteIp"] != "127.0.0.1" || dd.Envelope["helo"] != "mail.sender.test" {
		t.Errorf("event %s %+v", ev.Event, dd)
	}
	if dd.From != "Ann Sender <ann@sender.test>" || dd.Subject != "Café order" || len(dd.To) != 1 || dd.To[0] != "Support <support@in.acme.test>" ||
		len(dd.Cc) != 1 || !strings.Contains(dd.Text, "where is my order") || !strings.Contains(dd.HTML, "<b>order</b>") || len(dd.Headers) < 8 {
		t.Errorf("parsed parts: %+v", dd)
	}
	if len(dd.Attachments) != 2 {
		t.Fatalf("attachments %+v", dd.Attachments)
	}
	if a := dd.Attachments[0]; a.Filename != "small.bin" || a.Content == nil || *a.Content != base64.StdEncoding.EncodeToString(small) || a.Omitted {
		t.Errorf("small attachment %+v", a)
	}
	if a := dd.Attachments[1]; a.Filename != "big.pdf" || a.Content != nil || !a.Omitted || a.Size != len(big) || a.RawURL != dd.RawURL {
		t.Errorf("large attachment %+v", a)
	}
	if s := dd.Spam; s.SPF["result"] != "pass" || len(s.DKIM) != 1 || s.DKIM[0]["result"] != "pass" || s.DKIM[0]["domain"] != "sender.test" ||
		s.DMARC["result"] != "pass" || s.DMARC["policy"] != "reject" || s.Verdict == "" {
		t.Errorf("spam %+v", s)
	}
	if dd.RawURL != "https://mail.acme.test/v1/inbound/messages/"+dd.InboundMessageID+"/raw" {
		t.Errorf("rawUrl %q", dd.RawURL)
	}

	// The raw message, exactly as it arrived; another account's is 404.
	r := e.do("GET", "/v1/inbound/messages/"+dd.InboundMessageID+"/raw", e.key, nil).want(t, 200)
	if r.Header.Get("Content-Type") != "message/rfc822" || !bytes.Equal(r.body, raw) {
		t.Errorf("raw: %s, %d bytes, want %d", r.Header.Get("Content-Type"), len(r.body), len(raw))
	}
	e.do("GET", "/v1/inbound/messages/"+dd.InboundMessageID+"/raw", key2, nil).want(t, 404, "NOT_FOUND")
	readOnly := e.newKey(e.acct.ID, []string{"inbound:read"}, false, nil)
	e.do("GET", "/v1/inbound/messages/"+dd.InboundMessageID+"/raw", readOnly, nil).want(t, 200)
	e.do("POST", "/v1/inbound/domains", readOnly, `{"name":"x.acme.test"}`).want(t, 403, "INSUFFICIENT_SCOPES")

	// Stored like every event; the event went to the route's webhook only.
	evs := e.do("GET", "/v1/events?type=email.received", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["id"] != ev.ID {
		t.Fatalf("events %v", evs)
	}
	waitFor(t, func() bool {
		l := e.do("GET", "/v1/webhooks/"+hook["id"].(string)+"/deliveries", e.key, nil).want(t, 200).json(t)["data"].([]any)
		return len(l) == 1
	})
	if l := e.do("GET", "/v1/webhooks/"+other["id"].(string)+"/deliveries", e.key, nil).want(t, 200).json(t)["data"].([]any); len(l) != 0 {
		t.Errorf("a webhook that is not the route's got the event: %v", l)
	}
	select {
	case r := <-otherGot:
		t.Errorf("the other webhook was sent %s", r.body)
	default:
	}

	// Deleting the route refuses the address again.
	e.do("DELETE", "/v1/inbound/routes/"+route["id"].(string), e.key, nil).want(t, 204)
	if r := smtpReply(sendSMTP(t, addr, "ann@sender.test", []string{"support@in.acme.test"}, raw, 0)); r != "550 5.1.1" {
		t.Errorf("after the route was deleted: %q", r)
	}
	e.do("DELETE", "/v1/inbound/domains/"+id, e.key, nil).want(t, 204)
	e.do("GET", "/v1/inbound/domains/"+id, e.key, nil).want(t, 404, "NOT_FOUND")
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(end) {
			t.Fatal("condition never held")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInboundQuota: an account on the free plan takes 100 messages a day;
// the next is refused with 452 at RCPT, and the next day is taken again.
func TestInboundQuota(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	acct, key := e.account("small", "free", 100000)
	_ = acct
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(key, "in.small.test")
	e.do("POST", "/v1/inbound/routes", key, map[string]any{"domain_id": d["id"], "pattern": "*", "webhook_id": hook["id"]}).want(t, 201)
	addr := e.inboundListener(0)
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := []byte("From: a@sender.test\r\nSubject: hi\r\n\r\nhello\r\n")
	send := func() error {
		if err := c.Mail("a@sender.test", nil); err != nil {
			return err
		}
		if err := c.Rcpt("anyone@in.small.test", nil); err != nil {
			c.Reset()
			return err
		}
		w, err := c.Data()
		if err != nil {
			return err
		}
		w.Write(msg)
		return w.Close()
	}
	for i := range 99 {
		if err := send(); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	// Two copies would make 101: both recipients pass RCPT (99 taken), the
	// message is refused whole at the end of DATA.
	if r := smtpReply(sendSMTP(t, addr, "a@sender.test", []string{"one@in.small.test", "two@in.small.test"}, msg, 0)); r != "452 4.2.2" {
		t.Fatalf("two copies past the quota: %q", r)
	}
	if err := send(); err != nil {
		t.Fatalf("message 100: %v", err)
	}
	if r := smtpReply(send()); r != "452 4.2.2" {
		t.Fatalf("message 101: %q", r)
	}
	if n := len(e.do("GET", "/v1/events?type=email.received&limit=200", key, nil).want(t, 200).json(t)["data"].([]any)); n != 100 {
		t.Errorf("%d events, want 100", n)
	}
	e.clock.Add(24 * time.Hour)
	if err := send(); err != nil {
		t.Errorf("the next day: %v", err)
	}
}

// TestInboundDurableBefore250: when the commit of the raw message and its
// event fails, the sender gets 451 and nothing is kept; sent again, it is
// taken and stored.
func TestInboundDurableBefore250(t *testing.T) {
	crash := &crashAfter{}
	sopts := storagetest.Options(t)
	sopts.WriteFault = crash.fault
	e := newEnvOn(t, DefaultConfig(), sopts, nil)
	hookSrv, _ := receiver(t)
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	d := e.inboundDomain(e.key, "in.acme.test")
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": d["id"], "pattern": "*", "webhook_id": hook["id"]}).want(t, 201)
	addr := e.inboundListener(0)
	msg := []byte("From: a@sender.test\r\nSubject: hi\r\n\r\nhello\r\n")

	crash.arm(0) // the next write fails: the one that stores the message
	if r := smtpReply(sendSMTP(t, addr, "a@sender.test", []string{"x@in.acme.test"}, msg, 0)); r != "451 4.3.0" {
		t.Fatalf("a failed commit answered %q", r)
	}
	crash.disarm()
	if n := len(e.do("GET", "/v1/events?type=email.received", e.key, nil).want(t, 200).json(t)["data"].([]any)); n != 0 {
		t.Fatalf("%d events kept from a message that was not acknowledged", n)
	}
	if err := sendSMTP(t, addr, "a@sender.test", []string{"x@in.acme.test"}, msg, 0); err != nil {
		t.Fatalf("sent again: %v", err)
	}
	evs := e.do("GET", "/v1/events?type=email.received", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(evs) != 1 {
		t.Fatalf("%d events after the retry", len(evs))
	}
	id := evs[0].(map[string]any)["data"].(map[string]any)["inboundMessageId"].(string)
	if r := e.do("GET", "/v1/inbound/messages/"+id+"/raw", e.key, nil).want(t, 200); !bytes.Equal(r.body, msg) {
		t.Errorf("raw %q", r.body)
	}
}
