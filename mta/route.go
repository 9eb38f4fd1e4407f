package mta

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"mailbolt/mta/dns"
)

// MXResolver is the DNS a Deliverer routes with; *dns.Resolver is one.
type MXResolver interface {
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupIPAddr(ctx context.Context, name string) ([]net.IPAddr, error)
}

// Hop is one server that mail for a domain can be handed to.
type Hop struct {
	Host     string // MX host name, the domain itself (implicit MX), an address literal's IP, or the relay's host
	Port     int
	Implicit bool // the domain has no MX and is its own mail host (RFC 5321 §5.1)
	Relay    bool
	// Secure says the MX answer that named the host, or for an implicit
	// MX host the answer that there is no MX, was DNSSEC-validated (with
	// Options.DANE only): its TLSA records may then apply.
	Secure bool
}

// Addr is host:port.
func (h Hop) Addr() string { return net.JoinHostPort(h.Host, strconv.Itoa(h.Port)) }

// Route returns the servers to try for mail to domain, in order. With a
// Relay it is the relay alone. Otherwise the domain's MX hosts by
// preference, hosts of equal preference shuffled to spread the load
// (RFC 5321 §5.1); with no MX (NXDOMAIN or no MX record) the domain itself.
//
// A failure is a *DeliveryError: a null MX (a single MX "." — RFC 7505) is
// permanent 5.1.10, a DNS failure temporary 4.4.3.
func (d *Deliverer) Route(ctx context.Context, domain string) ([]Hop, error) {
	if d.opts.Relay != nil {
		host, port, err := splitHostPort(d.opts.Relay.Addr)
		if err != nil {
			return nil, localError(false, "4.3.5", "relay address %q: %v", d.opts.Relay.Addr, err)
		}
		return []Hop{{Host: host, Port: port, Relay: true}}, nil
	}
	name, err := normalizeDomain(domain)
	if err != nil {
		return nil, localError(true, "5.1.2", "bad domain %q: %v", domain, err)
	}
	domain = name
	port := d.mxPort()
	if strings.HasPrefix(domain, "[") {
		ip := addressLiteral(domain)
		if ip == nil {
			return nil, localError(true, "5.1.2", "bad address literal %s", domain)
		}
		return []Hop{{Host: ip.String(), Port: port, Implicit: true}}, nil
	}
	if d.opts.Resolver == nil {
		return nil, localError(false, "4.3.5", "no DNS resolver configured")
	}
	var mxs []*net.MX
	var secure bool
	if d.opts.DANE != nil {
		mxs, secure, err = d.opts.DANE.LookupMXSecure(ctx, domain)
	} else {
		mxs, err = d.opts.Resolver.LookupMX(ctx, domain)
	}
	switch {
	case errors.Is(err, dns.ErrNotFound):
		// No MX: the domain is its own mail host, and with a validated
		// denial its TLSA records may apply (RFC 7672 §2.2.1).
		return []Hop{{Host: domain, Port: port, Implicit: true, Secure: secure}}, nil
	case err != nil:
		return nil, localError(false, "4.4.3", "MX lookup for %s failed: %v", domain, err)
	}
	if len(mxs) == 1 && mxs[0].Host == "." {
		return nil, localError(true, "5.1.10", "%s has a null MX (RFC 7505): it accepts no mail", domain)
	}
	var hops []Hop
	seen := map[string]bool{}
	for i := 0; i < len(mxs); {
		// One run of equal preference, shuffled.
		j := i
		for j < len(mxs) && mxs[j].Pref == mxs[i].Pref {
			j++
		}
		run := mxs[i:j]
		rand.Shuffle(len(run), func(a, b int) { run[a], run[b] = run[b], run[a] })
		for _, mx := range run {
			host := strings.ToLower(strings.TrimSuffix(mx.Host, "."))
			// A "." among other MX records is not a null MX (RFC 7505
			// §3): it is skipped like any host that cannot be used.
			if host == "" || seen[host] {
				continue
			}
			seen[host] = true
			hops = append(hops, Hop{Host: host, Port: port, Secure: secure})
		}
		i = j
	}
	if len(hops) == 0 {
		return nil, localError(true, "5.4.4", "%s has no usable MX host", domain)
	}
	return hops, nil
}

// hopAddrs resolves a hop to the addresses to connect to, keeping those of
// the source address's family.
func (d *Deliverer) hopAddrs(ctx context.Context, hop Hop, src net.IP) ([]net.IP, error) {
	var ips []net.IP
	if ip := net.ParseIP(hop.Host); ip != nil {
		ips = []net.IP{ip}
	} else {
		if d.opts.Resolver == nil {
			return nil, localError(false, "4.3.5", "no DNS resolver configured")
		}
		addrs, err := d.opts.Resolver.LookupIPAddr(ctx, hop.Host)
		switch {
		case errors.Is(err, dns.ErrNotFound) && hop.Implicit:
			return nil, localError(true, "5.1.2", "%s has no MX and no address records", hop.Host)
		case errors.Is(err, dns.ErrNotFound) && !hop.Relay:
			return nil, localError(true, "5.4.4", "MX host %s has no address records", hop.Host)
		case err != nil:
			return nil, localError(false, "4.4.3", "address lookup for %s failed: %v", hop.Host, err)
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	if !hop.Relay {
		var err error
		if ips, err = d.guard(hop, ips); err != nil {
			return nil, err
		}
	}
	if src == nil {
		return ips, nil
	}
	wantV4 := src.To4() != nil
	var out []net.IP
	for _, ip := range ips {
		if (ip.To4() != nil) == wantV4 {
			out = append(out, ip)
		}
	}
	if len(out) == 0 {
		return nil, localError(false, "4.4.4", "%s has no address of the family of source address %s", hop.Host, src)
	}
	return out, nil
}

// guard drops the addresses of an MX hop that MXGuard refuses. None left
// is permanent (5.1.2: the destination system cannot take mail from us),
// naming the first refused address, so the bounce says why.
func (d *Deliverer) guard(hop Hop, ips []net.IP) ([]net.IP, error) {
	var out []net.IP
	var refused error
	for _, ip := range ips {
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		if err := d.opts.MXGuard.Check(addr); err != nil {
			if refused == nil {
				refused = err
			}
			d.logger().Debug("MX address refused", "host", hop.Host, "addr", ip, "err", err)
			continue
		}
		out = append(out, ip)
	}
	if len(out) == 0 && refused != nil {
		return nil, localError(true, "5.1.2", "mail host %s is refused: %v; mail is not sent to loopback, private or other special addresses", hop.Host, refused)
	}
	return out, nil
}

// normalizeDomain lower-cases a domain, drops a final dot and turns an
// internationalised name into its A-label form for DNS.
func normalizeDomain(domain string) (string, error) {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	if domain == "" {
		return "", errors.New("empty domain")
	}
	if strings.HasPrefix(domain, "[") {
		return domain, nil
	}
	return idna.Lookup.ToASCII(domain)
}

// addressLiteral parses a domain written as an address literal,
// "[192.0.2.1]" or "[IPv6:2001:db8::1]" (RFC 5321 §4.1.3).
func addressLiteral(domain string) net.IP {
	if !strings.HasPrefix(domain, "[") || !strings.HasSuffix(domain, "]") {
		return nil
	}
	s := domain[1 : len(domain)-1]
	if v6, ok := strings.CutPrefix(strings.ToLower(s), "ipv6:"); ok {
		return net.ParseIP(v6)
	}
	if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
		return ip
	}
	return nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, errors.New("bad port")
	}
	return host, port, nil
}
