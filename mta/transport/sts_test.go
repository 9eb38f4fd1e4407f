package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/netguard"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// testCA issues certificates for policy hosts.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) issue(t *testing.T, name string) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// policyServer serves policies over HTTPS on loopback; handler may be
// swapped.
type policyServer struct {
	srv     *httptest.Server
	port    int
	mu      sync.Mutex
	handler http.HandlerFunc
	hits    int
}

func (p *policyServer) set(h http.HandlerFunc) { p.mu.Lock(); p.handler = h; p.mu.Unlock() }
func (p *policyServer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

func servePolicy(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/mta-sts.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(body))
	}
}

func startPolicyServer(t *testing.T, cert tls.Certificate) *policyServer {
	p := &policyServer{}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		h := p.handler
		p.hits++
		p.mu.Unlock()
		h(w, r)
	}))
	p.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	_, port, _ := net.SplitHostPort(p.srv.Listener.Addr().String())
	p.port, _ = strconv.Atoi(port)
	return p
}

const enforce = "version: STSv1\r\nmode: enforce\r\nmx: mx.example.test\r\nmax_age: 86400\r\n"

type fixture struct {
	zone  *dnstest.Server
	ps    *policyServer
	ca    *testCA
	db    *storage.DB
	dir   string
	sopts storage.Options // how db is opened, again at a restart
	clock time.Time
}

func (f *fixture) sts() *STS {
	return NewSTS(STSOptions{DB: f.db, Resolver: &dns.Resolver{Server: f.zone.Addr, Timeout: time.Second}, Port: f.ps.port,
		RootCAs: f.ca.pool, Guard: netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Timeout: 5 * time.Second, Now: func() time.Time { return f.clock }})
}

func setup(t *testing.T) *fixture {
	f := &fixture{zone: dnstest.Start(t), ca: newCA(t), dir: t.TempDir(), sopts: storagetest.Options(t), clock: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	f.ps = startPolicyServer(t, f.ca.issue(t, "mta-sts.example.test"))
	f.ps.set(servePolicy(enforce))
	f.zone.TXT("_mta-sts.example.test", "v=STSv1; id=one")
	f.zone.A("mta-sts.example.test", "127.0.0.1")
	var err error
	if f.db, err = storage.Open(f.dir, f.sopts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.db.Close() })
	return f
}

func TestPolicyFetchedCachedAndKeptThroughAnOutageAndARestart(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	p, err := f.sts().STSPolicy(ctx, "Example.Test.")
	if err != nil || p == nil || p.Mode != "enforce" || p.ID != "one" || !p.Matches("mx.example.test") || p.MaxAge != 24*time.Hour {
		t.Fatalf("policy %+v, %v", p, err)
	}
	// The same id: the cache answers, the server is not asked.
	if p, err := f.sts().STSPolicy(ctx, "example.test"); err != nil || p.ID != "one" || f.ps.count() != 1 {
		t.Fatalf("cached %+v %v, %d fetches", p, err, f.ps.count())
	}
	// The policy server goes away and the record changes: the cached
	// policy stands until it expires.
	f.ps.set(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", 503) })
	f.zone.Remove("_mta-sts.example.test")
	f.zone.TXT("_mta-sts.example.test", "v=STSv1; id=two")
	// A restart: the database is opened again.
	f.db.Close()
	var err2 error
	if f.db, err2 = storage.Open(f.dir, f.sopts); err2 != nil {
		t.Fatal(err2)
	}
	if p, err := f.sts().STSPolicy(ctx, "example.test"); err != nil || p == nil || p.ID != "one" {
		t.Fatalf("after outage and restart: %+v, %v", p, err)
	}
	// Once it has expired, no policy applies.
	f.clock = f.clock.Add(25 * time.Hour)
	if p, err := f.sts().STSPolicy(ctx, "example.test"); p != nil || err == nil {
		t.Fatalf("expired: %+v, %v", p, err)
	}
	// The record's id changed and the server is back: the new policy.
	f.ps.set(servePolicy(strings.Replace(enforce, "enforce", "testing", 1)))
	if p, err := f.sts().STSPolicy(ctx, "example.test"); err != nil || p.Mode != "testing" || p.ID != "two" {
		t.Fatalf("new policy %+v, %v", p, err)
	}
}

func TestPolicyFetchRefusals(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		change func(f *fixture)
		want   string
	}{
		"redirect": {func(f *fixture) {
			f.ps.set(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://elsewhere.test/", http.StatusFound)
			})
		}, "HTTP 302"},
		"content type": {func(f *fixture) {
			f.ps.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte(enforce))
			})
		}, "not text/plain"},
		"too large": {func(f *fixture) {
			f.ps.set(servePolicy(enforce + strings.Repeat("x: y\r\n", 12000)))
		}, "larger than"},
		"invalid":               {func(f *fixture) { f.ps.set(servePolicy("version: STSv1\r\n")) }, "no mode"},
		"untrusted certificate": {func(f *fixture) { f.ca = newCA(t) }, "certificate signed by unknown authority"},
		"guarded address":       {func(f *fixture) {}, "loopback"},
		"no record":             {func(f *fixture) { f.zone.Remove("_mta-sts.example.test") }, ""},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			c.change(f)
			s := f.sts()
			if name == "guarded address" {
				s.o.Guard = netguard.Policy{}
			}
			p, err := s.STSPolicy(ctx, "example.test")
			if p != nil {
				t.Fatalf("policy %+v", p)
			}
			if c.want == "" {
				if err != nil {
					t.Fatalf("no record: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

func TestRefresh(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s := f.sts()
	if _, err := s.STSPolicy(ctx, "example.test"); err != nil {
		t.Fatal(err)
	}
	// Far from its end and unchanged: left alone.
	if err := s.Refresh(ctx); err != nil || f.ps.count() != 1 {
		t.Fatalf("refresh %v, %d fetches", err, f.ps.count())
	}
	// Within half its max_age of its end: fetched again, and kept for a
	// new max_age.
	f.clock = f.clock.Add(13 * time.Hour)
	if err := s.Refresh(ctx); err != nil || f.ps.count() != 2 {
		t.Fatalf("refresh %v, %d fetches", err, f.ps.count())
	}
	f.db.View(func(tx *storage.Tx) error {
		if sp, err := tx.STSPolicy("example.test"); err != nil || !sp.Expires.Equal(f.clock.Add(24*time.Hour)) {
			t.Errorf("after refresh %+v %v", sp, err)
		}
		return nil
	})
	// Ended, and the server is down: dropped.
	f.ps.set(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", 503) })
	f.clock = f.clock.Add(48 * time.Hour)
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	f.db.View(func(tx *storage.Tx) error {
		if _, err := tx.STSPolicy("example.test"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("expired policy kept: %v", err)
		}
		return nil
	})
}

func TestCounter(t *testing.T) {
	f := setup(t)
	c := NewCounter(f.db, func() time.Time { return f.clock })
	c.Add("example.test", "sts", "")
	c.Add("example.test", "sts", "")
	c.Add("example.test", "sts", "certificate-expired")
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Add("example.test", "sts", "")
	c.Flush()
	f.db.View(func(tx *storage.Tx) error {
		counts, err := tx.TLSCounts(Day(f.clock) + 1)
		if err != nil || len(counts) != 1 || counts[0].Success != 3 || counts[0].Failures["certificate-expired"] != 1 {
			t.Errorf("counts %+v %v", counts, err)
		}
		return nil
	})
}

// An answer is remembered for a minute: a burst of mail to a domain asks
// DNS (and the database) once.
func TestPolicyAnswersRememberedForAMinute(t *testing.T) {
	f := setup(t)
	s := f.sts()
	ctx := context.Background()
	for range 3 {
		if p, err := s.STSPolicy(ctx, "example.test"); err != nil || p == nil {
			t.Fatal(p, err)
		}
	}
	q := f.zone.Queries()
	f.clock = f.clock.Add(2 * time.Minute)
	if _, err := s.STSPolicy(ctx, "example.test"); err != nil || f.zone.Queries() == q {
		t.Fatalf("no lookup after the memo ended: %v", err)
	}
	if f.ps.count() != 1 {
		t.Fatalf("%d fetches", f.ps.count())
	}
	if _, err := s.STSPolicy(ctx, "example.test"); err != nil || f.zone.Queries() != q+1 {
		t.Fatalf("%d queries, want %d", f.zone.Queries(), q+1)
	}
}
