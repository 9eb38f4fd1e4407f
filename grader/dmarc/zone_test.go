package dmarc

import (
	"context"
	"errors"
	"net"
	"strings"

	"mailbolt/mta/dns"
)

// zone is an in-memory Resolver: TXT records by name, names whose lookups
// fail, and (through hosts) an AddressResolver.
type zone struct {
	txt     map[string][]string
	fail    map[string]bool // any lookup of the name fails (SERVFAIL)
	queries []string
}

func (z *zone) LookupTXT(ctx context.Context, name string) ([]string, error) {
	name = strings.ToLower(name)
	z.queries = append(z.queries, name)
	if z.fail[name] {
		return nil, &dns.TempError{Name: name, Err: errors.New("server answered SERVFAIL")}
	}
	if txts, ok := z.txt[name]; ok {
		return txts, nil
	}
	return nil, dns.ErrNotFound
}

// hostZone adds A lookups: a name exists when it is in hosts; AAAA and MX
// are always empty (NODATA).
type hostZone struct {
	*zone
	hosts map[string]bool
}

func (z hostZone) LookupA(ctx context.Context, name string) ([]net.IP, error) {
	if z.fail[name] {
		return nil, &dns.TempError{Name: name, Err: errors.New("server answered SERVFAIL")}
	}
	if z.hosts[name] {
		return []net.IP{net.IPv4(192, 0, 2, 1)}, nil
	}
	return nil, dns.ErrNotFound
}

func (z hostZone) LookupAAAA(ctx context.Context, name string) ([]net.IP, error) {
	return nil, dns.ErrNotFound
}

func (z hostZone) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	return nil, nil
}
