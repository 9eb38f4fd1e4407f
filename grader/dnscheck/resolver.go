package dnscheck

import (
	"context"
	"errors"
	"net"

	"mailbolt/grader/spf"
	"mailbolt/mta/dns"
)

// Resolver is the DNS access the checks need: what SPF evaluation needs
// (spf.Resolver, which covers DMARC discovery's TXT lookups too), plus
// LookupIPAddr for the MX hosts' and forward-confirmed PTR names'
// addresses.
//
// Each lookup has three outcomes, which the checks keep apart:
//
//   - records: a nil error;
//   - nothing there: an error for which errors.Is(err, dns.ErrNotFound)
//     holds, NXDOMAIN and NODATA alike (judged: the rule usually scores 0);
//   - failure to learn either (timeout, SERVFAIL, REFUSED, network): any
//     other error (not judged: the rule is left out and a warning says so).
//
// Names are passed without the final dot. *dns.Resolver (mta/dns)
// implements it.
type Resolver interface {
	spf.Resolver
	// LookupIPAddr returns the A and AAAA addresses of name.
	LookupIPAddr(ctx context.Context, name string) ([]net.IPAddr, error)
}

var _ Resolver = (*dns.Resolver)(nil)

// notFound reports whether err is the zone's "nothing here".
func notFound(err error) bool { return errors.Is(err, dns.ErrNotFound) }
