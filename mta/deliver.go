package mta

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Delivery rules, in the order they apply (docs/bounces.md shows how the
// outcomes are classified):
//
//   - Route: a Relay takes everything; otherwise the recipient domain's MX
//     hosts by preference, the domain itself when it has no MX, nothing at
//     all for a null MX (permanent, hard 5.1.10).
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
//   - TLS: STARTTLS whenever an MX offers it, without verifying the
//     certificate (opportunistic, RFC 7435); if the handshake fails the
//     same address is tried again in cleartext. A relay's certificate is
//     always verified, and a failure there is never downgraded.

// Deliverer hands messages to the next hop over SMTP. It keeps connections
// open between messages (per host, source address and EHLO name) and caps
// how many it holds to each host. Its fields are read at first use and must
// not change afterwards. Safe for concurrent use; Close ends it.
type Deliverer struct {
	// Resolver looks MX hosts and their addresses up (the --dns-server).
	Resolver MXResolver
	// Relay, when set, takes all mail instead of the recipients' MX hosts.
	Relay *Relay
	// MXPort is the port of MX hosts; 25 when zero (--mx-port).
	MXPort int
	// HELO is the EHLO name for envelopes that bring none; the machine's
	// host name when empty.
	HELO string

	// ConnectTimeout bounds a TCP connect and a TLS handshake; 30 s.
	ConnectTimeout time.Duration
	// CommandTimeout bounds the wait for each reply, the greeting
	// included; 5 min (RFC 5321 §4.5.3.2).
	CommandTimeout time.Duration
	// DataTimeout bounds sending the message and the wait for the reply
	// to the final dot; 10 min.
	DataTimeout time.Duration
	// IdleTimeout is how long an unused connection is kept; 30 s.
	IdleTimeout time.Duration
	// MaxConnsPerHost caps the connections open to one host (MX host or
	// relay), busy and idle together; 10.
	MaxConnsPerHost int
	// MaxMessagesPerConn closes a connection after that many
	// transactions, as receivers expect; 100.
	MaxMessagesPerConn int

	// Logger gets connection-level events at debug level; none when nil.
	Logger *slog.Logger

	mu      sync.Mutex
	pools   map[string]*hostPool
	sweepAt int // pool count at which unused pools are dropped
	closed  bool
}

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
	HELO     string // EHLO name, the source address's host name; Deliverer.HELO when empty
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
	Bounce    Bounce // classification of a failure; zero when delivered
}

// Settings with their defaults.
func (d *Deliverer) mxPort() int                   { return or(d.MXPort, 25) }
func (d *Deliverer) connectTimeout() time.Duration { return or(d.ConnectTimeout, 30*time.Second) }
func (d *Deliverer) commandTimeout() time.Duration { return or(d.CommandTimeout, 5*time.Minute) }
func (d *Deliverer) dataTimeout() time.Duration    { return or(d.DataTimeout, 10*time.Minute) }
func (d *Deliverer) idleTimeout() time.Duration    { return or(d.IdleTimeout, 30*time.Second) }
func (d *Deliverer) maxConns() int                 { return or(d.MaxConnsPerHost, 10) }
func (d *Deliverer) maxMessages() int              { return or(d.MaxMessagesPerConn, 100) }

func or[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (d *Deliverer) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

func (d *Deliverer) helo(env Envelope) string {
	switch {
	case env.HELO != "":
		return env.HELO
	case d.HELO != "":
		return d.HELO
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
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
		if d.Relay != nil {
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
	var errs []*DeliveryError
	for _, hop := range hops {
		p := d.pool(hop)
		c, err := d.connect(ctx, p, hop, env.SourceIP, helo, false)
		results, reusable := []RecipientResult(nil), false
		if err == nil {
			if results, reusable = c.transact(ctx, env, rcpts); results == nil {
				// The pooled session had gone away unnoticed: go again on
				// a probed or new one.
				p.discard(c, false)
				if c, err = d.connect(ctx, p, hop, env.SourceIP, helo, true); err == nil {
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
