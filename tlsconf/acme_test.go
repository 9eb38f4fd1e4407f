package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"mailbolt/mta/dns/dnstest"
)

// acmeDomain resolves to 127.0.0.1 in the test's DNS zone, which Pebble's
// validation authority asks.
const acmeDomain = "mail.mailbolt.test"

// pebble is Let's Encrypt's test CA, run in this process: its directory
// is served over TLS by httptest, and its validation authority connects
// to httpPort (HTTP-01) and tlsPort (TLS-ALPN-01) on the address the test
// DNS server gives for the domain.
type pebble struct {
	srv  *httptest.Server
	ca   *ca.CAImpl
	logs *syncBuf
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startPebble runs Pebble issuing certificates valid for validity.
func startPebble(t *testing.T, dnsAddr string, httpPort, tlsPort int, validity time.Duration) *pebble {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")      // validate at once
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0") // no deliberately bad nonces
	t.Setenv("PEBBLE_AUTHZREUSE", "0")      // a renewal validates again
	logs := &syncBuf{}
	logger := log.New(logs, "pebble ", log.Lmicroseconds)
	store := db.NewMemoryStore()
	authority := ca.New(logger, store, "", "ecdsa", 0, 1,
		map[string]ca.Profile{"default": {Description: "test", ValidityPeriod: uint64(validity / time.Second)}})
	validator := va.New(logger, httpPort, tlsPort, false, dnsAddr, store)
	front := wfe.New(logger, store, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	srv := httptest.NewTLSServer(front.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pebble log:\n%s", logs)
		}
	})
	return &pebble{srv: srv, ca: authority, logs: logs}
}

func (p *pebble) directory() string { return p.srv.URL + wfe.DirectoryPath }

// roots trusts Pebble's root, which it signs issued chains with.
func (p *pebble) roots(t *testing.T) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.ca.GetRootCert(0).PEM()) {
		t.Fatal("pebble root does not parse")
	}
	return pool
}

func portOf(t *testing.T, addr net.Addr) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(addr.String())
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// serveHTTPS serves a small handler over TLS with src's configuration on
// ln, as serve does on --https-addr.
func serveHTTPS(t *testing.T, ln net.Listener, src *Source) {
	t.Helper()
	hs := &http.Server{TLSConfig: src.Config(), ErrorLog: log.New(io.Discard, "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })}
	go hs.ServeTLS(ln, "", "")
	t.Cleanup(func() { hs.Close() })
}

// served connects to addr as a browser for acmeDomain would, verifying
// the chain against Pebble's root, and returns the leaf it was given.
func served(addr string, roots *x509.CertPool) (*x509.Certificate, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Minute}, "tcp", addr,
		&tls.Config{ServerName: acmeDomain, RootCAs: roots})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0], nil
}

// cachedLeaf is the leaf certificate autocert keeps in dir for the domain.
func cachedLeaf(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, acmeDomain))
	if err != nil {
		t.Fatalf("no cached certificate: %v", err)
	}
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			t.Fatal("no certificate in the cache file")
		}
		if b.Type == "CERTIFICATE" {
			leaf, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return leaf
		}
	}
}

// TestACMETLSALPN obtains a certificate from Pebble over TLS-ALPN-01 on
// the HTTPS listener itself, caches it, serves it, and serves it again
// from the cache after a restart without asking the CA.
func TestACMETLSALPN(t *testing.T) {
	zone := dnstest.Start(t)
	zone.A(acmeDomain, "127.0.0.1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// HTTP-01 goes to a port nothing listens on: only TLS-ALPN-01 can pass.
	p := startPebble(t, zone.Addr, 1, portOf(t, ln.Addr()), 90*24*time.Hour)
	cache := t.TempDir()
	src, err := New(Options{ACMEDomains: []string{acmeDomain}, ACMEEmail: "ops@mailbolt.test", CacheDir: cache,
		ACMEDirectory: p.directory(), HTTPClient: p.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	serveHTTPS(t, ln, src)
	leaf, err := served(ln.Addr().String(), p.roots(t))
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != acmeDomain {
		t.Fatalf("certificate for %v", leaf.DNSNames)
	}
	if c := cachedLeaf(t, cache); !c.Equal(leaf) {
		t.Fatal("the cached certificate is not the one served")
	}

	// A client that sends no server name (connecting by IP address: Go
	// sends no SNI for one) gets the first domain's certificate.
	bare, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("handshake without a server name: %v", err)
	}
	if got := bare.ConnectionState().PeerCertificates[0]; !got.Equal(leaf) {
		t.Fatalf("without a server name: certificate for %v", got.DNSNames)
	}
	bare.Close()

	// A new Source on the same cache (a restart) serves the cached
	// certificate: its CA is gone, so it cannot have asked for another.
	p.srv.Close()
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	src2, err := New(Options{ACMEDomains: []string{acmeDomain}, CacheDir: cache, ACMEDirectory: p.directory(),
		HTTPClient: p.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	serveHTTPS(t, ln2, src2)
	again, err := served(ln2.Addr().String(), p.roots(t))
	if err != nil {
		t.Fatalf("handshake after restart: %v", err)
	}
	if !again.Equal(leaf) {
		t.Fatal("after a restart another certificate was served")
	}
}

// TestACMEHTTP01AndRenewal obtains a certificate over HTTP-01 on the
// plain-HTTP listener (TLS-ALPN-01 cannot pass: Pebble validates it on a
// port nothing listens on), then renews it: certificates are issued for
// 20 days and renewed 30 days before expiry, so renewal starts at once.
func TestACMEHTTP01AndRenewal(t *testing.T) {
	zone := dnstest.Start(t)
	zone.A(acmeDomain, "127.0.0.1")
	httpsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := startPebble(t, zone.Addr, portOf(t, httpLn.Addr()), 1, 20*24*time.Hour)
	// The certificates live shorter than RenewBefore, so autocert renews
	// again and again until the process ends: the CA is closed before the
	// cache goes, and the cache is removed after the last write lands.
	cache, err := os.MkdirTemp("", "acme-renewal")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; os.RemoveAll(cache) != nil && i < 50; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Cleanup(p.srv.Close)
	src, err := New(Options{ACMEDomains: []string{acmeDomain}, CacheDir: cache, ACMEDirectory: p.directory(),
		HTTPClient: p.srv.Client(), RenewBefore: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fallbackHit := make(chan string, 1)
	plain := &http.Server{Handler: src.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case fallbackHit <- r.URL.Path:
		default:
		}
		http.NotFound(w, r)
	}))}
	go plain.Serve(httpLn)
	t.Cleanup(func() { plain.Close() })
	serveHTTPS(t, httpsLn, src)

	roots := p.roots(t)
	first, err := served(httpsLn.Addr().String(), roots)
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	// Renewal runs in the background; wait for a certificate with
	// another serial number to be served, and cached.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		leaf, err := served(httpsLn.Addr().String(), roots)
		if err != nil {
			t.Fatalf("handshake during renewal: %v", err)
		}
		if leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
			if leaf.NotAfter.Before(first.NotAfter) {
				t.Fatalf("renewed certificate expires %v, before the first (%v)", leaf.NotAfter, first.NotAfter)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the certificate was not renewed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := cachedLeaf(t, cache); c.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the cache still holds the first certificate")
	}

	// Other plain-HTTP requests reach the fallback.
	resp, err := http.Get("http://" + httpLn.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-fallbackHit; got != "/healthz" {
		t.Fatalf("fallback got %q", got)
	}
}
