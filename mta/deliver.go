package mta

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"mailbolt/netguard"
)

// Delivery rules, in the order they apply (docs/bounces.md shows how the
// outcomes are classified):
//
//   - Route: a Relay takes everything; otherwise the recipient domain's MX
//     hosts by preference, the domain itself when it has no MX, nothing at
//     all for a null MX (permanent, hard 5.1.10).
//   - Addresses of MX hosts (not of a Relay) that MXGuard refuses are
//     skipped. A hop with no other address fails permanently, 5.1.2 with
//     the refused address in the text, so a recipient whose every MX is
//     refused hard-bounces.
//   - Each hop is tried in turn. A hop is given up when it cannot be
//     reached, or fails before MAIL FROM (greeting, EHLO, STARTTLS, AUTH):
//     the next hop is tried. Those failures are temporary, except a 521 or
//     556 greeting (RFC 7504) and permanent DNS answers; the failure
//     reported is permanent only when every hop failed permanently.
//   - Once MAIL FROM has been answered the hop's replies stand: a 4xx is
//     temporary, a 5xx permanent, per recipient. A connection lost after
//     the final dot is temporary, so a retry may duplicate the message
//     (RFC 1047): that is SMTP's choice, not ours.
//   - Errors are temporary unless a reply or a DNS answer says otherwise.
//   - TLS: under a recipient domain's DANE records or MTA-STS policy in
//     enforce mode, only over TLS with a certificate they accept, never in
//     cleartext (security.go). Otherwise STARTTLS whenever an MX offers it
//     (opportunistic, RFC 7435); if the handshake fails the same address
//     is tried again in cleartext. A relay's certificate is always
//     verified, and a failure there is never downgraded. A REQUIRETLS
//     message (RFC 8689) goes only over verified TLS to a server that
//     offers REQUIRETLS, else it fails permanently (5.7.30).

// Options configure a Deliverer. Start from DefaultOptions: every field
// is used as given.
type Options struct {
	// Resolver looks MX hosts and their addresses up (the --dns-server).
	// Without one only a Relay can be reached.
	Resolver MXResolver
	// Relay, when set, takes all mail instead of the recipients' MX hosts.
	// It is trusted: MXGuard does not apply to it.
	Relay *Relay
	// MXGuard decides which addresses of MX hosts (and of a domain that is
	// its own mail host, or an address literal) mail may go to. The zero
	// value refuses loopback, private and every other range of netguard's
	// table, so that a recipient domain cannot aim the server at its own
	// network (--mx-allow-cidrs and --dev loosen it).
	MXGuard netguard.Policy
	// MXPort is the port of MX hosts (--mx-port).
	MXPort int
	// HELO is the EHLO name for envelopes that bring none.
	HELO string

	// ConnectTimeout bounds a TCP connect and a TLS handshake.
	ConnectTimeout time.Duration
	// CommandTimeout bounds the wait for each reply, the greeting
	// included (RFC 5321 §4.5.3.2 asks for 5 min).
	CommandTimeout time.Duration
	// DataTimeout bounds sending the message and the wait for the reply
	// to the final dot.
	DataTimeout time.Duration
	// IdleTimeout is how long an unused connection is kept.
	IdleTimeout time.Duration
	// MaxConnsPerHost caps the connections open to one host (MX host or
	// relay), busy and idle together.
	MaxConnsPerHost int
	// MaxMessagesPerConn closes a connection after that many
	// transactions, as receivers expect.
	MaxMessagesPerConn int

	// STS gives recipient domains' MTA-STS policies; nil turns MTA-STS
	// off. Not asked with a Relay.
	STS STSSource
	// DANE, when set (--dnssec), looks MX and TLSA records up with their
	// DNSSEC status; nil turns DANE off.
	DANE DANEResolver
	// RootCAs verify MX certificates (nil: the system roots); --tls-roots
	// adds to them.
	RootCAs *x509.CertPool
	// OnTLS, when set, is told the TLS result of each new MX session and
	// of each MX host a policy refused, for TLS reports. Called from
	// delivery goroutines: it must not block.
	OnTLS func(TLSOutcome)

	// Logger gets connection-level events at debug level.
	Logger *slog.Logger
}

// DefaultOptions are the documented defaults (docs/delivery.md): port 25,
// the machine's host name as EHLO name, 30 s to connect, 5 min per reply,
// 10 min for the data, idle connections kept 30 s, 10 connections per host
// and 100 messages per connection, no log.
func DefaultOptions() Options {
	helo, err := os.Hostname()
	if err != nil || helo == "" {
		helo = "localhost"
	}
	return Options{MXPort: 25, HELO: helo, ConnectTimeout: 30 * time.Second, CommandTimeout: 5 * time.Minute,
		DataTimeout: 10 * time.Minute, IdleTimeout: 30 * time.Second, MaxConnsPerHost: 10, MaxMessagesPerConn: 100,
		Logger: slog.New(slog.DiscardHandler)}
}

func (o Options) check() error {
	switch {
	case o.MXPort < 1 || o.MXPort > 65535:
		return fmt.Errorf("mta: MX port %d is not a TCP port", o.MXPort)
	case o.HELO == "":
		return errors.New("mta: an EHLO name is needed")
	case o.ConnectTimeout <= 0 || o.CommandTimeout <= 0 || o.DataTimeout <= 0 || o.IdleTimeout <= 0:
		return errors.New("mta: every timeout must be positive")
	case o.MaxConnsPerHost < 1 || o.MaxMessagesPerConn < 1:
		return errors.New("mta: connections per host and messages per connection must be 1 or more")
	case slices.ContainsFunc(o.MXGuard.Allow, func(p netip.Prefix) bool { return !p.IsValid() }):
		return errors.New("mta: the MX guard allows an invalid address range")
	case o.Logger == nil:
		return errors.New("mta: a logger is needed (slog.DiscardHandler for none)")
	}
	return nil
}

// Deliverer hands messages to the next hop over SMTP. It keeps connections
// open between messages (per host, source address and EHLO name) and caps
// how many it holds to each host. Safe for concurrent use; Close ends it.
type Deliverer struct {
	opts Options

	mu      sync.Mutex
	pools   map[string]*hostPool
	sweepAt int // pool count at which unused pools are dropped
	closed  bool
}

// NewDeliverer checks opts and returns a Deliverer that uses them.
func NewDeliverer(opts Options) (*Deliverer, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	return &Deliverer{opts: opts}, nil
}

// Options are the options the Deliverer was made with.
func (d *Deliverer) Options() Options { return d.opts }

// Relay is a smarthost that takes all outgoing mail (--relay).
type Relay struct {
	Addr string // host:port
	// Username and Password authenticate with AUTH PLAIN when Username
	// is set. AUTH is only sent over TLS unless AllowInsecureAuth.
	Username, Password string
	// TLSConfig verifies the relay's certificate (RootCAs for a private
	// CA); nil means the system roots. ServerName defaults to Addr's host.
	TLSConfig *tls.Config
	// ImplicitTLS speaks TLS from the first byte (port 465, RFC 8314)
	// instead of STARTTLS.
	ImplicitTLS bool
	// RequireTLS refuses to send when the relay offers no STARTTLS.
	// STARTTLS is used whenever it is offered, and a relay's certificate
	// is always verified, whatever this says.
	RequireTLS bool
	// AllowInsecureAuth permits AUTH without TLS: for tests only.
	AllowInsecureAuth bool
}

// Envelope is one message for recipients of one domain.
type Envelope struct {
	From string   // reverse-path for MAIL FROM ("" is the null sender)
	To   []string // recipients; grouped per domain, one transaction each
	// Data is the message as it must arrive, with CRLF line endings.
	// Dot-stuffing is done on the wire.
	Data     []byte
	SourceIP net.IP // local address to connect from; nil lets the system choose
	HELO     string // EHLO name, the source address's host name; Options.HELO when empty
	// RequireTLS sends the message only over verified TLS to servers that
	// offer REQUIRETLS, with the REQUIRETLS MAIL parameter (RFC 8689).
	RequireTLS bool
	// UTF8 says the message itself needs SMTPUTF8 (RFC 6531): its header
	// holds UTF-8 (RFC 6532). A next hop without SMTPUTF8 bounces it
	// with 5.6.7, as it does a non-ASCII address.
	UTF8 bool
	// SevenBit, when set, says Data's body is 8-bit: a next hop without
	// 8BITMIME (RFC 6152 §3) gets what SevenBit returns instead, the
	// message converted to 7-bit and signed again. A failure bounces the
	// recipients with 5.6.3.
	SevenBit func() ([]byte, error)
}

// Status is the outcome of a delivery attempt for one recipient.
type Status string

// Statuses.
const (
	StatusDelivered Status = "delivered" // the next hop accepted responsibility
	StatusTemporary Status = "temporary" // try again later
	StatusPermanent Status = "permanent" // bounce now
)

// RecipientResult is the outcome for one recipient.
type RecipientResult struct {
	Recipient string
	Status    Status
	Code      int    // the server's reply code; 0 when no server answered
	Enhanced  string // RFC 3463 code: the server's, or Mailbolt's for a local failure
	Text      string // the server's text or a description of the local failure
	Host      string // the host that answered, or the last one tried
	TLS       bool   // the transaction ran over TLS
	// TLSVersion names the TLS version of the session ("TLS 1.3"); empty
	// without TLS.
	TLSVersion string
	// TLSVerified says the certificate was verified (for the MX name
	// against the roots, or by DANE); TLSPolicy is the policy the session
	// ran under: PolicyNone, PolicyMTASTS or PolicyDANE ("" with a relay).
	TLSVerified bool
	TLSPolicy   string
	// Duration is how long the attempt that gave this result took; the
	// delivery queue sets it around its Sender, for the delivery log.
	Duration time.Duration
	Bounce   Bounce // classification of a failure; zero when delivered
}

// Settings.
func (d *Deliverer) mxPort() int                   { return d.opts.MXPort }
func (d *Deliverer) connectTimeout() time.Duration { return d.opts.ConnectTimeout }
func (d *Deliverer) commandTimeout() time.Duration { return d.opts.CommandTimeout }
func (d *Deliverer) dataTimeout() time.Duration    { return d.opts.DataTimeout }
func (d *Deliverer) idleTimeout() time.Duration    { return d.opts.IdleTimeout }
func (d *Deliverer) maxConns() int                 { return d.opts.MaxConnsPerHost }
func (d *Deliverer) maxMessages() int              { return d.opts.MaxMessagesPerConn }
func (d *Deliverer) logger() *slog.Logger          { return d.opts.Logger }

func (d *Deliverer) helo(env Envelope) string {
	if env.HELO != "" {
		return env.HELO
	}
	return d.opts.HELO
}

// Send delivers env and returns one result per recipient, in the order of
// env.To. Recipients of one domain share one SMTP transaction (with a
// Relay, all recipients do); env.To normally holds one domain.
func (d *Deliverer) Send(ctx context.Context, env Envelope) []RecipientResult {
	results := make([]RecipientResult, len(env.To))
	if badLine(env.From) {
		e := localError(true, "5.1.7", "bad sender address %q", env.From)
		for i, to := range env.To {
			results[i] = e.result(to, false)
		}
		return results
	}
	// Group recipient indexes by destination, keeping first-seen order.
	var order []string
	groups := map[string][]int{}
	for i, to := range env.To {
		at := strings.LastIndexByte(to, '@')
		if at <= 0 || at == len(to)-1 || badLine(to) {
			results[i] = localError(true, "5.1.3", "bad recipient address %q", to).result(to, false)
			continue
		}
		key := strings.ToLower(to[at+1:])
		if d.opts.Relay != nil {
			key = ""
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	for _, key := range order {
		idx := groups[key]
		rcpts := make([]string, len(idx))
		for j, i := range idx {
			rcpts[j] = env.To[i]
		}
		domain := key
		if domain == "" {
			domain = rcpts[0][strings.LastIndexByte(rcpts[0], '@')+1:]
		}
		for j, r := range d.sendDomain(ctx, env, domain, rcpts) {
			results[idx[j]] = r
		}
	}
	return results
}

// badLine reports an address that cannot go on an SMTP command line.
func badLine(addr string) bool { return strings.ContainsAny(addr, "\r\n<>") }

// sendDomain runs one transaction for recipients of one destination,
// trying its hops in order.
func (d *Deliverer) sendDomain(ctx context.Context, env Envelope, domain string, rcpts []string) []RecipientResult {
	fail := func(e *DeliveryError) []RecipientResult {
		out := make([]RecipientResult, len(rcpts))
		for i, r := range rcpts {
			out[i] = e.result(r, false)
		}
		return out
	}
	hops, err := d.Route(ctx, domain)
	if err != nil {
		return fail(replyError("", err))
	}
	helo := d.helo(env)
	sts := d.domainPolicy(ctx, domain)
	var errs []*DeliveryError
	for _, hop := range hops {
		sec, err := d.hopSecurity(ctx, domain, hop, sts, env.RequireTLS)
		if err != nil {
			e := replyError(hop.Host, err)
			d.logger().Debug("hop refused by policy", "domain", domain, "host", hop.Host, "err", e)
			errs = append(errs, e)
			continue
		}
		p := d.pool(hop)
		c, err := d.connect(ctx, p, hop, env.SourceIP, helo, false, sec)
		results, reusable := []RecipientResult(nil), false
		if err == nil {
			if results, reusable = c.transact(ctx, env, rcpts); results == nil {
				// The pooled session had gone away unnoticed: go again on
				// a probed or new one.
				p.discard(c, false)
				if c, err = d.connect(ctx, p, hop, env.SourceIP, helo, true, sec); err == nil {
					results, reusable = c.transact(ctx, env, rcpts)
				}
			}
		}
		if err != nil {
			d.unref(p)
			e := replyError(hop.Host, err)
			if e.Host == "" {
				e.Host = hop.Host
			}
			d.logger().Debug("hop failed", "domain", domain, "host", hop.Host, "err", e)
			errs = append(errs, e)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		for i := range results {
			if results[i].TLS {
				results[i].TLSVersion = c.tlsVersion
				results[i].TLSVerified = c.verified
			}
			if !hop.Relay {
				results[i].TLSPolicy = sec.policy
			}
		}
		p.release(c, reusable)
		d.unref(p)
		return results
	}
	return fail(summarize(errs))
}

// Close closes the idle connections (with QUIT) and stops pooling: a
// connection in use is closed when its transaction ends.
func (d *Deliverer) Close() error {
	d.mu.Lock()
	d.closed = true
	pools := make([]*hostPool, 0, len(d.pools))
	for _, p := range d.pools {
		pools = append(pools, p)
	}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pools {
		for _, c := range p.drain() {
			wg.Go(func() { c.quit() })
		}
	}
	wg.Wait()
	return nil
}

// pool returns the connection pool of one destination host, to be given
// back with unref. Pools without connections or users are dropped now and
// then, so that the map does not grow with every domain ever mailed.
func (d *Deliverer) pool(hop Hop) *hostPool {
	key := strings.ToLower(hop.Addr())
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pools == nil {
		d.pools = map[string]*hostPool{}
	}
	p := d.pools[key]
	if p == nil {
		if len(d.pools) >= d.sweepAt {
			for k, old := range d.pools {
				if old.unused() {
					delete(d.pools, k)
				}
			}
			d.sweepAt = max(64, 2*len(d.pools))
		}
		p = newHostPool(d, key)
		p.closed = d.closed
		d.pools[key] = p
	}
	p.refs++
	return p
}

func (d *Deliverer) unref(p *hostPool) {
	d.mu.Lock()
	p.refs--
	d.mu.Unlock()
}
