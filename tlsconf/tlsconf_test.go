package tlsconf

import (
	"bufio"
	"crypto/tls"
	"os"
	"strings"
	"testing"

	"mailbolt/tlsconf/tlstest"
)

// echoServer accepts TLS connections with cfg and echoes lines back.
func echoServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func dial(addr string, cfg *tls.Config) (*tls.Conn, error) {
	return tls.Dial("tcp", addr, cfg)
}

// echo sends one line over c and reads it back.
func echo(t *testing.T, c *tls.Conn, r *bufio.Reader, line string) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("write on an open connection: %v", err)
	}
	got, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(got) != line {
		t.Fatalf("echo on an open connection: %q, %v", got, err)
	}
}

func TestFilesServedAndReloaded(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	certFile, keyFile := writeLeaf(t, ca, dir, 100)
	src, err := New(Options{CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, src.Config())
	client := &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"}

	old, err := dial(addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldR := bufio.NewReader(old)
	echo(t, old, oldR, "before")
	if got := old.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != 100 {
		t.Fatalf("served serial %d, want 100", got)
	}

	// New files, then Reload: new connections get the new certificate,
	// the open one keeps working.
	writeLeaf(t, ca, dir, 200)
	if err := src.Reload(); err != nil {
		t.Fatal(err)
	}
	fresh, err := dial(addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got := fresh.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != 200 {
		t.Fatalf("after reload served serial %d, want 200", got)
	}
	echo(t, old, oldR, "after")
	if got := src.Certificate().SerialNumber.Int64(); got != 200 {
		t.Fatalf("Certificate() serial %d", got)
	}

	// A broken file is refused and the certificate in use stays.
	if err := os.WriteFile(certFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(); err == nil {
		t.Fatal("reload of a broken file succeeded")
	}
	again, err := dial(addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != 200 {
		t.Fatalf("after a failed reload served serial %d, want 200", got)
	}
}

func TestVersionsAndSuites(t *testing.T) {
	ca := newCA(t)
	certFile, keyFile := writeLeaf(t, ca, t.TempDir(), 7)
	src, err := New(Options{CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, src.Config())
	base := &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"}

	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		c := base.Clone()
		c.MinVersion, c.MaxVersion = v, v
		if conn, err := dial(addr, c); err == nil {
			conn.Close()
			t.Errorf("%s accepted", tls.VersionName(v))
		}
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		c := base.Clone()
		c.MinVersion, c.MaxVersion = v, v
		conn, err := dial(addr, c)
		if err != nil {
			t.Errorf("%s refused: %v", tls.VersionName(v), err)
			continue
		}
		if got := conn.ConnectionState().Version; got != v {
			t.Errorf("negotiated %s, want %s", tls.VersionName(got), tls.VersionName(v))
		}
		conn.Close()
	}
	// A client that offers 1.2 and 1.3 gets 1.3.
	conn, err := dial(addr, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := conn.ConnectionState().Version; got != tls.VersionTLS13 {
		t.Errorf("negotiated %s, want TLS 1.3", tls.VersionName(got))
	}
	conn.Close()

	// TLS 1.2 with only CBC suites: refused. With only forward-secret
	// AEAD suites: accepted.
	c := base.Clone()
	c.MaxVersion = tls.VersionTLS12
	c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA}
	if conn, err := dial(addr, c); err == nil {
		conn.Close()
		t.Error("a TLS 1.2 CBC suite was accepted")
	}
	c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}
	if conn, err := dial(addr, c); err != nil {
		t.Errorf("ECDHE-ECDSA-CHACHA20-POLY1305 refused: %v", err)
	} else {
		conn.Close()
	}
}

func TestOptionsRefused(t *testing.T) {
	ca := newCA(t)
	certFile, keyFile := writeLeaf(t, ca, t.TempDir(), 1)
	for name, o := range map[string]Options{
		"files and ACME":    {CertFile: certFile, KeyFile: keyFile, ACMEDomains: []string{"mail.example.com"}, CacheDir: t.TempDir()},
		"cert without key":  {CertFile: certFile},
		"key without cert":  {KeyFile: keyFile},
		"nothing":           {},
		"missing file":      {CertFile: certFile + ".missing", KeyFile: keyFile},
		"ACME without dir":  {ACMEDomains: []string{"mail.example.com"}},
		"ACME bare name":    {ACMEDomains: []string{"localhost"}, CacheDir: t.TempDir()},
		"ACME with a port":  {ACMEDomains: []string{"mail.example.com:443"}, CacheDir: t.TempDir()},
		"ACME with a slash": {ACMEDomains: []string{"https://mail.example.com"}, CacheDir: t.TempDir()},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Options{CertFile: certFile, KeyFile: keyFile, ACMEDomains: []string{"a.example"}, CacheDir: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "mutually exclusive") {
		t.Errorf("files and ACME: %v", err)
	}
}

func newCA(t *testing.T) *tlstest.CA {
	t.Helper()
	ca, err := tlstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func writeLeaf(t *testing.T, ca *tlstest.CA, dir string, serial int64) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := ca.WriteLeaf(dir, serial)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
