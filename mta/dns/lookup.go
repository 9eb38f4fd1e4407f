package dns

import (
	"context"
	"errors"
	"net"
	"sort"
	"strings"

	miekg "github.com/miekg/dns"
)

// The address, MX and PTR lookups below complete the set that SPF (RFC 7208
// §5) needs next to LookupTXT. They keep the package's three outcomes: an
// answer, ErrNotFound (NXDOMAIN or no record of the type), or a *TempError.

// LookupA returns the IPv4 addresses at name.
func (r *Resolver) LookupA(ctx context.Context, name string) ([]net.IP, error) {
	rrs, err := r.exchange(ctx, name, miekg.TypeA)
	if err != nil {
		return nil, err
	}
	out := make([]net.IP, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, rr.(*miekg.A).A)
	}
	return out, nil
}

// LookupAAAA returns the IPv6 addresses at name.
func (r *Resolver) LookupAAAA(ctx context.Context, name string) ([]net.IP, error) {
	rrs, err := r.exchange(ctx, name, miekg.TypeAAAA)
	if err != nil {
		return nil, err
	}
	out := make([]net.IP, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, rr.(*miekg.AAAA).AAAA)
	}
	return out, nil
}

// LookupMX returns the MX records at name, lowest preference first, with
// host names written without the final dot. A null MX (RFC 7505) comes back
// as a record whose Host is ".".
func (r *Resolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	rrs, err := r.exchange(ctx, name, miekg.TypeMX)
	if err != nil {
		return nil, err
	}
	out := make([]*net.MX, 0, len(rrs))
	for _, rr := range rrs {
		mx := rr.(*miekg.MX)
		host := mx.Mx
		if host != "." {
			host = strings.TrimSuffix(host, ".")
		}
		out = append(out, &net.MX{Host: host, Pref: mx.Preference})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pref < out[j].Pref })
	return out, nil
}

// LookupPTR returns the names the reverse zone gives for ip (in-addr.arpa or
// ip6.arpa), without the final dot. They are claims by whoever runs the
// reverse zone: SPF (RFC 7208 §5.5) confirms each with a forward lookup.
func (r *Resolver) LookupPTR(ctx context.Context, ip net.IP) ([]string, error) {
	arpa, err := miekg.ReverseAddr(ip.String())
	if err != nil {
		return nil, err
	}
	rrs, err := r.exchange(ctx, arpa, miekg.TypePTR)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, strings.TrimSuffix(rr.(*miekg.PTR).Ptr, "."))
	}
	return out, nil
}

// LookupIPAddr returns the A and AAAA addresses of name, as
// net.Resolver.LookupIPAddr does. A name with neither is ErrNotFound.
func (r *Resolver) LookupIPAddr(ctx context.Context, name string) ([]net.IPAddr, error) {
	var out []net.IPAddr
	v4, err4 := r.LookupA(ctx, name)
	v6, err6 := r.LookupAAAA(ctx, name)
	for _, ip := range append(v4, v6...) {
		out = append(out, net.IPAddr{IP: ip})
	}
	if len(out) > 0 {
		return out, nil
	}
	if err4 != nil && !errors.Is(err4, ErrNotFound) {
		return nil, err4
	}
	if err6 != nil && !errors.Is(err6, ErrNotFound) {
		return nil, err6
	}
	return nil, ErrNotFound
}
