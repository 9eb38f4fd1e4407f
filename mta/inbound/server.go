package inbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-smtp"
)

// Handler decides what the inbound listener takes and what becomes
// of it. The listener never relays: it takes mail only for the recipients
// Accept approves, and hands each message to Deliver once it is whole.
type Handler interface {
	// Accept decides whether mail for rcpt is taken (bounce, feedback
	// loop and unsubscribe addresses, routed addresses of inbound domains):
	// nil takes it, an error wrapping ErrRetryLater answers 451 (the
	// decision needed storage that failed), a *Reply is answered as it
	// is, and any other error refuses it with 550 5.7.1.
	Accept(env Envelope, rcpt string) error
	// Deliver processes one received message; logging what it cannot
	// use is the handler's. The listener acknowledges the message
	// whatever Deliver returns (a report that cannot be used must not come
	// back in a loop of retries), except an error wrapping ErrRetryLater:
	// what the message says could not be recorded, and the sender is told
	// to try again (451); and a *Reply, answered as it is.
	Deliver(env Envelope, rcpts []string, data []byte) error
}

// Envelope is what the session knows of a message besides its recipients
// and its bytes: who connected, the name it gave, and the reverse-path.
type Envelope struct {
	RemoteIP net.IP // nil when the connection is not TCP
	HELO     string
	From     string // "" for the null reverse-path
	// Rcpts are the recipients taken so far in this transaction (for
	// Accept: a handler may keep kinds of mail in separate transactions).
	Rcpts []string
}

// Reply is an SMTP reply a Handler chooses: a refusal with its own code
// and text (550 5.1.1 for an unrouted address, 452 over a quota).
type Reply struct {
	Code     int
	Enhanced [3]int
	Message  string
}

func (r *Reply) Error() string {
	return fmt.Sprintf("%d %d.%d.%d %s", r.Code, r.Enhanced[0], r.Enhanced[1], r.Enhanced[2], r.Message)
}

// smtpReply is r as go-smtp answers it.
func (r *Reply) smtpReply() *smtp.SMTPError {
	return &smtp.SMTPError{Code: r.Code, EnhancedCode: smtp.EnhancedCode(r.Enhanced), Message: r.Message}
}

// ErrRetryLater marks a Deliver error that the sender should retry: the
// message was usable but could not be recorded now (a storage failure).
var ErrRetryLater = errors.New("inbound: could not be recorded now")

// Options bound what one session may send.
type Options struct {
	Domain         string        // the name the greeting and EHLO reply carry
	MaxMessageSize int64         // bytes; 10 MiB when zero
	MaxRecipients  int           // per message; 10 when zero
	ReadTimeout    time.Duration // per command; 60 s when zero
	WriteTimeout   time.Duration // per reply; 60 s when zero
	ErrorLog       *log.Logger   // connection errors; discarded when nil
	// TLSConfig, when set, is offered as STARTTLS (the server certificate
	// of --tls-cert or ACME). Plain sessions stay allowed: a sender that
	// cannot do TLS still gets its bounce through.
	TLSConfig *tls.Config
}

// Server is the inbound listener (--smtp-addr): go-smtp's server over
// connections that a session can have closed once a refused message has
// been read far enough (see cutoffConn).
type Server struct {
	srv *smtp.Server
}

// NewServer builds the SMTP server of the inbound listener
// (--smtp-addr): go-smtp with the limits of opts, STARTTLS when
// opts.TLSConfig is set, no AUTH, no relaying.
func NewServer(h Handler, opts Options) *Server {
	max := opts.MaxMessageSize
	if max == 0 {
		max = 10 << 20
	}
	s := smtp.NewServer(backend{h, max})
	s.Domain = opts.Domain
	// go-smtp (v0.25) advertises SIZE with a value only from
	// MaxMessageBytes (RFC 1870: SIZE without one means no fixed limit, so
	// a sender could not refuse early), and then enforces it too: MAIL
	// FROM with a larger SIZE= gets 552 5.3.4 before Mail runs, a BDAT
	// chunk past it is refused, and DATA's reader stops at it while
	// go-smtp reads the rest and answers after the message, so the client
	// sees the 552, not a broken pipe. That reader stops before it can
	// see the end of a message of exactly the limit, and refuses it too:
	// with DATA the largest message taken is one byte less
	// (docs/inbound.md). The session keeps its own checks (Mail, Data)
	// and bounds how much of a refused message is read (readAtMost).
	s.MaxMessageBytes = max
	s.MaxRecipients = opts.MaxRecipients
	if s.MaxRecipients == 0 {
		s.MaxRecipients = 10
	}
	s.ReadTimeout, s.WriteTimeout = opts.ReadTimeout, opts.WriteTimeout
	if s.ReadTimeout == 0 {
		s.ReadTimeout = time.Minute
	}
	if s.WriteTimeout == 0 {
		s.WriteTimeout = time.Minute
	}
	s.TLSConfig = opts.TLSConfig
	s.ErrorLog = opts.ErrorLog
	if s.ErrorLog == nil {
		s.ErrorLog = log.New(io.Discard, "", 0)
	}
	return &Server{srv: s}
}

// Serve accepts connections on ln until Close or Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(cutoffListener{ln}) }

// Shutdown stops accepting and waits for the sessions to end, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// Close stops accepting and closes every connection at once.
func (s *Server) Close() error { return s.srv.Close() }

type backend struct {
	h   Handler
	max int64
}

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{h: b.h, c: c, max: b.max}, nil
}

type session struct {
	h    Handler
	c    *smtp.Conn
	max  int64
	from string
	to   []string
}

// errTooLarge is RFC 1870's refusal of a message over the size limit.
var errTooLarge = &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4},
	Message: "the message is larger than this server takes"}

func (s *session) Mail(from string, opts *smtp.MailOptions) error {
	// go-smtp refuses a SIZE= over the SIZE it advertises before this
	// runs; the limit is checked here too, whatever go-smtp does.
	if opts != nil && opts.Size > s.max {
		return errTooLarge // RFC 1870 §6.2: declared too large
	}
	s.from, s.to = from, nil
	s.readAtMost(-1)
	return nil
}

// envelope is what the session knows of the current message.
func (s *session) envelope() Envelope {
	env := Envelope{From: s.from, Rcpts: s.to}
	if s.c != nil {
		env.HELO = s.c.Hostname()
		if a, ok := s.c.Conn().RemoteAddr().(*net.TCPAddr); ok {
			env.RemoteIP = a.IP
		}
	}
	return env
}

var errNoRelay = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
	Message: "no such address: this server takes only bounces, complaints and unsubscribe requests for its own addresses, and mail for verified inbound domains"}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.ContainsAny(to, "\r\n") {
		return errNoRelay
	}
	var reply *Reply
	if err := s.h.Accept(s.envelope(), to); errors.Is(err, ErrRetryLater) {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
			Message: "the address could not be checked now; try again later"}
	} else if errors.As(err, &reply) {
		return reply.smtpReply()
	} else if err != nil {
		return errNoRelay
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, s.max+1))
	if n > s.max || errors.Is(err, smtp.ErrDataTooLarge) {
		// go-smtp's reader stops at the limit, then go-smtp reads the
		// rest so that the reply comes when the client expects it (RFC
		// 5321 §4.5.3.1.10), but not without end: after about three
		// times the limit more (four in all) the connection is closed.
		s.readAtMost(3 * s.max)
		return errTooLarge
	}
	if err != nil {
		return err // the connection broke
	}
	// Durable before acknowledged: Deliver returns once what it records
	// is committed, and a failure to record it is not acknowledged.
	var reply *Reply
	if err := s.h.Deliver(s.envelope(), s.to, buf.Bytes()); errors.As(err, &reply) {
		return reply.smtpReply()
	} else if errors.Is(err, ErrRetryLater) {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
			Message: "the message could not be recorded now; try again later"}
	}
	return nil
}

// readAtMost has the connection closed once n more bytes have been read
// from it, until the next transaction (or RSET); -1 lifts that.
func (s *session) readAtMost(n int64) {
	if s.c == nil {
		return
	}
	c := s.c.Conn()
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn() // after STARTTLS: the bytes counted are TLS records
	}
	if cc, ok := c.(*cutoffConn); ok {
		cc.left.Store(n)
	}
}

func (s *session) Reset() {
	s.from, s.to = "", nil
	s.readAtMost(-1)
}

func (s *session) Logout() error { return nil }
