package spf

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// config holds what the options set.
type config struct {
	receiver  string
	now       func() time.Time
	voidLimit int
	timeout   time.Duration
}

// Option adjusts one evaluation.
type Option func(*config)

// WithReceiver names the host doing the check, the value of the %{r} macro
// in explanations (§7.3); "unknown" when not given.
func WithReceiver(host string) Option { return func(c *config) { c.receiver = host } }

// WithClock sets the clock read by the %{t} macro.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithVoidLimit changes the number of void lookups allowed (§4.6.4: 2 by
// default; "MAY choose to make such a limit configurable"). A negative n
// removes the limit.
func WithVoidLimit(n int) Option { return func(c *config) { c.voidLimit = n } }

// WithTimeout bounds the whole evaluation; past it the result is TempError
// (§4.6.4 asks for at least 20 s, the default). Zero leaves only ctx.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Check runs check_host() (RFC 7208 §4) for the client address ip and the
// identity sender, whose policy is published at domain; helo is the
// HELO/EHLO name, for the %{h} macro. An empty sender stands for
// "postmaster@" + domain, and a sender without a local part gets
// "postmaster" (§4.3).
//
// It returns the result, the explanation of a Fail from the record's exp=
// modifier (empty when there is none), and, for TempError and PermError,
// an error saying why (see the package comment). An ip that is not an IP
// address gives None and an error wrapping ErrInvalidIP.
func Check(ctx context.Context, r Resolver, ip net.IP, domain, sender, helo string, opts ...Option) (Result, string, error) {
	cfg := config{receiver: "unknown", now: time.Now, voidLimit: 2, timeout: 20 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return None, "", fmt.Errorf("%w: %v", ErrInvalidIP, ip)
	}
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	domain = strings.TrimSuffix(domain, ".")
	local, senderDomain := splitSender(sender, domain)
	e := &evaluator{
		r:   r,
		cfg: cfg,
		// §5: "an IPv4-mapped IPv6 address ... MUST still be considered an
		// IPv4 address".
		ip:           addr.Unmap(),
		sender:       local + "@" + senderDomain,
		local:        local,
		senderDomain: senderDomain,
		helo:         helo,
	}
	return e.checkHost(ctx, domain, true)
}

// CheckMailFrom checks the MAIL FROM identity (§2.4): the domain of
// mailFrom, or, for the null reverse-path, "postmaster@" + helo.
func CheckMailFrom(ctx context.Context, r Resolver, ip net.IP, mailFrom, helo string, opts ...Option) (Result, string, error) {
	if mailFrom == "" {
		return CheckHelo(ctx, r, ip, helo, opts...)
	}
	domain := mailFrom
	if at := strings.LastIndexByte(mailFrom, '@'); at >= 0 {
		domain = mailFrom[at+1:]
	}
	return Check(ctx, r, ip, domain, mailFrom, helo, opts...)
}

// CheckHelo checks the HELO identity (§2.3): the policy of the HELO name,
// with "postmaster@" + helo as the sender.
func CheckHelo(ctx context.Context, r Resolver, ip net.IP, helo string, opts ...Option) (Result, string, error) {
	return Check(ctx, r, ip, helo, "postmaster@"+helo, helo, opts...)
}

// splitSender returns the local part and domain of sender (§4.3), with
// "postmaster" for a missing local part and domain for a missing sender
// or domain part.
func splitSender(sender, domain string) (local, senderDomain string) {
	local, senderDomain = "postmaster", domain
	if sender == "" {
		return local, senderDomain
	}
	at := strings.LastIndexByte(sender, '@')
	if at < 0 {
		return local, strings.TrimSuffix(sender, ".")
	}
	if at > 0 {
		local = sender[:at]
	}
	if d := strings.TrimSuffix(sender[at+1:], "."); d != "" {
		senderDomain = d
	}
	return local, senderDomain
}
