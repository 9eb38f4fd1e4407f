package inbound

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"strings"
	"time"

	"github.com/emersion/go-smtp"
)

// Handler decides what the inbound listener takes and what becomes
// of it. The listener never relays: it takes mail only for the recipients
// Accept approves, and hands each message to Deliver once it is whole.
type Handler interface {
	// Accept decides whether mail for rcpt is taken (bounce, feedback
	// loop and unsubscribe addresses): nil takes it, an error wrapping
	// ErrRetryLater answers 451 (the decision needed storage that failed),
	// and any other error refuses it with 550 5.7.1.
	Accept(rcpt string) error
	// Deliver processes one received message; logging what it cannot
	// use is the handler's. The listener acknowledges the message
	// whatever Deliver returns (a report that cannot be used must not come
	// back in a loop of retries), except an error wrapping ErrRetryLater:
	// what the message says could not be recorded, and the sender is told
	// to try again (451).
	Deliver(from string, rcpts []string, data []byte) error
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

// NewServer builds the SMTP server of the inbound listener
// (--smtp-addr): go-smtp with the limits of opts, STARTTLS when
// opts.TLSConfig is set, no AUTH, no relaying.
func NewServer(h Handler, opts Options) *smtp.Server {
	s := smtp.NewServer(backend{h})
	s.Domain = opts.Domain
	s.MaxMessageBytes = opts.MaxMessageSize
	if s.MaxMessageBytes == 0 {
		s.MaxMessageBytes = 10 << 20
	}
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
	return s
}

type backend struct{ h Handler }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{h: b.h}, nil
}

type session struct {
	h    Handler
	from string
	to   []string
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.from, s.to = from, nil
	return nil
}

var errNoRelay = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
	Message: "no such address: this server takes only bounces, complaints and unsubscribe requests for its own addresses"}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.ContainsAny(to, "\r\n") {
		return errNoRelay
	}
	if err := s.h.Accept(to); errors.Is(err, ErrRetryLater) {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
			Message: "the address could not be checked now; try again later"}
	} else if err != nil {
		return errNoRelay
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return err // over the size limit, or the connection broke
	}
	// Durable before acknowledged: Deliver returns once what it records
	// is committed, and a failure to record it is not acknowledged.
	if err := s.h.Deliver(s.from, s.to, buf.Bytes()); errors.Is(err, ErrRetryLater) {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
			Message: "the message could not be recorded now; try again later"}
	}
	return nil
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }
