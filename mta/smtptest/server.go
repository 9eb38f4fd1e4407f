// Package smtptest runs a real SMTP server (go-smtp) on a loopback address
// to stand in for a recipient's MX or a relay: tests, the crash test and
// `mailbolt bench` deliver to it. Its answer to each recipient follows a
// script keyed by the recipient's local part, so one server plays every
// outcome a real MX gives.
package smtptest

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// Reply is a scripted SMTP answer.
type Reply struct {
	Code     int
	Enhanced string // "5.1.1"; empty for none
	Text     string
}

// Standard scripted outcomes, by recipient local part. Any other local
// part is accepted. Script adds or replaces entries.
var Standard = map[string]Reply{
	"tempfail":   {421, "4.3.0", "try again later"},
	"greylist":   {450, "4.2.0", "greylisted, come back later"},
	"unknown":    {550, "5.1.1", "no such user"},
	"full":       {552, "5.2.2", "mailbox full"},
	"blocked":    {554, "5.7.1", "rejected by policy"},
	"drop":       {}, // the connection is closed at RCPT
	"stall":      {}, // RCPT never gets an answer until Release
	"dataerror":  {}, // accepted at RCPT, refused after DATA with 554 5.6.0
	"slowaccept": {}, // accepted after a short pause at DATA
}

// Message is one accepted transaction.
type Message struct {
	From     string
	To       []string
	Data     []byte
	RemoteIP string // the client's address: the source IP it bound
	HELO     string
	At       time.Time
	// TLS says the message came over STARTTLS; RequireTLS that MAIL FROM
	// carried REQUIRETLS (RFC 8689).
	TLS, RequireTLS bool
}

// Server is a running scripted MX.
type Server struct {
	Addr string // host:port it listens on
	Port int

	srv      *smtp.Server
	ln       net.Listener
	mu       sync.Mutex
	msgs     []Message
	script   map[string]Reply
	once     map[string]int // local part -> answers to give before accepting
	release  chan struct{}
	onData   func(Message)
	discard  bool
	received int
}

// Options configure a Server.
type Options struct {
	// Discard counts messages without keeping them (benchmarks).
	Discard bool
	// OnMessage is called for each accepted message, after it is stored.
	OnMessage func(Message)
	// ReadTimeout bounds the wait for each client command; none when 0.
	ReadTimeout time.Duration
	// TLSConfig, when set, makes the server offer STARTTLS with it.
	TLSConfig *tls.Config
	// RequireTLS advertises REQUIRETLS (after STARTTLS, as RFC 8689 asks).
	RequireTLS bool
	// No8BitMIME plays an old MX that does not offer 8BITMIME (go-smtp's
	// server always does): the line is taken out of the EHLO reply.
	No8BitMIME bool
	// SMTPUTF8 offers SMTPUTF8 (RFC 6531); off by default.
	SMTPUTF8 bool
}

// Start listens on addr ("127.0.0.1:0" for any port) and serves until Close.
func Start(addr string, o Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, Addr: ln.Addr().String(), Port: ln.Addr().(*net.TCPAddr).Port,
		script: map[string]Reply{}, once: map[string]int{}, release: make(chan struct{}),
		onData: o.OnMessage, discard: o.Discard}
	for k, v := range Standard {
		s.script[k] = v
	}
	s.srv = smtp.NewServer(backend{s})
	s.srv.Domain = "mx.smtptest"
	s.srv.ErrorLog = log.New(io.Discard, "", 0) // dropped connections are part of the script
	s.srv.AllowInsecureAuth = true
	s.srv.MaxRecipients = 1000
	s.srv.MaxMessageBytes = 64 << 20
	if o.ReadTimeout > 0 {
		s.srv.ReadTimeout = o.ReadTimeout
	}
	s.srv.TLSConfig, s.srv.EnableREQUIRETLS = o.TLSConfig, o.RequireTLS
	s.srv.EnableSMTPUTF8 = o.SMTPUTF8
	if o.No8BitMIME {
		ln = no8bitListener{ln}
	}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server and unblocks stalled sessions.
func (s *Server) Close() error {
	s.Release()
	return s.srv.Close()
}

// Release lets stalled sessions go on (they then get a 451).
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// Script sets the answer to recipients with this local part.
func (s *Server) Script(local string, r Reply) {
	s.mu.Lock()
	s.script[strings.ToLower(local)] = r
	s.mu.Unlock()
}

// FailFirst makes the next n attempts for this local part fail with its
// scripted reply; after that it is accepted.
func (s *Server) FailFirst(local string, n int) {
	s.mu.Lock()
	s.once[strings.ToLower(local)] = n
	s.mu.Unlock()
}

// Messages returns the accepted messages so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Received counts accepted messages (kept or discarded).
func (s *Server) Received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received
}

// WaitFor waits until n messages were accepted or timeout passes.
func (s *Server) WaitFor(n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s.Received() >= n {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s.Received() >= n
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	host, _, _ := net.SplitHostPort(c.Conn().RemoteAddr().String())
	return &session{s: b.s, conn: c, remote: host}, nil
}

type session struct {
	s      *Server
	conn   *smtp.Conn
	remote string
	from   string
	to     []string
	slow   bool
	fail   bool
	// requireTLS is the REQUIRETLS MAIL parameter.
	requireTLS bool
}

func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	ss.from = from
	ss.requireTLS = opts != nil && opts.RequireTLS
	return nil
}

func smtpError(r Reply) *smtp.SMTPError {
	e := &smtp.SMTPError{Code: r.Code, Message: r.Text}
	if r.Enhanced != "" {
		var c smtp.EnhancedCode
		fmt.Sscanf(r.Enhanced, "%d.%d.%d", &c[0], &c[1], &c[2])
		e.EnhancedCode = c
	} else {
		e.EnhancedCode = smtp.NoEnhancedCode
	}
	return e
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	local := strings.ToLower(to)
	if i := strings.LastIndexByte(local, '@'); i >= 0 {
		local = local[:i]
	}
	s := ss.s
	s.mu.Lock()
	r, scripted := s.script[local]
	if n, limited := s.once[local]; limited {
		if n <= 0 {
			scripted = false
		} else {
			s.once[local] = n - 1
		}
	}
	release := s.release
	s.mu.Unlock()
	if scripted {
		switch local {
		case "drop":
			ss.conn.Conn().Close()
			return errors.New("connection dropped")
		case "stall":
			<-release
			return smtpError(Reply{451, "4.4.2", "stalled"})
		case "dataerror":
			ss.fail = true
			scripted = false
		case "slowaccept":
			ss.slow = true
			scripted = false
		}
	}
	if scripted {
		return smtpError(r)
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return err
	}
	if ss.fail {
		return smtpError(Reply{554, "5.6.0", "message content rejected"})
	}
	if ss.slow {
		time.Sleep(200 * time.Millisecond)
	}
	_, tlsOn := ss.conn.TLSConnectionState()
	m := Message{From: ss.from, To: append([]string(nil), ss.to...), RemoteIP: ss.remote,
		HELO: ss.conn.Hostname(), At: time.Now(), TLS: tlsOn, RequireTLS: ss.requireTLS}
	s := ss.s
	s.mu.Lock()
	s.received++
	if !s.discard {
		m.Data = buf.Bytes()
		s.msgs = append(s.msgs, m)
	} else {
		m.Data = buf.Bytes() // still handed to OnMessage
	}
	s.mu.Unlock()
	if s.onData != nil {
		s.onData(m)
	}
	return nil
}

func (ss *session) Reset()        { ss.from, ss.to, ss.slow, ss.fail = "", nil, false, false }
func (ss *session) Logout() error { return nil }

// no8bitListener hides 8BITMIME from the EHLO reply: go-smtp writes each
// reply line in a write of its own, so the line is dropped whole.
type no8bitListener struct{ net.Listener }

func (l no8bitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return no8bitConn{c}, nil
}

type no8bitConn struct{ net.Conn }

func (c no8bitConn) Write(b []byte) (int, error) {
	if bytes.Equal(b, []byte("250-8BITMIME\r\n")) {
		return len(b), nil
	}
	return c.Conn.Write(b)
}
