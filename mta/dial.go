package mta

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// connect returns a session with hop that is ready for MAIL FROM: an idle
// one from the pool (checked with RSET) or a new one.
func (d *Deliverer) connect(ctx context.Context, p *hostPool, hop Hop, src net.IP, helo string, probe bool, sec security) (*smtpConn, error) {
	key := connKey{helo: helo, sec: sec.key()}
	if src != nil {
		key.src = src.String()
	}
	for {
		c, err := p.acquire(ctx, key)
		if err != nil {
			return nil, localError(false, "4.4.1", "no connection slot for %s: %v", hop.Host, err)
		}
		if c == nil {
			c, err := d.dial(ctx, hop, src, helo, sec)
			if err != nil {
				p.unreserve()
				return nil, err
			}
			c.pool, c.key = p, key
			return c, nil
		}
		// A session whose last transaction ended cleanly moments ago
		// goes straight to MAIL FROM (RFC 5321 §4.1.4 needs no RSET
		// there); otherwise RSET both ends the previous transaction and
		// proves that the server has not closed the connection while it
		// was idle.
		c.unprobed = !probe && c.clean && time.Since(c.idleAt) < probeAfter
		if c.unprobed {
			return c, nil
		}
		if err := c.reset(ctx); err == nil {
			return c, nil
		}
		p.discard(c, false)
		if ctx.Err() != nil {
			return nil, localError(false, "4.4.1", "no connection to %s: %v", hop.Host, ctx.Err())
		}
	}
}

// probeAfter is how long a cleanly released connection may idle before
// its reuse is preceded by an RSET. A variable for tests.
var probeAfter = time.Second

// dial connects to the first address of hop that completes the handshake.
func (d *Deliverer) dial(ctx context.Context, hop Hop, src net.IP, helo string, sec security) (*smtpConn, error) {
	ips, err := d.hopAddrs(ctx, hop, src)
	if err != nil {
		e := replyError(hop.Host, err)
		e.Host = hop.Host
		return nil, e
	}
	var errs []*DeliveryError
	for _, ip := range ips {
		c, err := d.open(ctx, hop, ip, src, helo, true, sec)
		var tf *tlsFailed
		if errors.As(err, &tf) && !sec.enforce && !sec.requireTLS {
			// Opportunistic TLS failed in the handshake: RFC 7435 prefers
			// a cleartext session to none, on a new connection.
			d.logger().Debug("STARTTLS failed, retrying without TLS", "host", hop.Host, "addr", ip, "err", tf.err)
			c, err = d.open(ctx, hop, ip, src, helo, false, sec)
		} else if tf != nil {
			err = securityError(hop.Host, sec, "TLS with MX host %s failed: %v", hop.Host, tf.err)
		}
		if err == nil {
			return c, nil
		}
		errs = append(errs, replyError(hop.Host, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, summarize(errs)
}

// tlsFailed is an opportunistic STARTTLS whose handshake failed: the
// connection is gone, a cleartext one may be tried.
type tlsFailed struct{ err error }

func (e *tlsFailed) Error() string { return "STARTTLS: " + e.err.Error() }

// open makes one connection to ip and runs the handshake: greeting, EHLO,
// STARTTLS when offered (and tryTLS), AUTH for a relay.
func (d *Deliverer) open(ctx context.Context, hop Hop, ip, src net.IP, helo string, tryTLS bool, sec security) (*smtpConn, error) {
	dialer := net.Dialer{Timeout: d.connectTimeout()}
	if src != nil {
		dialer.LocalAddr = &net.TCPAddr{IP: src}
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(hop.Port))
	raw, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		e := localError(false, "4.4.1", "connect to %s: %v", addr, err)
		e.Host = hop.Host
		return nil, e
	}
	// Canceling ctx closes the connection, which ends any blocked I/O.
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	c := &smtpConn{d: d, host: hop.Host, raw: raw}
	err = c.handshake(ctx, hop, helo, tryTLS, sec)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		raw.Close()
		return nil, err
	}
	d.logger().Debug("connected", "host", hop.Host, "addr", addr, "src", src, "tls", c.tls)
	return c, nil
}

func (d *Deliverer) newClient(conn net.Conn) *smtp.Client {
	cl := smtp.NewClient(conn)
	cl.CommandTimeout = d.commandTimeout()
	cl.SubmissionTimeout = d.dataTimeout()
	return cl
}

// handshakeError is a failure before MAIL FROM. It fails the hop, not the
// message: temporary, unless the greeting said the host takes no mail at
// all (521, 556; RFC 7504).
func handshakeError(host string, err error) *DeliveryError {
	e := replyError(host, err)
	e.Permanent = e.Code == 521 || e.Code == 556
	return e
}

func (c *smtpConn) handshake(ctx context.Context, hop Hop, helo string, tryTLS bool, sec security) error {
	d := c.d
	relay := d.opts.Relay
	var conn net.Conn = c.raw
	if hop.Relay && relay.ImplicitTLS {
		tc := tls.Client(c.raw, d.relayTLS(hop.Host))
		hctx, cancel := context.WithTimeout(ctx, d.connectTimeout())
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return &DeliveryError{Enhanced: "4.7.10", Text: fmt.Sprintf("TLS with relay failed: %v", err), Host: hop.Host}
		}
		conn, c.tls, c.tlsVersion = tc, true, tls.VersionName(tc.ConnectionState().Version)
	}
	cl := d.newClient(conn)
	if err := cl.Hello(helo); err != nil {
		return handshakeError(hop.Host, err)
	}
	var failure string
	offered, _ := cl.Extension("STARTTLS")
	if offered && !c.tls && (tryTLS || hop.Relay) {
		var cfg *tls.Config
		if hop.Relay {
			cfg = d.relayTLS(hop.Host)
		} else {
			cfg = d.mxTLS(hop.Host, sec, &c.verified, &failure)
		}
		tc, err := startTLS(ctx, conn, cfg, d.commandTimeout(), d.connectTimeout())
		var refused *smtp.SMTPError
		switch {
		case err == nil:
			cl, conn = d.newClient(tc), tc
			if err := cl.Hello(helo); err != nil {
				return handshakeError(hop.Host, err)
			}
			c.tls = true
			if g, ok := tc.(*greetedConn); ok {
				if t, ok := g.Conn.(*tls.Conn); ok {
					c.tlsVersion = tls.VersionName(t.ConnectionState().Version)
				}
			}
		case hop.Relay:
			return &DeliveryError{Enhanced: "4.7.10", Text: fmt.Sprintf("STARTTLS with relay failed: %v", err), Host: hop.Host}
		case errors.As(err, &refused) && (sec.enforce || sec.requireTLS):
			d.reportSession(hop, sec, "starttls-not-supported", err.Error())
			return securityError(hop.Host, sec, "MX host %s refused STARTTLS (%v)", hop.Host, err)
		case errors.As(err, &refused):
			// The server declined STARTTLS; the session goes on in
			// cleartext.
		default:
			if failure == "" {
				failure = "validation-failure"
			}
			d.reportSession(hop, sec, failure, err.Error())
			return &tlsFailed{err}
		}
	}
	if hop.Relay {
		c.verified = c.tls
	}
	c.client, c.conn = cl, conn
	c.text = newText(c)
	if !hop.Relay {
		if err := c.checkSecurity(hop, sec, tryTLS, failure); err != nil {
			return err
		}
		return nil
	}
	if sec.requireTLS && !c.tls {
		return securityError(hop.Host, sec, "the relay %s offers no STARTTLS", hop.Host)
	}
	if sec.requireTLS && !c.has("REQUIRETLS") {
		return securityError(hop.Host, sec, "the relay %s does not offer REQUIRETLS", hop.Host)
	}
	if relay.RequireTLS && !c.tls {
		return &DeliveryError{Enhanced: "4.7.10", Text: "relay offers no STARTTLS and TLS is required", Host: hop.Host}
	}
	if relay.Username == "" {
		return nil
	}
	if !c.tls && !relay.AllowInsecureAuth {
		return &DeliveryError{Enhanced: "4.7.10", Text: "refusing to send relay credentials without TLS", Host: hop.Host}
	}
	if !cl.SupportsAuth("PLAIN") {
		return &DeliveryError{Enhanced: "4.7.9", Text: "relay offers no AUTH PLAIN", Host: hop.Host}
	}
	if err := cl.Auth(sasl.NewPlainClient("", relay.Username, relay.Password)); err != nil {
		return handshakeError(hop.Host, err)
	}
	return nil
}

// relayTLS is the TLS of a relay session: the certificate is verified.
func (d *Deliverer) relayTLS(host string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if d.opts.Relay.TLSConfig != nil {
		cfg = d.opts.Relay.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	return cfg
}

// startTLS sends STARTTLS on a session that has said EHLO and returns the
// TLS connection, ready for a new go-smtp Client. go-smtp (v0.25) starts
// TLS only inside NewClientStartTLS, which introduces itself as "EHLO
// localhost" before TLS with no way to give a name (emersion/go-smtp#297);
// receivers do judge that first name, so the EHLO goes through go-smtp with
// our name and the STARTTLS exchange is done here. An SMTP reply other than
// 220 comes back as *smtp.SMTPError with the session still usable in
// cleartext.
func startTLS(ctx context.Context, conn net.Conn, cfg *tls.Config, cmdTimeout, tlsTimeout time.Duration) (net.Conn, error) {
	conn.SetDeadline(time.Now().Add(cmdTimeout))
	if _, err := io.WriteString(conn, "STARTTLS\r\n"); err != nil {
		return nil, err
	}
	code, text, err := readReply(conn)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	if code != 220 {
		return nil, &smtp.SMTPError{Code: code, Message: text}
	}
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, tlsTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		return nil, err
	}
	// A new Client reads a greeting first; the session after STARTTLS has
	// none (RFC 3207 §4.2), so it is given one.
	return &greetedConn{Conn: tc, r: io.MultiReader(strings.NewReader("220 TLS started\r\n"), tc)}, nil
}

// greetedConn is a connection whose first bytes read are supplied.
type greetedConn struct {
	net.Conn
	r io.Reader
}

func (g *greetedConn) Read(p []byte) (int, error) { return g.r.Read(p) }

// readReply reads one SMTP reply a byte at a time, so that nothing after it
// (the server's TLS handshake) is consumed.
func readReply(conn net.Conn) (int, string, error) {
	var lines []string
	var b [1]byte
	for range 100 {
		var line []byte
		for {
			if _, err := conn.Read(b[:]); err != nil {
				return 0, "", err
			}
			if b[0] == '\n' {
				break
			}
			if len(line) > 1000 {
				return 0, "", errors.New("reply line too long")
			}
			line = append(line, b[0])
		}
		s := strings.TrimSuffix(string(line), "\r")
		if len(s) < 3 {
			return 0, "", fmt.Errorf("malformed reply %q", s)
		}
		code, err := strconv.Atoi(s[:3])
		if err != nil {
			return 0, "", fmt.Errorf("malformed reply %q", s)
		}
		lines = append(lines, strings.TrimSpace(s[min(4, len(s)):]))
		if len(s) == 3 || s[3] != '-' {
			return code, strings.Join(lines, "\n"), nil
		}
	}
	return 0, "", errors.New("reply too long")
}
