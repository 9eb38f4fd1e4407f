package dns

import (
	"context"
	"encoding/hex"
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
	mxs, _, err := r.lookupMX(ctx, name, false)
	return mxs, err
}

// LookupMXSecure is LookupMX that also reports whether the answer was
// DNSSEC-validated (the AD bit; see LookupTLSA): DANE applies only to MX
// hosts named by a validated MX answer (RFC 7672 §2.2). With ErrNotFound
// the flag says whether the denial was validated: then the domain itself
// is a secure implicit MX host (§2.2.1).
func (r *Resolver) LookupMXSecure(ctx context.Context, name string) ([]*net.MX, bool, error) {
	return r.lookupMX(ctx, name, true)
}

func (r *Resolver) lookupMX(ctx context.Context, name string, ad bool) ([]*net.MX, bool, error) {
	rrs, secure, err := r.exchangeAD(ctx, name, miekg.TypeMX, ad)
	if err != nil {
		return nil, secure, err // secure with ErrNotFound: a validated denial
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
	return out, secure, nil
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

// TLSA is one TLSA record (RFC 6698 §2): which certificate of the chain it
// names (Usage: 2 DANE-TA, 3 DANE-EE; 0 and 1 are PKIX usages, unused for
// SMTP by RFC 7672 §3.1.3), of what (Selector: 0 the full certificate, 1
// its SubjectPublicKeyInfo) and how (MatchingType: 0 full, 1 SHA-256, 2
// SHA-512).
type TLSA struct {
	Usage, Selector, MatchingType uint8
	Data                          []byte
}

// LookupTLSA returns the TLSA records at name ("_25._tcp.mx.example.com")
// and whether the answer was DNSSEC-validated: the resolver set the AD
// bit, which is trusted only from a resolver on this host (--dnssec).
// Records whose data is not hex are dropped.
func (r *Resolver) LookupTLSA(ctx context.Context, name string) ([]TLSA, bool, error) {
	rrs, secure, err := r.exchangeAD(ctx, name, miekg.TypeTLSA, true)
	if err != nil {
		return nil, false, err
	}
	out := make([]TLSA, 0, len(rrs))
	for _, rr := range rrs {
		t := rr.(*miekg.TLSA)
		data, err := hex.DecodeString(t.Certificate)
		if err != nil {
			continue
		}
		out = append(out, TLSA{Usage: t.Usage, Selector: t.Selector, MatchingType: t.MatchingType, Data: data})
	}
	return out, secure, nil
}
