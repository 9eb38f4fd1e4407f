package spf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// String writes the mechanism back in record syntax.
func (m Mechanism) String() string {
	var b strings.Builder
	if m.Qualifier != QualifierPass {
		b.WriteByte(byte(m.Qualifier))
	}
	b.WriteString(string(m.Kind))
	switch m.Kind {
	case KindIP4, KindIP6:
		b.WriteString(":" + m.Net.String())
	default:
		if m.Domain != "" {
			b.WriteString(":" + m.Domain)
		}
	}
	if m.Kind == KindA || m.Kind == KindMX {
		if m.CIDR4 != 32 {
			b.WriteString("/" + strconv.Itoa(m.CIDR4))
		}
		if m.CIDR6 != 128 {
			b.WriteString("//" + strconv.Itoa(m.CIDR6))
		}
	}
	return b.String()
}

// match evaluates one mechanism against the client address (§5).
func (e *evaluator) match(ctx context.Context, m *Mechanism, domain string) (bool, error) {
	switch m.Kind {
	case KindAll: // §5.1
		return true, nil
	case KindIP4, KindIP6: // §5.6: each matches only its own family.
		return m.Net.Contains(e.ip), nil
	}
	// include, a, mx, ptr and exists query the DNS (§4.6.4).
	if err := e.countLookup(); err != nil {
		return false, err
	}
	target := domain
	if m.spec != nil {
		target = e.targetName(ctx, m.spec, domain)
	}
	switch m.Kind {
	case KindInclude:
		return e.include(ctx, target)
	case KindA:
		return e.matchA(ctx, target, m)
	case KindMX:
		return e.matchMX(ctx, target, m)
	case KindPTR:
		return e.matchPTR(ctx, target)
	case KindExists:
		return e.exists(ctx, target)
	}
	return false, fmt.Errorf("%w: unknown mechanism %q", ErrSyntax, m.Kind)
}

// voidOr turns errVoid into "no match" after spending a void lookup, and
// passes any other error on.
func (e *evaluator) voidOr(err error) (bool, error) {
	if errors.Is(err, errVoid) {
		return false, e.countVoid()
	}
	return false, err
}

// include evaluates the target's record (§5.2): its pass is a match, its
// fail, softfail and neutral are not, and its errors — None included —
// are errors here.
func (e *evaluator) include(ctx context.Context, target string) (bool, error) {
	res, _, err := e.checkHost(ctx, target, false)
	switch res {
	case Pass:
		return true, nil
	case Fail, SoftFail, Neutral:
		return false, nil
	case None:
		return false, fmt.Errorf("%s: %w", target, ErrNoRecord)
	}
	return false, err
}

// prefixLen is the a or mx prefix length for the client's family.
func (e *evaluator) prefixLen(m *Mechanism) int {
	if e.ip.Is6() {
		return m.CIDR6
	}
	return m.CIDR4
}

// inNetworks reports whether ip lies within bits of any of addrs.
func (e *evaluator) inNetworks(addrs []netip.Addr, bits int) bool {
	for _, a := range addrs {
		if p, err := a.Prefix(bits); err == nil && p.Contains(e.ip) {
			return true
		}
	}
	return false
}

// matchA: A records for an IPv4 client, AAAA for IPv6 (§5.3).
func (e *evaluator) matchA(ctx context.Context, target string, m *Mechanism) (bool, error) {
	addrs, err := e.lookupIPs(ctx, target, e.ip.Is6())
	if err != nil {
		return e.voidOr(err)
	}
	return e.inNetworks(addrs, e.prefixLen(m)), nil
}

// matchMX: the addresses of each exchange (§5.4). An exchange without
// addresses is skipped; an MX set of more than 10 is PermError (§4.6.4).
// RFC 7208 §5.4 forbids falling back to the target's own A records.
func (e *evaluator) matchMX(ctx context.Context, target string, m *Mechanism) (bool, error) {
	hosts, err := e.lookupMX(ctx, target)
	if err != nil {
		return e.voidOr(err)
	}
	if len(hosts) > mxLimit {
		return false, fmt.Errorf("%s has %d: %w", target, len(hosts), ErrTooManyMX)
	}
	for _, h := range hosts {
		if h == "." || h == "" { // null MX (RFC 7505): no host
			continue
		}
		addrs, err := e.lookupIPs(ctx, h, e.ip.Is6())
		if errors.Is(err, errVoid) {
			continue
		}
		if err != nil {
			return false, err
		}
		if e.inNetworks(addrs, e.prefixLen(m)) {
			return true, nil
		}
	}
	return false, nil
}

// exists matches when the target has any A record, whatever the client's
// family (§5.7).
func (e *evaluator) exists(ctx context.Context, target string) (bool, error) {
	if _, err := e.lookupIPs(ctx, target, false); err != nil {
		return e.voidOr(err)
	}
	return true, nil
}

// matchPTR: a validated reverse name of ip that is target or below it
// (§5.5). Any DNS error on the PTR query is "no match"; a name whose
// forward lookup fails is skipped; only the first 10 names count (§4.6.4).
func (e *evaluator) matchPTR(ctx context.Context, target string) (bool, error) {
	names, err := e.lookupPTR(ctx)
	if errors.Is(err, errVoid) {
		return e.voidOr(err)
	}
	if err != nil {
		return false, nil
	}
	if len(names) > ptrLimit {
		names = names[:ptrLimit]
	}
	for _, n := range names {
		// Checking the suffix first saves forward lookups that could not
		// lead to a match anyway.
		if inDomain(n, target) && e.validates(ctx, n) {
			return true, nil
		}
	}
	return false, nil
}

// validates reports whether name resolves back to ip (§5.5). Errors mean
// "no".
func (e *evaluator) validates(ctx context.Context, name string) bool {
	addrs, err := e.lookupIPs(ctx, name, e.ip.Is6())
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if a == e.ip {
			return true
		}
	}
	return false
}

// inDomain reports whether name is domain or a name below it, ignoring case
// and final dots.
func inDomain(name, domain string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	return name == domain || strings.HasSuffix(name, "."+domain)
}
