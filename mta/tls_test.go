package mta

import (
	"bytes"
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"mailbolt/mta/dns/dnstest"
)

func TestOpportunisticSTARTTLS(t *testing.T) {
	cert, _ := selfSigned(t, "mx.test") // trusted by nobody
	mx := startMX(t, ipMX+":0", withTLS(cert))
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)

	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if !r.TLS {
		t.Fatal("result says no TLS")
	}
	if !strings.HasPrefix(r.TLSVersion, "TLS 1.") {
		t.Errorf("TLS version %q, want the negotiated one named", r.TLSVersion)
	}
	m := mx.Messages()[0]
	if !m.TLS || m.HELO != "out.mailbolt.test" || !bytes.Equal(m.Data, testData) {
		t.Fatalf("server saw TLS %v, EHLO %q", m.TLS, m.HELO)
	}
	// Before TLS, too, the client named itself (not "localhost").
	if c := mx.Commands()[0]; len(c) < 2 || c[0] != "EHLO" || c[1] != "STARTTLS" {
		t.Fatalf("cleartext commands = %v", c)
	}
	if ehlo := mx.CommandLines(0, "EHLO"); len(ehlo) == 0 || ehlo[0] != "EHLO out.mailbolt.test" {
		t.Fatalf("cleartext EHLO = %q", ehlo)
	}

	// The session after STARTTLS is reused like any other.
	wantStatus(t, only(t, d.Send(context.Background(), envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
	if mx.Conns() != 1 || !mx.Messages()[1].TLS {
		t.Fatalf("%d connections", mx.Conns())
	}
}

func TestBrokenTLSFallsBackToCleartext(t *testing.T) {
	cert, _ := selfSigned(t, "mx.test")
	mx := startMX(t, ipMX+":0", withTLS(cert))
	mx.srv.TLSConfig.MaxVersion = tls.VersionTLS11 // the client needs 1.2
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)

	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if r.TLS || mx.Conns() != 2 || mx.Messages()[0].TLS {
		t.Fatalf("TLS %v, %d connections", r.TLS, mx.Conns())
	}
}

// startRelay runs a relay that wants TLS and AUTH PLAIN, with a
// certificate for 127.0.0.1 and a pool trusting it.
func startRelay(t *testing.T, opts ...mxOption) (*testMX, *tls.Config) {
	cert, roots := selfSigned(t, ipMX)
	mx := startMX(t, ipMX+":0", append([]mxOption{withTLS(cert)}, opts...)...)
	mx.User, mx.Pass = "mailbolt", "s3cret"
	return mx, &tls.Config{RootCAs: roots}
}

func TestRelayWithAuth(t *testing.T) {
	mx, roots := startRelay(t)
	// No resolver: a relay given by address needs no DNS.
	d := newDeliverer(t, nil, 0)
	d.opts.Relay = &Relay{Addr: mx.Addr, Username: "mailbolt", Password: "s3cret", TLSConfig: roots}

	rs := d.Send(context.Background(), envelope("a@one.test", "b@two.test"))
	for _, r := range rs {
		wantStatus(t, r, StatusDelivered, Bounce{})
		if !r.TLS || r.Host != ipMX {
			t.Fatalf("result = %+v", r)
		}
	}
	msgs := mx.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 2 || msgs[0].User != "mailbolt" || !msgs[0].TLS {
		t.Fatalf("relay got %+v", msgs)
	}
}

func TestRelayOverImplicitTLS(t *testing.T) {
	cert, roots := selfSigned(t, ipMX)
	mx := startMX(t, ipMX+":0", withImplicitTLS(cert))
	mx.User, mx.Pass = "mailbolt", "s3cret"
	d := newDeliverer(t, nil, 0)
	d.opts.Relay = &Relay{Addr: mx.Addr, Username: "mailbolt", Password: "s3cret", TLSConfig: &tls.Config{RootCAs: roots}, ImplicitTLS: true}

	r := only(t, d.Send(context.Background(), envelope("a@one.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if !r.TLS || mx.Messages()[0].User != "mailbolt" {
		t.Fatalf("result = %+v", r)
	}
}

func TestRelayFailures(t *testing.T) {
	tests := []struct {
		name   string
		relay  func(addr string, roots *tls.Config) *Relay
		noTLS  bool // the relay offers no STARTTLS
		status Status
		code   int
		enh    string
		bounce Bounce
	}{
		{"untrusted certificate", func(addr string, _ *tls.Config) *Relay {
			return &Relay{Addr: addr, Username: "mailbolt", Password: "s3cret"}
		}, false, StatusTemporary, 0, "4.7.10", Bounce{BounceSoft, CategoryPolicy}},
		{"wrong password", func(addr string, roots *tls.Config) *Relay {
			return &Relay{Addr: addr, Username: "mailbolt", Password: "wrong", TLSConfig: roots}
		}, false, StatusTemporary, 535, "5.7.8", Bounce{BounceBlock, CategoryAuthFailed}},
		{"no credentials", func(addr string, roots *tls.Config) *Relay {
			return &Relay{Addr: addr, TLSConfig: roots}
		}, false, StatusPermanent, 502, "5.7.0", Bounce{BounceBlock, CategoryAuthFailed}},
		{"credentials without TLS", func(addr string, roots *tls.Config) *Relay {
			return &Relay{Addr: addr, Username: "mailbolt", Password: "s3cret", TLSConfig: roots}
		}, true, StatusTemporary, 0, "4.7.10", Bounce{BounceSoft, CategoryPolicy}},
		{"TLS required", func(addr string, roots *tls.Config) *Relay {
			return &Relay{Addr: addr, TLSConfig: roots, RequireTLS: true}
		}, true, StatusTemporary, 0, "4.7.10", Bounce{BounceSoft, CategoryPolicy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mx *testMX
			var roots *tls.Config
			if tt.noTLS {
				mx = startMX(t, ipMX+":0", withServer(func(s *smtp.Server) { s.AllowInsecureAuth = true }))
				mx.User, mx.Pass = "mailbolt", "s3cret"
				_, pool := selfSigned(t, ipMX)
				roots = &tls.Config{RootCAs: pool}
			} else {
				mx, roots = startRelay(t)
			}
			d := newDeliverer(t, nil, 0)
			d.opts.Relay = tt.relay(mx.Addr, roots)
			r := only(t, d.Send(context.Background(), envelope("a@one.test")))
			// A failure before MAIL FROM is Mailbolt's to fix: mail
			// waits. A refused MAIL FROM is the relay's answer.
			wantStatus(t, r, tt.status, tt.bounce)
			if r.Code != tt.code || r.Enhanced != tt.enh {
				t.Fatalf("result = %+v", r)
			}
			if len(mx.Messages()) != 0 {
				t.Fatal("relay got a message")
			}
			if tt.noTLS && len(mx.CommandLines(0, "AUTH")) != 0 {
				t.Fatal("credentials were sent in cleartext")
			}
		})
	}

	// Explicitly allowed, AUTH goes in cleartext.
	mx := startMX(t, ipMX+":0", withServer(func(s *smtp.Server) { s.AllowInsecureAuth = true }))
	mx.User, mx.Pass = "mailbolt", "s3cret"
	d := newDeliverer(t, nil, 0)
	d.opts.Relay = &Relay{Addr: mx.Addr, Username: "mailbolt", Password: "s3cret", AllowInsecureAuth: true}
	wantStatus(t, only(t, d.Send(context.Background(), envelope("a@one.test"))), StatusDelivered, Bounce{})
}
