package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"mailbolt/app"
	"mailbolt/mta/submission"
	"mailbolt/web"
)

// SMTP submission settings of serve (docs/smtp.md): --submission-addr
// (STARTTLS, conventionally :587) and --submissions-addr (TLS from the
// first byte, :465), both off by default. AUTH needs TLS, so both need a
// certificate (--tls-cert/--tls-key or --acme-domains); --submission-addr
// runs without one only with --dev, for loopback clients.

// validateSubmission checks the submission flags.
func (cfg serveConfig) validateSubmission() error {
	for _, a := range []struct{ flag, addr string }{{"--submission-addr", cfg.submissionAddr}, {"--submissions-addr", cfg.submissionsAddr}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%s: %q is not host:port", a.flag, a.addr)
		}
	}
	switch {
	case cfg.submissionsAddr != "" && !cfg.tlsEnabled():
		return errors.New("--submissions-addr speaks TLS from the first byte and needs a certificate: --tls-cert and --tls-key, or --acme-domains")
	case cfg.submissionAddr != "" && !cfg.tlsEnabled() && !cfg.dev:
		return errors.New("--submission-addr needs a certificate for STARTTLS (--tls-cert and --tls-key, or --acme-domains): AUTH is refused without TLS; --dev lets loopback clients log in without it")
	}
	return nil
}

// submissionListener is one bound submission port and its server.
type submissionListener struct {
	name     string // the flag, for logs
	ln       net.Listener
	implicit bool               // TLS from the first byte (--submissions-addr)
	srv      *submission.Server // nil until serveSubmissionOn
}

// listenSubmission binds the submission ports that are configured; with
// the other ports, before the database is opened (service.listen). close
// releases what it bound.
func (s *service) listenSubmission() error {
	for _, l := range []struct {
		flag, addr string
		implicit   bool
	}{{"--submission-addr", s.cfg.submissionAddr, false}, {"--submissions-addr", s.cfg.submissionsAddr, true}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fmt.Errorf("%s: listen on %s: %w", l.flag, l.addr, err)
		}
		s.submission = append(s.submission, &submissionListener{name: l.flag, ln: ln, implicit: l.implicit})
	}
	return nil
}

// serveSubmissionOn builds the servers of the bound submission ports over
// the use cases, once the database is open.
func (s *service) serveSubmissionOn(wc web.Config) {
	for _, l := range s.submission {
		// Failed logins are counted in the database (in memory on the
		// embedded engine): several nodes delay a network as one does.
		throttle := submission.DefaultThrottle
		throttle.Count = s.db.AddCount
		o := submission.Options{Domain: s.cfg.hostname, ImplicitTLS: l.implicit, Dev: s.cfg.dev,
			MaxMessageSize: s.cfg.maxMessage, MaxRecipients: app.MaxRecipients, Logger: s.log,
			Throttle: submission.NewThrottle(throttle)}
		if s.tls != nil {
			o.TLS = s.tls.Config()
		}
		refusal := tooManySMTPConnections
		if l.implicit {
			refusal = nil // a client expecting TLS cannot read a plain 421: just close
		}
		l.ln = web.LimitConns(l.ln, wc.MaxConnsPerIP, wc.TrustedProxies, refusal)
		l.srv = submission.NewServer(s.app.SMTP(), o)
	}
}

// serveSubmission starts the submission servers.
func (s *service) serveSubmission() {
	for _, l := range s.submission {
		go func() {
			if err := l.srv.Serve(l.ln); err != nil {
				s.log.Error("submission listener stopped", "listener", l.name, "err", err)
			}
		}()
	}
}

// submissionAddrs are the bound submission addresses, for the start line.
func (s *service) submissionAddrs() []any {
	var out []any
	for _, l := range s.submission {
		out = append(out, l.name[2:], l.ln.Addr().String())
	}
	return out
}

// shutdownSubmission stops accepting and lets sessions end within ctx.
func (s *service) shutdownSubmission(ctx context.Context) {
	for _, l := range s.submission {
		if err := l.srv.Shutdown(ctx); err != nil {
			l.srv.Close()
		}
	}
}

// closeSubmission releases the bound ports of a service that never ran.
func (s *service) closeSubmission() {
	for _, l := range s.submission {
		l.ln.Close()
	}
}
