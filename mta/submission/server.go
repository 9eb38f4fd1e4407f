// Package submission is the SMTP submission listener (RFC 6409): apps
// that speak only SMTP hand their mail to Mailbolt here, logging in with
// an API key as the password. It is built on go-smtp's server and knows
// nothing of accounts or messages: a Backend (app's, in production)
// checks the key and takes each message.
//
// Its rules, first:
//   - AUTH (PLAIN or LOGIN) only over TLS: STARTTLS on the submission port,
//     TLS from the first byte on the submissions port (RFC 8314). Without
//     TLS only a loopback client may log in, and only with Options.Dev.
//   - Nothing is taken before AUTH (530 5.7.0).
//   - A failed AUTH is answered after a delay that grows with the failures
//     from the client's network (/24 for IPv4, /64 for IPv6); a valid key
//     is checked first and never waits. Logs name the client's address
//     and at most the first 12 characters of the key tried.
//   - 250 after DATA only once the Backend has committed the message; its
//     reply text carries the message id.
package submission

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Backend checks logins and takes messages.
type Backend interface {
	// Login checks the password of an AUTH (an API key; the user name is
	// not used). A *Reply error is answered as it is; any other is 535
	// 5.7.8. Only an error made by BadCredentials (or one not a *Reply)
	// counts as a failed guess for the throttle: a real key that may not
	// send is refused at once.
	Login(password string) (Sender, error)
}

// Sender is the logged-in side of a session: it sends for one key.
type Sender interface {
	// Mail is called at MAIL FROM; a *Reply error refuses the
	// transaction (451 4.7.0 over the rate limit) and the session goes on.
	Mail(from string) error
	// Rcpt checks one recipient; a *Reply error refuses it.
	Rcpt(to string) error
	// Submit takes one whole message and returns its id once it is
	// committed. A *Reply error is answered as it is; any other is 451.
	Submit(env Envelope) (id string, err error)
}

// Envelope is one submitted message.
type Envelope struct {
	From string   // MAIL FROM (replaced by the bounce address on delivery)
	To   []string // RCPT TO: who the message is delivered to
	Data []byte   // the message as received (CRLF line endings)
	// UTF8 is set when the client asked for SMTPUTF8 (RFC 6531).
	UTF8 bool
	// RequireTLS is set when MAIL FROM carried REQUIRETLS (RFC 8689).
	RequireTLS bool
}

// Reply is an SMTP answer a Backend chooses: code, enhanced status code
// (RFC 3463, "5.7.1") and text.
type Reply struct {
	Code     int
	Enhanced string
	Text     string

	guess bool // a wrong password: counted by the throttle
}

// BadCredentials is the answer to a password that is no valid key:
// 535 5.7.8 (RFC 4954 §6), counted as a failed guess.
func BadCredentials(text string) *Reply {
	return &Reply{Code: 535, Enhanced: "5.7.8", Text: text, guess: true}
}

func (r *Reply) Error() string { return fmt.Sprintf("%d %s %s", r.Code, r.Enhanced, r.Text) }

func (r *Reply) smtp() *smtp.SMTPError {
	e := &smtp.SMTPError{Code: r.Code, EnhancedCode: smtp.NoEnhancedCode, Message: r.Text}
	var c smtp.EnhancedCode
	if _, err := fmt.Sscanf(r.Enhanced, "%d.%d.%d", &c[0], &c[1], &c[2]); err == nil {
		e.EnhancedCode = c
	}
	return e
}

// Options configure a listener.
type Options struct {
	Domain string // the name the greeting and EHLO reply carry
	// TLS is the certificate configuration: STARTTLS is offered with it,
	// and ImplicitTLS listeners speak it from the first byte. Nil offers
	// no TLS, and then only loopback clients with Dev may log in.
	TLS *tls.Config
	// ImplicitTLS makes the listener the submissions port (RFC 8314).
	ImplicitTLS bool
	// Dev lets loopback clients log in without TLS.
	Dev bool
	// MaxMessageSize is SIZE (RFC 1870): larger messages get 552 5.3.4.
	MaxMessageSize int64
	// MaxRecipients per message; beyond it RCPT gets 452 4.5.3.
	MaxRecipients int
	ReadTimeout   time.Duration // per command; 5 min when zero (RFC 5321 §4.5.3.2)
	WriteTimeout  time.Duration // per reply; 1 min when zero
	Logger        *slog.Logger
	// Throttle delays answers to failed logins; DefaultThrottle when nil.
	Throttle *Throttle
}

// Server is one submission listener.
type Server struct {
	srv      *smtp.Server
	opts     Options
	log      *slog.Logger
	backend  Backend
	throttle *Throttle

	mu    sync.Mutex
	conns map[*coalescingConn]struct{}
}

// track adds or removes an open connection.
func (s *Server) track(c *coalescingConn, open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if open {
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
}

// NewServer builds a listener over b.
func NewServer(b Backend, opts Options) *Server {
	s := &Server{opts: opts, backend: b, log: opts.Logger, throttle: opts.Throttle, conns: map[*coalescingConn]struct{}{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.throttle == nil {
		s.throttle = NewThrottle(DefaultThrottle)
	}
	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = opts.Domain
	srv.MaxMessageBytes = opts.MaxMessageSize
	srv.MaxRecipients = opts.MaxRecipients
	srv.ReadTimeout, srv.WriteTimeout = opts.ReadTimeout, opts.WriteTimeout
	if srv.ReadTimeout == 0 {
		srv.ReadTimeout = 5 * time.Minute
	}
	if srv.WriteTimeout == 0 {
		srv.WriteTimeout = time.Minute
	}
	srv.EnableSMTPUTF8 = true
	// REQUIRETLS (RFC 8689) is offered once the session runs over TLS
	// (go-smtp advertises it only then); the delivery honours it.
	srv.EnableREQUIRETLS = true
	// The session decides per connection (TLS, or loopback with Dev):
	// go-smtp's own check would refuse every plain-text AUTH.
	srv.AllowInsecureAuth = true
	if !opts.ImplicitTLS {
		srv.TLSConfig = opts.TLS
	}
	srv.ErrorLog = log.New(io.Discard, "", 0)
	if opts.Logger != nil {
		srv.ErrorLog = slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug)
	}
	s.srv = srv
	return s
}

// Serve accepts connections on ln until Close or Shutdown. An
// ImplicitTLS listener wraps ln in TLS.
func (s *Server) Serve(ln net.Listener) error {
	ln = coalescingListener{ln, s}
	if s.opts.ImplicitTLS {
		if s.opts.TLS == nil {
			return errors.New("submission: implicit TLS needs a certificate")
		}
		ln = tls.NewListener(ln, s.opts.TLS)
	}
	return s.srv.Serve(ln)
}

// Shutdown stops accepting, closes every session that is not inside a
// transaction (421 4.3.2, RFC 5321 §3.8: apps keep idle sessions open for
// long), lets each transaction in flight finish and then closes its
// session, and returns when none is left or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.srv.Shutdown(ctx) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.closeIdle()
		select {
		case err := <-done:
			return err
		case <-tick.C:
		}
	}
}

// closeIdle closes the sessions not inside a transaction.
func (s *Server) closeIdle() {
	s.mu.Lock()
	var idle []*coalescingConn
	for c := range s.conns {
		if !c.busy.Load() {
			idle = append(idle, c)
		}
	}
	s.mu.Unlock()
	for _, c := range idle {
		if p := c.outer.Load(); p != nil {
			outer := *p
			outer.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(outer, "421 4.3.2 Service shutting down, try again later\r\n")
		}
		c.Close()
	}
}

// Close stops the listener and closes every session at once.
func (s *Server) Close() error { return s.srv.Close() }

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	ss := &session{s: s, conn: c}
	if cc := ss.raw(); cc != nil {
		outer := c.Conn()
		cc.outer.Store(&outer)
	}
	return ss, nil
}

// raw is the session's connection under TLS, if any.
func (ss *session) raw() *coalescingConn {
	c := ss.conn.Conn()
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, _ := c.(*coalescingConn)
	return cc
}

// setBusy marks the session inside a transaction or not, for Shutdown.
func (ss *session) setBusy(busy bool) {
	if cc := ss.raw(); cc != nil {
		cc.busy.Store(busy)
	}
}

type session struct {
	s      *Server
	conn   *smtp.Conn
	sender Sender
	key    string // the first characters of the key logged in with, for logs
	from   string
	utf8   bool
	// requireTLS is the REQUIRETLS MAIL parameter (RFC 8689): the message
	// is to be delivered only over verified TLS.
	requireTLS bool
	to         []string
	failed     int // failed logins on this connection
}

// remoteIP is the client's address.
func (ss *session) remoteIP() net.IP {
	if a, ok := ss.conn.Conn().RemoteAddr().(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}

// secure reports whether a login may happen on this connection: over
// TLS, or from loopback in dev mode.
func (ss *session) secure() bool {
	if _, ok := ss.conn.TLSConnectionState(); ok {
		return true
	}
	ip := ss.remoteIP()
	return ss.s.opts.Dev && ip != nil && ip.IsLoopback()
}

var (
	errTLSRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0},
		Message: "Must issue a STARTTLS command first"}
	errAuthRequired = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0},
		Message: "Authentication required: AUTH PLAIN or LOGIN with an API key as the password"}
	errAuthFailed = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8},
		Message: "Authentication credentials invalid"}
	errTooManyFailures = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0},
		Message: "Too many failed logins; closing the connection"}
)

// maxFailuresPerConn is how many failed logins one connection may make
// before it is closed.
const maxFailuresPerConn = 3

func (ss *session) AuthMechanisms() []string {
	if !ss.secure() {
		return nil // not even advertised before TLS (RFC 4954 §4)
	}
	return []string{sasl.Plain, sasl.Login}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if !ss.secure() {
		return nil, errTLSRequired
	}
	if ss.sender != nil {
		return nil, &smtp.SMTPError{Code: 503, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "Already authenticated"}
	}
	check := func(password string) error { return ss.login(password) }
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, _, password string) error { return check(password) }), nil
	case sasl.Login:
		return newLoginServer(check), nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

// login checks a password through the Backend, and on failure waits the
// throttle's delay for the client's network before answering.
func (ss *session) login(password string) error {
	ip := ss.remoteIP()
	sender, err := ss.s.backend.Login(password)
	if err == nil {
		ss.sender, ss.key = sender, keyPrefix(password)
		ss.s.log.Info("smtp login", "remote", ip.String(), "key_prefix", ss.key)
		return nil
	}
	var r *Reply
	counted := !errors.As(err, &r) || r.guess
	ss.s.log.Warn("smtp login failed", "remote", ip.String(), "key_prefix", keyPrefix(password), "err", err.Error())
	if counted {
		ss.failed++
		time.Sleep(ss.s.throttle.Fail(ip))
		if ss.failed >= maxFailuresPerConn {
			// The reply is written here, not by go-smtp, so that the
			// connection can be closed right after it (every earlier reply
			// is flushed, so nothing overtakes it).
			e := errTooManyFailures
			fmt.Fprintf(ss.conn.Conn(), "%d %d.%d.%d %s\r\n", e.Code, e.EnhancedCode[0], e.EnhancedCode[1], e.EnhancedCode[2], e.Message)
			ss.conn.Close()
			return e
		}
	}
	if r != nil {
		return r.smtp()
	}
	return errAuthFailed
}

// keyPrefix is what logs may show of a key tried: at most 12 characters
// ("svc_live_" and three of the secret).
func keyPrefix(k string) string {
	if len(k) > 12 {
		k = k[:12]
	}
	return strings.ToValidUTF8(k, "?")
}

func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	if ss.sender == nil {
		if !ss.secure() {
			return errTLSRequired
		}
		return errAuthRequired
	}
	if err := ss.sender.Mail(from); err != nil {
		return replyOr(err, 451, "4.3.0")
	}
	ss.from, ss.to, ss.utf8 = from, nil, opts != nil && opts.UTF8
	ss.requireTLS = opts != nil && opts.RequireTLS
	ss.setBusy(true)
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.sender == nil {
		return errAuthRequired
	}
	if err := ss.sender.Rcpt(to); err != nil {
		return replyOr(err, 451, "4.3.0")
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return err // over SIZE (go-smtp answers 552), or the connection broke
	}
	id, err := ss.sender.Submit(Envelope{From: ss.from, To: ss.to, Data: buf.Bytes(), UTF8: ss.utf8, RequireTLS: ss.requireTLS})
	if err != nil {
		return replyOr(err, 451, "4.3.0")
	}
	// 250 only now: the message is committed (RFC 5321 §6.1).
	return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.EnhancedCode{2, 0, 0}, Message: "OK: queued as " + id}
}

// replyOr answers a Backend error: its own Reply, or code and enhanced
// with a generic text (the cause is the Backend's to log).
func replyOr(err error, code int, enhanced string) error {
	var r *Reply
	if errors.As(err, &r) {
		return r.smtp()
	}
	return (&Reply{Code: code, Enhanced: enhanced, Text: "temporary failure, try again later"}).smtp()
}

// Reset ends a transaction: RSET, or go-smtp after DATA.
func (ss *session) Reset() {
	ss.from, ss.to, ss.utf8, ss.requireTLS = "", nil, false, false
	ss.setBusy(false)
}
func (ss *session) Logout() error { return nil }
