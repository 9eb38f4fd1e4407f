package hooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
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
// URL without credentials or fragment, https unless AllowHTTP, a port from
// 1 to 65535, and a host whose addresses (looked up with lookup, when it is
// a name) are allowed. A name that does not resolve yet is accepted: every
// dial is checked again. A host that ends in a number (127.1, 2130706433,
// 0x7f000001, 0177.0.0.1, 8.8.8.8.) is refused whatever the mode: a
// browser or inet_aton reads it as an IPv4 address, while the connections
// would look it up as a name, which no DNS zone has (no top-level domain
// is numeric); either way the URL names an address it can never reach.
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
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %s is not a port: it must be from 1 to 65535", port)
		}
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.CheckAddr(ip)
	}
	// A fully qualified name may end in a dot: localhost. is localhost.
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if endsInNumber(name) {
		reads := ""
		if ip, ok := parseInetAton(name); ok {
			reads = fmt.Sprintf(" (%s)", ip)
		}
		return fmt.Errorf("host %q reads as an IPv4 address%s in a form that webhook connections do not take as one: write the address as four decimal numbers such as 192.0.2.1, or use a host name", host, reads)
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
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

// endsInNumber reports whether host's last label is a number, decimal or
// 0x hex: the WHATWG URL standard then parses the whole host as IPv4, as
// inet_aton does (RFC 3986 §7.4 warns of these forms). A DNS name never
// does: no top-level domain is all digits (RFC 3696 §2).
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// parseInetAton reads host, lower case, as inet_aton does: one to four
// parts, each decimal, octal (a leading 0) or hex (0x), the last filling
// the bytes the others leave (127.1 is 127.0.0.1; 2130706433 is too).
func parseInetAton(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 0xff {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
