package mta

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/mta/tlspolicy"
)

// staticSTS is a policy source holding fixed policies: the fetching and
// caching of real ones is mta/transport's, tested there against an HTTPS
// server.
type staticSTS map[string]*tlspolicy.Policy

func (s staticSTS) STSPolicy(_ context.Context, domain string) (*tlspolicy.Policy, error) {
	return s[domain], nil
}

// outcomes records what OnTLS is told.
type outcomes struct {
	mu   sync.Mutex
	list []TLSOutcome
}

func (o *outcomes) add(x TLSOutcome) { o.mu.Lock(); o.list = append(o.list, x); o.mu.Unlock() }
func (o *outcomes) get() []TLSOutcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]TLSOutcome(nil), o.list...)
}

func enforcePolicy(mode string, mx ...string) *tlspolicy.Policy {
	return &tlspolicy.Policy{Mode: mode, MX: mx, MaxAge: time.Hour, ID: "pol1"}
}

// secureDeliverer routes example.test to mx.example.test (ipMX) through a
// zone, trusting roots, with the MTA-STS policies of sts.
func secureDeliverer(t *testing.T, port int, roots *x509.CertPool, sts staticSTS) (*Deliverer, *dnstest.Server, *outcomes) {
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, port)
	d.opts.RootCAs = roots
	d.opts.STS = sts
	rec := &outcomes{}
	d.opts.OnTLS = rec.add
	return d, zone, rec
}

func TestMTASTSEnforceDeliversOverVerifiedTLS(t *testing.T) {
	cert, roots := selfSigned(t, "mx.example.test")
	mx := startMX(t, ipMX+":0", withTLS(cert))
	d, _, rec := secureDeliverer(t, mx.Port, roots, staticSTS{"example.test": enforcePolicy("enforce", "mx.example.test")})
	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if !r.TLS || !r.TLSVerified || r.TLSPolicy != PolicyMTASTS || !mx.Messages()[0].TLS {
		t.Fatalf("result %+v", r)
	}
	if o := rec.get(); len(o) != 1 || o[0].Policy != "sts" || o[0].Failure != "" || o[0].PolicyID != "pol1" {
		t.Fatalf("outcomes %+v", o)
	}
	// Without a policy the same session is opportunistic, still verified.
	d.opts.STS = staticSTS{}
	r = only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	if r.Status != StatusDelivered || r.TLSPolicy != PolicyNone || !r.TLSVerified {
		t.Fatalf("no policy: %+v", r)
	}
}

func TestMTASTSEnforceRefusesCleartextAndWrongCertificates(t *testing.T) {
	wrong, wrongRoots := selfSigned(t, "other.test") // trusted, for another name
	pol := staticSTS{"example.test": enforcePolicy("enforce", "mx.example.test")}
	for name, c := range map[string]struct {
		opts []mxOption
		want string
	}{
		"cleartext":   {nil, "offers no STARTTLS"},
		"wrong name":  {[]mxOption{withTLS(wrong)}, "certificate is valid for other.test"},
		"old version": {[]mxOption{withTLS(wrong), withServer(func(s *smtp.Server) { s.TLSConfig.MaxVersion = tls.VersionTLS11 })}, "TLS with MX host"},
	} {
		t.Run(name, func(t *testing.T) {
			mx := startMX(t, ipMX+":0", c.opts...)
			d, _, rec := secureDeliverer(t, mx.Port, wrongRoots, pol)
			r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
			if r.Status != StatusTemporary || !strings.Contains(r.Text, c.want) ||
				!strings.Contains(r.Text, "MTA-STS policy of example.test (id pol1, mode enforce)") {
				t.Fatalf("result %+v", r)
			}
			// No second, cleartext connection; nothing delivered.
			if mx.Conns() != 1 || len(mx.Messages()) != 0 {
				t.Fatalf("%d connections, %d messages", mx.Conns(), len(mx.Messages()))
			}
			if o := rec.get(); len(o) != 1 || o[0].Failure == "" || o[0].Policy != "sts" {
				t.Fatalf("outcomes %+v", o)
			}
		})
	}
}

func TestMTASTSEnforceSkipsUnlistedMX(t *testing.T) {
	cert, roots := selfSigned(t, "mx.example.test", "backup.example.test")
	mx := startMX(t, ipMX+":0", withTLS(cert))
	d, zone, _ := secureDeliverer(t, mx.Port, roots, staticSTS{"example.test": enforcePolicy("enforce", "backup.example.test")})
	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	if r.Status != StatusTemporary || !strings.Contains(r.Text, "MX host mx.example.test does not match the MTA-STS policy of example.test") || mx.Conns() != 0 {
		t.Fatalf("result %+v, %d connections", r, mx.Conns())
	}
	// A listed MX of lower preference takes the mail.
	zone.MX("example.test", 20, "backup.example.test")
	zone.A("backup.example.test", ipMX)
	r = only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	if r.Status != StatusDelivered || r.Host != "backup.example.test" || !r.TLSVerified {
		t.Fatalf("result %+v", r)
	}
}

func TestMTASTSTestingDeliversAndRecords(t *testing.T) {
	wrong, _ := selfSigned(t, "other.test")
	mx := startMX(t, ipMX+":0", withTLS(wrong))
	d, _, rec := secureDeliverer(t, mx.Port, nil, staticSTS{"example.test": enforcePolicy("testing", "mx.example.test")})
	r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
	if r.Status != StatusDelivered || !r.TLS || r.TLSVerified || r.TLSPolicy != PolicyMTASTS {
		t.Fatalf("result %+v", r)
	}
	if o := rec.get(); len(o) != 1 || o[0].Failure != "certificate-host-mismatch" {
		t.Fatalf("outcomes %+v", o)
	}
}

// caChain makes a CA and a leaf for name that it issued; the leaf's
// certificate carries the chain (leaf, CA).
func caChain(t *testing.T, name string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(10), Subject: pkix.Name{CommonName: "Test TA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(11), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}, ca
}

func spkiSHA256(c *x509.Certificate) string {
	h := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(h[:])
}

// daneDeliverer is secureDeliverer with DANE on: the zone's answers for
// example.test are signed.
func daneDeliverer(t *testing.T, port int, sts staticSTS) (*Deliverer, *dnstest.Server, *outcomes) {
	d, zone, rec := secureDeliverer(t, port, nil, sts)
	d.opts.DANE = &dns.Resolver{Server: zone.Addr, Timeout: time.Second}
	zone.Signed("example.test", true)
	return d, zone, rec
}

func TestDANE(t *testing.T) {
	cert, _ := selfSigned(t, "anything.invalid") // DANE-EE checks no name and no trust
	mx := startMX(t, ipMX+":0", withTLS(cert))

	t.Run("EE match", func(t *testing.T) {
		d, zone, rec := daneDeliverer(t, mx.Port, nil)
		zone.TLSA("_25._tcp.mx.example.test", 3, 1, 1, spkiSHA256(cert.Leaf))
		r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
		if r.Status != StatusDelivered || !r.TLSVerified || r.TLSPolicy != PolicyDANE {
			t.Fatalf("result %+v", r)
		}
		if o := rec.get(); len(o) != 1 || o[0].Policy != "tlsa" || o[0].Failure != "" {
			t.Fatalf("outcomes %+v", o)
		}
	})
	t.Run("EE full certificate, SHA-512", func(t *testing.T) {
		d, zone, _ := daneDeliverer(t, mx.Port, nil)
		h := sha512.Sum512(cert.Leaf.Raw)
		zone.TLSA("_25._tcp.mx.example.test", 3, 0, 2, hex.EncodeToString(h[:]))
		if r := only(t, d.Send(context.Background(), envelope("rcpt@example.test"))); r.Status != StatusDelivered || r.TLSPolicy != PolicyDANE {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("EE mismatch", func(t *testing.T) {
		before := mx.Conns()
		d, zone, rec := daneDeliverer(t, mx.Port, nil)
		zone.TLSA("_25._tcp.mx.example.test", 3, 1, 1, strings.Repeat("00", 32))
		r := only(t, d.Send(context.Background(), envelope("rcpt@example.test")))
		if r.Status != StatusTemporary || !strings.Contains(r.Text, "no TLSA record of mx.example.test matches") || !strings.Contains(r.Text, "DANE") {
			t.Fatalf("result %+v", r)
		}
		if mx.Conns() != before+1 {
			t.Fatalf("%d connections: fell back to cleartext", mx.Conns()-before)
		}
		if o := rec.get(); len(o) != 1 || o[0].Failure != "validation-failure" {
			t.Fatalf("outcomes %+v", o)
		}
	})
	t.Run("unsigned zone: no DANE", func(t *testing.T) {
		d, zone, _ := daneDeliverer(t, mx.Port, nil)
		zone.TLSA("_25._tcp.mx.example.test", 3, 1, 1, strings.Repeat("00", 32))
		zone.Signed("example.test", false)
		if r := only(t, d.Send(context.Background(), envelope("rcpt@example.test"))); r.Status != StatusDelivered || r.TLSPolicy != PolicyNone || r.TLSVerified {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("DANE wins over MTA-STS", func(t *testing.T) {
		// The enforced policy would refuse this certificate (untrusted,
		// wrong name); the TLSA record accepts it.
		d, zone, _ := daneDeliverer(t, mx.Port, staticSTS{"example.test": enforcePolicy("enforce", "mx.example.test")})
		zone.TLSA("_25._tcp.mx.example.test", 3, 1, 1, spkiSHA256(cert.Leaf))
		if r := only(t, d.Send(context.Background(), envelope("rcpt@example.test"))); r.Status != StatusDelivered || r.TLSPolicy != PolicyDANE {
			t.Fatalf("result %+v", r)
		}
	})
}

// A domain without MX records is its own mail host (implicit MX); when
// the answer that it has none is DNSSEC-validated, its TLSA records at
// _25._tcp.<domain> apply (RFC 7672 §2.2.1).
func TestDANEImplicitMX(t *testing.T) {
	cert, _ := selfSigned(t, "anything.invalid")
	mx := startMX(t, ipMX+":0", withTLS(cert))
	implicit := func(t *testing.T, tlsa string, signed bool) (*Deliverer, *outcomes) {
		d, zone, rec := daneDeliverer(t, mx.Port, nil)
		zone.A("solo.test", ipMX)
		zone.TLSA("_25._tcp.solo.test", 3, 1, 1, tlsa)
		zone.Signed("solo.test", signed)
		return d, rec
	}
	t.Run("match", func(t *testing.T) {
		d, rec := implicit(t, spkiSHA256(cert.Leaf), true)
		r := only(t, d.Send(context.Background(), envelope("rcpt@solo.test")))
		if r.Status != StatusDelivered || r.Host != "solo.test" || !r.TLSVerified || r.TLSPolicy != PolicyDANE {
			t.Fatalf("result %+v", r)
		}
		if o := rec.get(); len(o) != 1 || o[0].Policy != "tlsa" || o[0].MX != "solo.test" || o[0].Failure != "" {
			t.Fatalf("outcomes %+v", o)
		}
	})
	t.Run("mismatch: deferred, no cleartext", func(t *testing.T) {
		before, msgs := mx.Conns(), len(mx.Messages())
		d, _ := implicit(t, strings.Repeat("00", 32), true)
		r := only(t, d.Send(context.Background(), envelope("rcpt@solo.test")))
		if r.Status != StatusTemporary || !strings.Contains(r.Text, "no TLSA record of solo.test matches") {
			t.Fatalf("result %+v", r)
		}
		if mx.Conns() != before+1 || len(mx.Messages()) != msgs {
			t.Fatalf("%d connections, %d messages: fell back to cleartext", mx.Conns()-before, len(mx.Messages())-msgs)
		}
	})
	t.Run("unsigned: no DANE", func(t *testing.T) {
		d, _ := implicit(t, strings.Repeat("00", 32), false)
		if r := only(t, d.Send(context.Background(), envelope("rcpt@solo.test"))); r.Status != StatusDelivered || r.TLSPolicy != PolicyNone || r.TLSVerified {
			t.Fatalf("result %+v", r)
		}
	})
}

func TestDANETA(t *testing.T) {
	chain, ca := caChain(t, "mx.example.test")
	mx := startMX(t, ipMX+":0", withTLS(chain))
	d, zone, _ := daneDeliverer(t, mx.Port, nil)
	zone.TLSA("_25._tcp.mx.example.test", 2, 1, 1, spkiSHA256(ca))
	if r := only(t, d.Send(context.Background(), envelope("rcpt@example.test"))); r.Status != StatusDelivered || !r.TLSVerified || r.TLSPolicy != PolicyDANE {
		t.Fatalf("result %+v", r)
	}
	// DANE-TA checks the name: the same anchor for another MX host fails.
	other, ca2 := caChain(t, "other.test")
	mx2 := startMX(t, ipMX+":0", withTLS(other))
	d2, zone2, _ := daneDeliverer(t, mx2.Port, nil)
	zone2.TLSA("_25._tcp.mx.example.test", 2, 1, 1, spkiSHA256(ca2))
	if r := only(t, d2.Send(context.Background(), envelope("rcpt@example.test"))); r.Status != StatusTemporary {
		t.Fatalf("wrong name accepted: %+v", r)
	}
}

func TestRequireTLS(t *testing.T) {
	cert, roots := selfSigned(t, "mx.example.test")
	// A testing-mode MTA-STS policy listing the MX is enough to name it.
	listed := staticSTS{"example.test": enforcePolicy("testing", "mx.example.test")}
	t.Run("refused without the extension", func(t *testing.T) {
		mx := startMX(t, ipMX+":0", withTLS(cert))
		d, _, _ := secureDeliverer(t, mx.Port, roots, listed)
		env := envelope("rcpt@example.test")
		env.RequireTLS = true
		r := only(t, d.Send(context.Background(), env))
		if r.Status != StatusPermanent || r.Enhanced != "5.7.30" || !strings.Contains(r.Text, "does not offer REQUIRETLS") || len(mx.Messages()) != 0 {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("refused over an unverified certificate", func(t *testing.T) {
		mx := startMX(t, ipMX+":0", withTLS(cert), withServer(func(s *smtp.Server) { s.EnableREQUIRETLS = true }))
		d, _, _ := secureDeliverer(t, mx.Port, nil, listed)
		env := envelope("rcpt@example.test")
		env.RequireTLS = true
		if r := only(t, d.Send(context.Background(), env)); r.Status != StatusPermanent || r.Enhanced != "5.7.30" || mx.Conns() != 1 {
			t.Fatalf("result %+v, %d connections", r, mx.Conns())
		}
	})
	t.Run("refused to an MX nothing authenticates", func(t *testing.T) {
		// A verified certificate for the name an (unsigned) MX answer
		// gave proves nothing: RFC 8689 §4.2.1 wants the MX host named by
		// a DNSSEC-validated answer or listed by an MTA-STS policy.
		mx := startMX(t, ipMX+":0", withTLS(cert), withServer(func(s *smtp.Server) { s.EnableREQUIRETLS = true }))
		d, _, _ := secureDeliverer(t, mx.Port, roots, nil)
		env := envelope("rcpt@example.test")
		env.RequireTLS = true
		r := only(t, d.Send(context.Background(), env))
		if r.Status != StatusPermanent || r.Enhanced != "5.7.30" || !strings.Contains(r.Text, "MTA-STS") || len(mx.Messages()) != 0 {
			t.Fatalf("result %+v", r)
		}
	})
	t.Run("delivered with the parameter", func(t *testing.T) {
		mx := startMX(t, ipMX+":0", withTLS(cert), withServer(func(s *smtp.Server) { s.EnableREQUIRETLS = true }))
		d, _, _ := secureDeliverer(t, mx.Port, roots, listed)
		env := envelope("rcpt@example.test")
		env.RequireTLS = true
		if r := only(t, d.Send(context.Background(), env)); r.Status != StatusDelivered || !r.TLSVerified {
			t.Fatalf("result %+v", r)
		}
		if m := mx.Messages(); len(m) != 1 || !m[0].RequireTLS || !m[0].TLS {
			t.Fatalf("received %+v", m)
		}
	})
}

// With --relay, a REQUIRETLS message needs a relay that advertises
// REQUIRETLS; recipient domains' policies are not looked up.
func TestRequireTLSThroughRelay(t *testing.T) {
	for _, offers := range []bool{false, true} {
		mx, roots := startRelay(t, withServer(func(s *smtp.Server) { s.EnableREQUIRETLS = offers }))
		d := newDeliverer(t, nil, 0)
		d.opts.Relay = &Relay{Addr: mx.Addr, Username: "mailbolt", Password: "s3cret", TLSConfig: roots}
		d.opts.STS = staticSTS{"one.test": enforcePolicy("enforce", "nowhere.test")}
		env := envelope("a@one.test")
		env.RequireTLS = true
		r := only(t, d.Send(context.Background(), env))
		if !offers {
			if r.Status != StatusPermanent || r.Enhanced != "5.7.30" || !strings.Contains(r.Text, "relay") {
				t.Fatalf("relay without REQUIRETLS: %+v", r)
			}
			continue
		}
		if r.Status != StatusDelivered || r.TLSPolicy != "" || len(mx.Messages()) != 1 || !mx.Messages()[0].RequireTLS {
			t.Fatalf("relay with REQUIRETLS: %+v", r)
		}
	}
}
