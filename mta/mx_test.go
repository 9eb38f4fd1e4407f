package mta

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// testMX is a go-smtp server on a loopback address acting as a recipient
// MX or a relay. Its answers are scripted per stage; it records every
// connection's client-side bytes (the conversation, while in cleartext)
// and every message it accepts.
type testMX struct {
	t    *testing.T
	Addr string // ip:port
	Port int
	srv  *smtp.Server

	// Script, set before use. A nil function accepts.
	Mail func(from string) error
	Rcpt func(to string) error
	Data func(s *mxSession, r io.Reader) error // replaces the default: read all and record
	// User and Pass make the server offer AUTH PLAIN and require it.
	User, Pass string

	release     chan struct{} // closed at cleanup: ends scripted stalls
	implicitTLS bool

	mu      sync.Mutex
	conns   []*recConn
	open    int // connections open now
	maxOpen int // most connections ever open at once
	msgs    []gotMessage
}

// gotMessage is a message as the server received it.
type gotMessage struct {
	From   string
	To     []string
	Data   []byte
	HELO   string
	Remote string // client IP
	TLS    bool
	User   string // authenticated user
	// RequireTLS says MAIL FROM carried REQUIRETLS (RFC 8689).
	RequireTLS bool
}

// startMX runs a server on addr ("127.0.0.1:0", or another loopback IP with
// the port of an earlier server) until the test ends.
func startMX(t *testing.T, addr string, opts ...mxOption) *testMX {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	mx := &testMX{t: t, Addr: ln.Addr().String(), Port: ln.Addr().(*net.TCPAddr).Port, release: make(chan struct{})}
	mx.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &mxSession{mx: mx, conn: c}, nil
	}))
	mx.srv.Domain = "mx.test"
	mx.srv.ErrorLog = log.New(io.Discard, "", 0)
	for _, o := range opts {
		o(mx)
	}
	var l net.Listener = &recListener{Listener: ln, mx: mx}
	if mx.implicitTLS {
		l = tls.NewListener(l, mx.srv.TLSConfig)
	}
	go mx.srv.Serve(l)
	t.Cleanup(func() { mx.srv.Close() })
	t.Cleanup(func() { close(mx.release) })
	return mx
}

// at is addr's IP with this server's port, for a second server or an
// address where nothing listens.
func (mx *testMX) at(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(mx.Port)) }

// Messages returns the messages received so far.
func (mx *testMX) Messages() []gotMessage {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	return append([]gotMessage(nil), mx.msgs...)
}

// Conns counts the connections accepted so far.
func (mx *testMX) Conns() int {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	return len(mx.conns)
}

// MaxOpen is the largest number of connections open at once.
func (mx *testMX) MaxOpen() int {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	return mx.maxOpen
}

// Commands returns the command verbs each connection sent in cleartext
// ("EHLO", "MAIL", "RCPT", "DATA", "RSET", ...), message lines left out.
func (mx *testMX) Commands() [][]string {
	mx.mu.Lock()
	conns := append([]*recConn(nil), mx.conns...)
	mx.mu.Unlock()
	var out [][]string
	for _, c := range conns {
		c.mu.Lock()
		lines := strings.Split(c.in.String(), "\r\n")
		c.mu.Unlock()
		var verbs []string
		inData := false
		for _, l := range lines {
			switch {
			case inData:
				inData = l != "."
			case l == "":
			default:
				verb, _, _ := strings.Cut(l, " ")
				verb = strings.ToUpper(verb)
				verbs = append(verbs, verb)
				inData = verb == "DATA"
			}
		}
		out = append(out, verbs)
	}
	return out
}

// CommandLines returns the full cleartext command lines of connection i
// whose verb is verb.
func (mx *testMX) CommandLines(i int, verb string) []string {
	mx.mu.Lock()
	c := mx.conns[i]
	mx.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range strings.Split(c.in.String(), "\r\n") {
		if strings.HasPrefix(strings.ToUpper(l), verb+" ") {
			out = append(out, l)
		}
	}
	return out
}

// DropAll closes every connection from the server's side.
func (mx *testMX) DropAll() {
	mx.mu.Lock()
	defer mx.mu.Unlock()
	for _, c := range mx.conns {
		c.Conn.Close()
	}
}

// Stall blocks until the test ends: a server that stopped answering.
func (mx *testMX) Stall() { <-mx.release }

func count(verbs []string, verb string) int {
	n := 0
	for _, v := range verbs {
		if v == verb {
			n++
		}
	}
	return n
}

type mxSession struct {
	mx   *testMX
	conn *smtp.Conn
	from string
	to   []string
	user string
	// requireTLS is the REQUIRETLS MAIL parameter.
	requireTLS bool
}

func (s *mxSession) AuthMechanisms() []string {
	if s.mx.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *mxSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.mx.User || password != s.mx.Pass {
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}

func (s *mxSession) Mail(from string, opts *smtp.MailOptions) error {
	if s.mx.User != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	if s.mx.Mail != nil {
		if err := s.mx.Mail(from); err != nil {
			return err
		}
	}
	s.from = from
	s.requireTLS = opts != nil && opts.RequireTLS
	return nil
}

func (s *mxSession) Rcpt(to string, opts *smtp.RcptOptions) error {
	if s.mx.Rcpt != nil {
		if err := s.mx.Rcpt(to); err != nil {
			return err
		}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *mxSession) Data(r io.Reader) error {
	if s.mx.Data != nil {
		return s.mx.Data(s, r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.record(b)
	return nil
}

func (s *mxSession) record(data []byte) {
	_, tlsOn := s.conn.TLSConnectionState()
	host, _, _ := net.SplitHostPort(s.conn.Conn().RemoteAddr().String())
	s.mx.mu.Lock()
	defer s.mx.mu.Unlock()
	s.mx.msgs = append(s.mx.msgs, gotMessage{
		From: s.from, To: append([]string(nil), s.to...), Data: data,
		HELO: s.conn.Hostname(), Remote: host, TLS: tlsOn, User: s.user, RequireTLS: s.requireTLS,
	})
}

func (s *mxSession) Reset()        { s.from, s.to = "", nil }
func (s *mxSession) Logout() error { return nil }

// recListener counts and records the server's connections.
type recListener struct {
	net.Listener
	mx *testMX
}

func (l *recListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &recConn{Conn: c, mx: l.mx}
	l.mx.mu.Lock()
	l.mx.conns = append(l.mx.conns, rc)
	l.mx.open++
	l.mx.maxOpen = max(l.mx.maxOpen, l.mx.open)
	l.mx.mu.Unlock()
	return rc, nil
}

type recConn struct {
	net.Conn
	mx     *testMX
	mu     sync.Mutex
	in     bytes.Buffer
	closed sync.Once
}

func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.in.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *recConn) Close() error {
	c.closed.Do(func() {
		c.mx.mu.Lock()
		c.mx.open--
		c.mx.mu.Unlock()
	})
	return c.Conn.Close()
}

// startGreeter answers every connection on addr with one line (a 421, say)
// and hangs up. It returns a function counting the connections.
func startGreeter(t *testing.T, addr, line string) func() int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			io.WriteString(c, line+"\r\n")
			c.Close()
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// selfSigned makes a certificate for the given names and IPs, and a pool
// that trusts it.
func selfSigned(t *testing.T, names ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: names[0]},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

type mxOption func(*testMX)

// withTLS makes a server offer STARTTLS with cert.
func withTLS(cert tls.Certificate) mxOption {
	return func(mx *testMX) { mx.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}} }
}

// withImplicitTLS makes a server speak TLS from the first byte.
func withImplicitTLS(cert tls.Certificate) mxOption {
	return func(mx *testMX) {
		withTLS(cert)(mx)
		mx.implicitTLS = true
	}
}

// withServer sets server options.
func withServer(f func(*smtp.Server)) mxOption { return func(mx *testMX) { f(mx.srv) } }
