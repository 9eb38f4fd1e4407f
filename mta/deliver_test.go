package mta

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
)

// Loopback addresses of the test servers. 127.0.0.2 is kept for source
// binding; every 127.0.0.0/8 address works on Linux without setup.
const (
	ipMX      = "127.0.0.1"
	ipSource  = "127.0.0.2"
	ipBackup  = "127.0.0.3"
	ipRefused = "127.0.0.4" // nothing listens here
	ipBusy    = "127.0.0.5"
)

// testData is CRLF text with lines that need dot-stuffing and bytes
// outside ASCII, so that "byte-exact" means something.
var testData = []byte("From: Sender <sender@mailbolt.test>\r\n" +
	"To: rcpt@example.test\r\n" +
	"Subject: test\r\n" +
	"\r\n" +
	".a line that starts with a dot\r\n" +
	"..and one with two\r\n" +
	".\r\n" +
	"caf\xc3\xa9\r\n" +
	"end\r\n")

// newDeliverer routes through zone to servers on port, with short timeouts.
// The test MX hosts are on loopback, which it allows explicitly (the
// default refuses it: guard_test.go).
func newDeliverer(t *testing.T, zone *dnstest.Server, port int) *Deliverer {
	o := DefaultOptions()
	o.MXGuard.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	o.HELO = "out.mailbolt.test"
	o.ConnectTimeout, o.CommandTimeout, o.DataTimeout, o.IdleTimeout = 2*time.Second, 2*time.Second, 2*time.Second, time.Minute
	if port != 0 {
		o.MXPort = port
	}
	if zone != nil {
		o.Resolver = &dns.Resolver{Server: zone.Addr, Timeout: time.Second}
	}
	d, err := NewDeliverer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func envelope(to ...string) Envelope {
	return Envelope{From: "bounces+abc@mailbolt.test", To: to, Data: testData}
}

func only(t *testing.T, rs []RecipientResult) RecipientResult {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("got %d results, want 1: %+v", len(rs), rs)
	}
	return rs[0]
}

func wantStatus(t *testing.T, r RecipientResult, status Status, bounce Bounce) {
	t.Helper()
	if r.Status != status || r.Bounce != bounce {
		t.Fatalf("%s: got %s %+v (%d %s %q from %q), want %s %+v", r.Recipient, r.Status, r.Bounce, r.Code, r.Enhanced, r.Text, r.Host, status, bounce)
	}
}

func TestDeliverByteExact(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)

	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if r.Code != 250 || r.Enhanced != "2.0.0" || r.Text != "OK: queued" || r.Host != "mx.example.test" || r.TLS {
		t.Fatalf("result = %+v", r)
	}
	msgs := mx.Messages()
	if len(msgs) != 1 {
		t.Fatalf("server got %d messages", len(msgs))
	}
	m := msgs[0]
	if !bytes.Equal(m.Data, testData) {
		t.Fatalf("data differs:\n got %q\nwant %q", m.Data, testData)
	}
	if m.From != "bounces+abc@mailbolt.test" || len(m.To) != 1 || m.To[0] != "rcpt@example.test" {
		t.Fatalf("envelope = %q -> %q", m.From, m.To)
	}
	if m.HELO != "out.mailbolt.test" {
		t.Fatalf("EHLO name = %q", m.HELO)
	}
	// SIZE is declared since the server offers it (RFC 1870).
	if mail := mx.CommandLines(0, "MAIL"); len(mail) != 1 || !strings.Contains(mail[0], "SIZE=") {
		t.Fatalf("MAIL = %q", mail)
	}
}

func TestRecipientsOfOneDomainShareOneTransaction(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	mx.Rcpt = func(to string) error {
		switch {
		case strings.HasPrefix(to, "nobody@"):
			return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"}
		case strings.HasPrefix(to, "full@"):
			return &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 2, 2}, Message: "Mailbox full"}
		case strings.HasPrefix(to, "later@"):
			return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 2, 0}, Message: "Mailbox busy"}
		}
		return nil
	}
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)

	rs := d.Send(context.Background(), envelope("a@example.test", "nobody@example.test", "full@example.test", "later@example.test", "b@EXAMPLE.test"))
	wantStatus(t, rs[0], StatusDelivered, Bounce{})
	wantStatus(t, rs[1], StatusPermanent, Bounce{BounceHard, CategoryUnknownUser})
	wantStatus(t, rs[2], StatusPermanent, Bounce{BounceSoft, CategoryMailboxFull})
	wantStatus(t, rs[3], StatusTemporary, Bounce{BounceSoft, CategoryTemporary})
	wantStatus(t, rs[4], StatusDelivered, Bounce{})
	if rs[1].Code != 550 || rs[1].Enhanced != "5.1.1" || rs[1].Text != "No such user" {
		t.Fatalf("refusal = %+v", rs[1])
	}
	cmds := mx.Commands()
	if len(cmds) != 1 {
		t.Fatalf("%d connections, want 1", len(cmds))
	}
	if count(cmds[0], "MAIL") != 1 || count(cmds[0], "RCPT") != 5 || count(cmds[0], "DATA") != 1 {
		t.Fatalf("commands = %v, want one MAIL, five RCPT, one DATA", cmds[0])
	}
	msgs := mx.Messages()
	if len(msgs) != 1 || strings.Join(msgs[0].To, ",") != "a@example.test,b@EXAMPLE.test" {
		t.Fatalf("messages = %+v", msgs)
	}
}

func TestRecipientsOfTwoDomainsGetATransactionEach(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("one.test", 10, "mx.example.test")
	zone.MX("two.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)

	rs := d.Send(context.Background(), envelope("a@one.test", "b@two.test", "c@one.test"))
	for _, r := range rs {
		wantStatus(t, r, StatusDelivered, Bounce{})
	}
	msgs := mx.Messages()
	if len(msgs) != 2 || strings.Join(msgs[0].To, ",") != "a@one.test,c@one.test" || strings.Join(msgs[1].To, ",") != "b@two.test" {
		t.Fatalf("messages = %+v", msgs)
	}
}

func TestMXPreferenceAndFallback(t *testing.T) {
	good := startMX(t, ipMX+":0")
	busy := startGreeter(t, good.at(ipBusy), "421 4.3.2 Too busy, try later")
	zone := dnstest.Start(t)
	// Written out of order: preference decides, not the zone.
	zone.MX("example.test", 30, "mx3.example.test")
	zone.MX("example.test", 10, "mx1.example.test")
	zone.MX("example.test", 20, "mx2.example.test")
	zone.A("mx1.example.test", ipRefused) // connection refused
	zone.A("mx2.example.test", ipBusy)    // 421 at the greeting
	zone.A("mx3.example.test", ipMX)
	d := newDeliverer(t, zone, good.Port)

	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if r.Host != "mx3.example.test" || len(good.Messages()) != 1 || busy() != 1 {
		t.Fatalf("host %q, %d messages, busy MX saw %d connections", r.Host, len(good.Messages()), busy())
	}

	// The most preferred MX that answers takes the mail; the others are
	// not contacted.
	backup := startMX(t, good.at(ipBackup))
	zone.MX("pref.test", 5, "a.pref.test")
	zone.MX("pref.test", 50, "b.pref.test")
	zone.A("a.pref.test", ipMX)
	zone.A("b.pref.test", ipBackup)
	r = only(t, d.Send(context.Background(), envelope("rcpt@pref.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if r.Host != "a.pref.test" || backup.Conns() != 0 {
		t.Fatalf("host %q, backup saw %d connections", r.Host, backup.Conns())
	}
}

func TestEveryMXFailingIsTemporary(t *testing.T) {
	good := startMX(t, ipMX+":0") // only for its port
	startGreeter(t, good.at(ipBusy), "421 4.3.2 Too busy, try later")
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx1.example.test")
	zone.MX("example.test", 20, "mx2.example.test")
	zone.A("mx1.example.test", ipRefused)
	zone.A("mx2.example.test", ipBusy)
	d := newDeliverer(t, zone, good.Port)

	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusTemporary, Bounce{BounceSoft, CategoryTemporary})
	if r.Code != 421 || r.Enhanced != "4.3.2" || r.Host != "mx2.example.test" {
		t.Fatalf("result = %+v", r)
	}

	zone.MX("refused.test", 10, "mx1.example.test")
	r = only(t, d.Send(context.Background(), envelope("rcpt@refused.test")))
	wantStatus(t, r, StatusTemporary, Bounce{BounceSoft, CategoryNetwork})
	if r.Code != 0 || r.Enhanced != "4.4.1" {
		t.Fatalf("result = %+v", r)
	}
}

func TestImplicitMX(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.A("example.test", ipMX) // no MX: the domain is its own mail host
	d := newDeliverer(t, zone, mx.Port)

	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if r.Host != "example.test" || len(mx.Messages()) != 1 {
		t.Fatalf("host %q, %d messages", r.Host, len(mx.Messages()))
	}

	// Neither MX nor address: the domain cannot take mail.
	r = only(t, d.Send(context.Background(), envelope("rcpt@nowhere.test")))
	wantStatus(t, r, StatusPermanent, Bounce{BounceHard, CategoryBadDomain})
	if r.Enhanced != "5.1.2" {
		t.Fatalf("result = %+v", r)
	}

	// MX hosts without addresses: no route, but the address is not
	// proven bad.
	zone.MX("dangling.test", 10, "gone.dangling.test")
	r = only(t, d.Send(context.Background(), envelope("rcpt@dangling.test")))
	wantStatus(t, r, StatusPermanent, Bounce{BounceSoft, CategoryNoRoute})
}

func TestNullMXBouncesWithoutConnecting(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("example.test", 0, ".")
	zone.A("example.test", ipMX) // an implicit MX would connect here
	d := newDeliverer(t, zone, mx.Port)

	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusPermanent, Bounce{BounceHard, CategoryNullMX})
	if r.Enhanced != "5.1.10" || r.Code != 0 {
		t.Fatalf("result = %+v", r)
	}
	if mx.Conns() != 0 {
		t.Fatalf("server saw %d connections", mx.Conns())
	}
}

func TestDNSFailureIsTemporary(t *testing.T) {
	zone := dnstest.Start(t)
	zone.ServFail("example.test", true)
	d := newDeliverer(t, zone, 25)
	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusTemporary, Bounce{BounceSoft, CategoryTemporary})
	if r.Enhanced != "4.4.3" {
		t.Fatalf("result = %+v", r)
	}
}

func TestSourceAddressAndEHLOName(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)

	env := envelope("rcpt@example.test")
	env.SourceIP = net.ParseIP(ipSource)
	env.HELO = "ip2.mailbolt.test"
	wantStatus(t, only(t, d.Send(context.Background(), env)), StatusDelivered, Bounce{})
	m := mx.Messages()[0]
	if m.Remote != ipSource || m.HELO != "ip2.mailbolt.test" {
		t.Fatalf("server saw %s saying EHLO %s", m.Remote, m.HELO)
	}

	// An IPv6 source cannot reach an IPv4-only MX.
	env.SourceIP = net.ParseIP("::1")
	r := only(t, d.Send(context.Background(), env))
	wantStatus(t, r, StatusTemporary, Bounce{BounceSoft, CategoryNoRoute})
}

func TestScriptedFailures(t *testing.T) {
	refuse := func(code int, enh smtp.EnhancedCode, msg string) error {
		return &smtp.SMTPError{Code: code, EnhancedCode: enh, Message: msg}
	}
	tests := []struct {
		name     string
		script   func(mx *testMX)
		status   Status
		bounce   Bounce
		code     int
		enh      string
		reusable bool // the next send reuses the connection
	}{
		{"450 at RCPT", func(mx *testMX) {
			mx.Rcpt = func(string) error { return refuse(450, smtp.EnhancedCode{4, 2, 0}, "Greylisted, try again later") }
		}, StatusTemporary, Bounce{BounceSoft, CategoryTemporary}, 450, "4.2.0", true},
		{"550 5.1.1 at RCPT", func(mx *testMX) {
			mx.Rcpt = func(string) error { return refuse(550, smtp.EnhancedCode{5, 1, 1}, "User unknown") }
		}, StatusPermanent, Bounce{BounceHard, CategoryUnknownUser}, 550, "5.1.1", true},
		{"552 5.2.2 at RCPT", func(mx *testMX) {
			mx.Rcpt = func(string) error { return refuse(552, smtp.EnhancedCode{5, 2, 2}, "Mailbox full") }
		}, StatusPermanent, Bounce{BounceSoft, CategoryMailboxFull}, 552, "5.2.2", true},
		{"554 5.7.1 after DATA", func(mx *testMX) {
			mx.Data = func(s *mxSession, r io.Reader) error {
				io.Copy(io.Discard, r)
				return refuse(554, smtp.EnhancedCode{5, 7, 1}, "Message refused by policy")
			}
		}, StatusPermanent, Bounce{BounceBlock, CategoryPolicy}, 554, "5.7.1", true},
		{"550 5.7.1 at MAIL", func(mx *testMX) {
			mx.Mail = func(string) error {
				return refuse(550, smtp.EnhancedCode{5, 7, 1}, "Client host blocked using zen.spamhaus.org")
			}
		}, StatusPermanent, Bounce{BounceBlock, CategorySpamBlock}, 550, "5.7.1", true},
		{"421 at RCPT", func(mx *testMX) {
			mx.Rcpt = func(string) error { return refuse(421, smtp.EnhancedCode{4, 7, 0}, "Too many messages, closing") }
		}, StatusTemporary, Bounce{BounceSoft, CategoryPolicy}, 421, "4.7.0", false},
		{"connection dropped in DATA", func(mx *testMX) {
			mx.Data = func(s *mxSession, r io.Reader) error {
				r.Read(make([]byte, 10))
				s.conn.Conn().Close()
				return errors.New("dropped")
			}
		}, StatusTemporary, Bounce{BounceSoft, CategoryNetwork}, 0, "4.4.2", false},
		{"stall at RCPT", func(mx *testMX) {
			mx.Rcpt = func(string) error { mx.Stall(); return nil }
		}, StatusTemporary, Bounce{BounceSoft, CategoryTimeout}, 0, "4.4.2", false},
		{"stall after the final dot", func(mx *testMX) {
			mx.Data = func(s *mxSession, r io.Reader) error { io.Copy(io.Discard, r); mx.Stall(); return nil }
		}, StatusTemporary, Bounce{BounceSoft, CategoryTimeout}, 0, "4.4.2", false},
		{"SIZE too small", func(mx *testMX) {
			mx.srv.MaxMessageBytes = 10
		}, StatusPermanent, Bounce{BounceSoft, CategoryMessageTooLarge}, 0, "5.3.4", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mx := startMX(t, ipMX+":0")
			tt.script(mx)
			zone := dnstest.Start(t)
			zone.MX("example.test", 10, "mx.example.test")
			zone.A("mx.example.test", ipMX)
			d := newDeliverer(t, zone, mx.Port)
			d.opts.CommandTimeout = 200 * time.Millisecond
			d.opts.DataTimeout = 200 * time.Millisecond

			r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
			wantStatus(t, r, tt.status, tt.bounce)
			if r.Code != tt.code || r.Enhanced != tt.enh || r.Host != "mx.example.test" {
				t.Fatalf("result = %+v", r)
			}
			if len(mx.Messages()) != 0 {
				t.Fatal("the server kept a message")
			}
			// Whether the session survived: a second send (with the same
			// script) reuses it or opens another.
			d.Send(context.Background(), envelope("rcpt@example.test"))
			want := 2
			if tt.reusable {
				want = 1
			}
			if mx.Conns() != want {
				t.Fatalf("%d connections after a second send, want %d", mx.Conns(), want)
			}
		})
	}
}

func TestCanceledSend(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	ctx, cancel := context.WithCancel(context.Background())
	// The server cancels the send while it keeps the client waiting.
	mx.Rcpt = func(string) error { cancel(); mx.Stall(); return nil }
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)
	d.opts.CommandTimeout = time.Minute

	r := only(t, d.Send(ctx, envelope("rcpt@example.test")))
	if r.Status != StatusTemporary || !strings.Contains(r.Text, "canceled") {
		t.Fatalf("result = %+v", r)
	}
}

func TestBadAddresses(t *testing.T) {
	d := newDeliverer(t, nil, 0)
	rs := d.Send(context.Background(), Envelope{From: "a@b.test", To: []string{"no-at-sign", "x@y.test>\r\nRSET"}})
	for _, r := range rs {
		wantStatus(t, r, StatusPermanent, Bounce{BounceHard, CategoryBadAddress})
	}
	rs = d.Send(context.Background(), Envelope{From: "a@b.test>\r\n", To: []string{"x@y.test"}})
	wantStatus(t, only(t, rs), StatusPermanent, Bounce{BounceSoft, CategorySenderRejected})
}
