package main

import (
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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"mailbolt/mta/dns/dnstest"
)

// TestServeACMEWithPebble runs serve as a process with --acme-domains
// against Let's Encrypt's test CA, Pebble, run in this test: the
// certificate is obtained over TLS-ALPN-01 on the HTTPS address when a
// client first asks for the domain, cached in the data dir, and served.
// The domain resolves to 127.0.0.1 in a test DNS zone that Pebble asks.
func TestServeACMEWithPebble(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	const domain = "mail.mailbolt.test"
	zone := dnstest.Start(t)
	zone.A(domain, "127.0.0.1")
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")

	// Pebble's directory must be known before serve starts, and its
	// validation authority needs serve's ports: the directory listens at
	// once and its handler is filled in once serve has bound them.
	var front atomic.Pointer[http.Handler]
	acmeSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := front.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "not yet", http.StatusServiceUnavailable)
	}))
	defer acmeSrv.Close()
	acmeSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	// serve trusts the directory's certificate through SSL_CERT_FILE.
	caFile := filepath.Join(t.TempDir(), "acme-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: acmeSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	s := startTLSServer(t, []string{"SSL_CERT_FILE=" + caFile}, "--acme-domains", domain,
		"--acme-email", "ops@mailbolt.test", "--acme-directory", acmeSrv.URL+wfe.DirectoryPath)
	if !strings.Contains(s.stderr.String(), "neither port 443") {
		t.Errorf("no warning that neither port 80 nor 443 is bound:\n%s", s.stderr)
	}

	port := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	pebbleLog := &syncBuffer{}
	logger := log.New(pebbleLog, "pebble ", log.Lmicroseconds)
	store := db.NewMemoryStore()
	authority := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "test"}})
	validator := va.New(logger, port(s.http), port(s.https), false, zone.Addr, store)
	fe := wfe.New(logger, store, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	h := fe.Handler()
	front.Store(&h)
	defer func() {
		if t.Failed() {
			t.Logf("pebble:\n%s", pebbleLog)
		}
	}()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(authority.GetRootCert(0).PEM())
	tc := &tls.Config{ServerName: domain, RootCAs: roots}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Minute}, "tcp", s.https, tc)
	if err != nil {
		t.Fatalf("handshake for %s: %v", domain, err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != domain {
		t.Fatalf("certificate for %v", leaf.DNSNames)
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "acme", domain)); err != nil {
		t.Fatalf("certificate not cached in the data dir: %v", err)
	}

	// The API over HTTPS with that certificate.
	client := noRedirects(tc)
	resp, body := call(t, client, "GET", "https://"+s.https+"/v1/account", s.key, "")
	if resp.StatusCode != 200 || !resp.TLS.PeerCertificates[0].Equal(leaf) {
		t.Fatalf("GET /v1/account: %d %v", resp.StatusCode, body)
	}
	// Plain HTTP names the HTTPS URL on the ACME domain.
	want := "https://" + net.JoinHostPort(domain, strconv.Itoa(port(s.https)))
	resp, body = call(t, noRedirects(nil), "GET", "http://"+s.http+"/v1/account", s.key, "")
	e, _ := body["error"].(map[string]any)
	if d, _ := e["details"].(map[string]any); resp.StatusCode != 403 || d["https_url"] != want {
		t.Fatalf("GET /v1/account over HTTP: %d %v, want https_url %s", resp.StatusCode, body, want)
	}
}
