// Package netguard holds the one table of address ranges that Mailbolt
// does not connect to on someone else's word: a webhook URL a tenant gives,
// an MX host a recipient's domain publishes. Those ranges are the server's
// own network and its neighbours (loopback, private, link-local, CGNAT),
// addresses that mean "nowhere" or "everyone" (unspecified, multicast,
// broadcast, reserved) and IPv6 forms that carry an IPv4 address inside
// (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo), so that no spelling
// of a refused IPv4 address gets through. Both the webhook guard (hooks)
// and the SMTP client (mta) apply this table through a Policy.
package netguard

import (
	"fmt"
	"net/netip"
)

// Range is a refused address range and what it is.
type Range struct {
	Prefix netip.Prefix
	Name   string
}

// ranges is the table (IANA's IPv4 and IPv6 special-purpose registries,
// RFC 6890, less the ranges that are ordinary public unicast).
var ranges = func() []Range {
	var out []Range
	for _, r := range []struct{ prefix, name string }{
		{"0.0.0.0/8", "this network (unspecified)"},       // RFC 791, RFC 1122 §3.2.1.3
		{"10.0.0.0/8", "private"},                         // RFC 1918
		{"100.64.0.0/10", "shared address space (CGNAT)"}, // RFC 6598
		{"127.0.0.0/8", "loopback"},                       // RFC 1122
		{"169.254.0.0/16", "link-local"},                  // RFC 3927 (cloud metadata lives here)
		{"172.16.0.0/12", "private"},                      // RFC 1918
		{"192.0.0.0/24", "IETF protocol assignments"},     // RFC 6890
		{"192.0.2.0/24", "documentation"},                 // RFC 5737
		{"192.88.99.0/24", "6to4 relay anycast"},          // RFC 7526
		{"192.168.0.0/16", "private"},                     // RFC 1918
		{"198.18.0.0/15", "benchmarking"},                 // RFC 2544
		{"198.51.100.0/24", "documentation"},              // RFC 5737
		{"203.0.113.0/24", "documentation"},               // RFC 5737
		{"224.0.0.0/4", "multicast"},                      // RFC 5771
		{"240.0.0.0/4", "reserved (and broadcast)"},       // RFC 1112, RFC 919
		{"::/128", "unspecified"},                         // RFC 4291
		{"::1/128", "loopback"},                           // RFC 4291
		{"::/96", "IPv4-compatible (deprecated)"},         // RFC 4291 §2.5.5.1
		{"::ffff:0:0:0/96", "IPv4-translated"},            // RFC 2765
		{"64:ff9b::/96", "NAT64"},                         // RFC 6052
		{"64:ff9b:1::/48", "NAT64 (local use)"},           // RFC 8215
		{"100::/64", "discard-only"},                      // RFC 6666
		{"2001::/32", "Teredo"},                           // RFC 4380
		{"2001:db8::/32", "documentation"},                // RFC 3849
		{"fc00::/7", "unique local (private)"},            // RFC 4193
		{"fe80::/10", "link-local"},                       // RFC 4291
		{"fec0::/10", "site-local (deprecated)"},          // RFC 3879
		{"ff00::/8", "multicast"},                         // RFC 4291
	} {
		out = append(out, Range{netip.MustParsePrefix(r.prefix), r.name})
	}
	return out
}()

// sixToFour is 6to4 (RFC 3056): its addresses carry an IPv4 address in
// bits 16–47, and are refused when that address is.
var sixToFour = netip.MustParsePrefix("2002::/16")

// Special reports the refused range that ip is in. An IPv4-mapped IPv6
// address (::ffff:a.b.c.d) is judged as the IPv4 address it maps, and a
// 6to4 address as the IPv4 address it embeds.
func Special(ip netip.Addr) (Range, bool) {
	ip = ip.Unmap().WithZone("")
	for _, r := range ranges {
		if r.Prefix.Contains(ip) {
			return r, true
		}
	}
	if sixToFour.Contains(ip) {
		b := ip.As16()
		if r, ok := Special(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); ok {
			return Range{sixToFour, "6to4 of " + r.Name}, true
		}
	}
	return Range{}, false
}

// Policy decides which addresses may be connected to. The zero Policy
// allows public addresses only.
type Policy struct {
	// AllowPrivate lifts the restriction (serve --dev, for local testing).
	AllowPrivate bool
	// Allow lists ranges that may be reached even though special
	// (--webhook-allow-cidrs, --mx-allow-cidrs). An IPv4 range also
	// covers the IPv4-mapped forms of its addresses.
	Allow []netip.Prefix
}

// RefusedError is an address that a Policy refuses.
type RefusedError struct {
	Addr  netip.Addr
	Range Range
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is in %s (%s)", e.Addr, e.Range.Prefix, e.Range.Name)
}

// Check returns a *RefusedError when ip may not be connected to.
func (p Policy) Check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, a := range p.Allow {
		if a.Contains(ip) || (ip.Is4() && a.Contains(netip.AddrFrom16(ip.As16()))) {
			return nil
		}
	}
	if p.AllowPrivate {
		return nil
	}
	if r, ok := Special(ip); ok {
		return &RefusedError{Addr: ip, Range: r}
	}
	return nil
}
