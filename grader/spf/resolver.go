package spf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"mailbolt/mta/dns"
)

// Resolver is the DNS access check_host() needs (RFC 7208 §4.4, §5).
//
// Each lookup has three outcomes, which SPF must never confuse:
//
//   - records: a nil error and at least one record;
//   - nothing there: an error for which errors.Is(err, dns.ErrNotFound)
//     holds (or a *net.DNSError with IsNotFound), whether the server said
//     NXDOMAIN (RCODE 3) or NOERROR with no answer (NODATA). RFC 7208
//     gives both the same meaning everywhere: a
//     mechanism does not match and, when the query was its own, one "void
//     lookup" is spent (§4.6.4); a domain without a record yields None
//     (§4.3, §4.5). An empty answer with a nil error counts as nothing
//     there too;
//   - failure to learn either (timeout, SERVFAIL, REFUSED, network): any
//     other error, which makes the result TempError (§4.4, §5).
//
// Names are passed without the final dot. *dns.Resolver implements it.
type Resolver interface {
	// LookupTXT returns each TXT record with its strings joined (§3.3),
	// as raw bytes (not in zone-file presentation format).
	LookupTXT(ctx context.Context, name string) ([]string, error)
	// LookupA returns the IPv4 addresses at name.
	LookupA(ctx context.Context, name string) ([]net.IP, error)
	// LookupAAAA returns the IPv6 addresses at name.
	LookupAAAA(ctx context.Context, name string) ([]net.IP, error)
	// LookupMX returns the exchanges; a null MX has Host "." (RFC 7505).
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	// LookupPTR returns the names in the reverse zone for ip.
	LookupPTR(ctx context.Context, ip net.IP) ([]string, error)
}

var _ Resolver = (*dns.Resolver)(nil)

// errVoid is the internal form of "nothing there".
var errVoid = errors.New("spf: no such record")

// classify maps a Resolver error to nil, errVoid or an ErrDNS error.
func classify(name string, n int, err error) error {
	var dnsErr *net.DNSError
	switch {
	case err == nil && n > 0:
		return nil
	case err == nil, errors.Is(err, dns.ErrNotFound),
		errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return errVoid
	}
	return fmt.Errorf("%w: %s: %w", ErrDNS, name, err)
}

// validName reports whether name can be put in a query: at most 253
// characters, labels of 1 to 63. A target name that fails this is treated
// as one that does not exist (§4.3 by analogy; test suite 4.8/5).
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
	}
	return true
}

// validDomain checks the <domain> given to check_host() (§4.3): a name
// that can be queried, with two labels or more, and not a domain literal
// such as "[192.0.2.1]".
func validDomain(d string) bool {
	if !validName(d) || !strings.Contains(d, ".") || d[0] == '[' {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] <= ' ' || d[i] >= 0x7f {
			return false
		}
	}
	return true
}

func (e *evaluator) lookupTXT(ctx context.Context, name string) ([]string, error) {
	if !validName(name) {
		return nil, errVoid
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDNS, name, err)
	}
	txts, err := e.r.LookupTXT(ctx, name)
	return txts, classify(name, len(txts), err)
}

// lookupIPs asks for A records, or AAAA when v6, and returns the addresses
// of that family.
func (e *evaluator) lookupIPs(ctx context.Context, name string, v6 bool) ([]netip.Addr, error) {
	name = strings.TrimSuffix(name, ".")
	if !validName(name) {
		return nil, errVoid
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDNS, name, err)
	}
	var ips []net.IP
	var err error
	if v6 {
		ips, err = e.r.LookupAAAA(ctx, name)
	} else {
		ips, err = e.r.LookupA(ctx, name)
	}
	if err := classify(name, len(ips), err); err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(ips))
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip)
		if !v6 {
			a = a.Unmap()
		}
		if ok && a.Is6() == v6 {
			out = append(out, a)
		}
	}
	return out, nil
}

// lookupMX returns the exchange host names at name.
func (e *evaluator) lookupMX(ctx context.Context, name string) ([]string, error) {
	if !validName(name) {
		return nil, errVoid
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDNS, name, err)
	}
	mxs, err := e.r.LookupMX(ctx, name)
	if err := classify(name, len(mxs), err); err != nil {
		return nil, err
	}
	hosts := make([]string, 0, len(mxs))
	for _, mx := range mxs {
		hosts = append(hosts, mx.Host)
	}
	return hosts, nil
}

// lookupPTR returns the reverse names of the client address.
func (e *evaluator) lookupPTR(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: PTR: %w", ErrDNS, err)
	}
	names, err := e.r.LookupPTR(ctx, net.IP(e.ip.AsSlice()))
	return names, classify(e.ip.String(), len(names), err)
}
