package hooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"mailbolt/netguard"
)

// Guard decides which addresses webhook requests may reach. By default only
// public unicast addresses: every range of netguard's table (loopback,
// private, link-local, CGNAT, multicast, unspecified, NAT64, the
// IPv4-mapped forms of refused IPv4 addresses and the other special ranges)
// is refused, so a webhook cannot be aimed at the server's own network.
type Guard struct {
	// AllowPrivate lifts the restriction (serve --dev, for local testing).
	AllowPrivate bool
	// AllowHTTP accepts http:// URLs (serve --dev); otherwise https only.
	AllowHTTP bool
	// Allow lists ranges that are reachable even though special.
	Allow []netip.Prefix
}

// ErrForbiddenAddress is why a dial or URL was refused.
var ErrForbiddenAddress = errors.New("webhook target address is not allowed")

// CheckAddr reports whether ip may be dialled.
func (g Guard) CheckAddr(ip netip.Addr) error {
	if err := (netguard.Policy{AllowPrivate: g.AllowPrivate, Allow: g.Allow}).Check(ip); err != nil {
		return fmt.Errorf("%w: %w", ErrForbiddenAddress, err)
	}
	return nil
}

// Control is a net.Dialer Control function: it checks the address actually
// being dialled, after DNS resolution, so a name that re-resolves to an
// internal address (DNS rebinding) is still refused.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	return g.CheckAddr(ap.Addr())
}

// CheckURL validates a webhook URL when it is created: an absolute http(s)
// URL without credentials or fragment, https unless AllowHTTP, and a host
// whose addresses (looked up with lookup, when it is a name) are allowed. A
// name that does not resolve yet is accepted: every dial is checked again.
func (g Guard) CheckURL(ctx context.Context, raw string, lookup func(context.Context, string) ([]net.IPAddr, error)) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute URL such as https://example.com/hooks")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowHTTP:
	case u.Scheme == "http":
		return errors.New("must use https (plain http is allowed only with serve --dev)")
	default:
		return fmt.Errorf("scheme %q is not http(s)", u.Scheme)
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	if u.Fragment != "" {
		return errors.New("must not have a fragment")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return g.CheckAddr(ip)
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return g.CheckAddr(netip.MustParseAddr("127.0.0.1"))
	}
	if lookup == nil {
		return nil
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			if err := g.CheckAddr(ip); err != nil {
				return err
			}
		}
	}
	return nil
}
