package inbound

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/smtp"
	"strings"
	"sync"
	"testing"

	"mailbolt/tlsconf/tlstest"
)

// recorder is a Handler that takes mail for one address and keeps it.
type recorder struct {
	mu    sync.Mutex
	mails [][]byte
}

func (r *recorder) Accept(_ Envelope, rcpt string) error {
	if rcpt != "bounces@mta.example.net" {
		return errors.New("not ours")
	}
	return nil
}

func (r *recorder) Deliver(_ Envelope, _ []string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mails = append(r.mails, data)
	return nil
}

// selfSigned is a certificate for 127.0.0.1 and mta.example.net, and a
// pool that trusts its CA.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	ca, err := tlstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Leaf(1, "mta.example.net")
	if err != nil {
		t.Fatal(err)
	}
	return cert, ca.Pool
}

func listen(t *testing.T, h Handler, opts Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(h, opts)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// TestSTARTTLS: with a TLS configuration the listener offers STARTTLS, and
// a message sent after it arrives; without one it offers none and plain
// mail still arrives.
func TestSTARTTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	rec := &recorder{}
	addr := listen(t, rec, Options{Domain: "mta.example.net",
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})

	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("sender.example"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		t.Fatal("STARTTLS not offered")
	}
	if err := c.StartTLS(&tls.Config{ServerName: "mta.example.net", RootCAs: pool}); err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	state, ok := c.TLSConnectionState()
	if !ok || state.Version < tls.VersionTLS12 || !state.PeerCertificates[0].Equal(cert.Leaf) {
		t.Fatalf("TLS state %+v", state)
	}
	if err := c.Mail(""); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("bounces@mta.example.net"); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("Subject: over TLS\r\n\r\nbody\r\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c.Quit()
	rec.mu.Lock()
	if len(rec.mails) != 1 || !strings.Contains(string(rec.mails[0]), "over TLS") {
		t.Fatalf("received %q", rec.mails)
	}
	rec.mu.Unlock()

	plain := listen(t, rec, Options{Domain: "mta.example.net"})
	c2, err := smtp.Dial(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.Hello("sender.example"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c2.Extension("STARTTLS"); ok {
		t.Fatal("STARTTLS offered without a certificate")
	}
}
