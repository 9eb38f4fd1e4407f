package dmarc

import (
	"context"
	"errors"
	"fmt"
	"net"

	"mailbolt/mta/dns"
)

// Resolver is the DNS access policy discovery needs (§6.6.3).
//
// A lookup has three outcomes, which DMARC must never confuse:
//
//   - records: a nil error (an empty answer counts as nothing there);
//   - nothing there: an error for which errors.Is(err, dns.ErrNotFound)
//     holds (or a *net.DNSError with IsNotFound), NXDOMAIN and NODATA
//     alike;
//   - failure to learn either (timeout, SERVFAIL, REFUSED, network): any
//     other error, which makes the result TempError.
//
// Names are passed without the final dot. *dns.Resolver implements it.
type Resolver interface {
	// LookupTXT returns each TXT record with its strings joined (RFC 7489
	// §6.1 points at RFC 7208 §3.3 for split records).
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// AddressResolver is what the np tag needs to tell whether a domain exists
// (RFC 9091 §2.1: no A, AAAA or MX record). When the Resolver given to
// Evaluate also implements it, np is honoured; otherwise sp stands in.
// *dns.Resolver implements it.
type AddressResolver interface {
	LookupA(ctx context.Context, name string) ([]net.IP, error)
	LookupAAAA(ctx context.Context, name string) ([]net.IP, error)
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
}

var (
	_ Resolver        = (*dns.Resolver)(nil)
	_ AddressResolver = (*dns.Resolver)(nil)
)

// Discovery errors. Lookup's error wraps one of them, or ErrInvalidRecord
// or ErrInvalidDomain.
var (
	// ErrNoRecord: no DMARC record at the From domain nor at its
	// organizational domain (§6.6.3 step 5).
	ErrNoRecord = errors.New("dmarc: no DMARC record")
	// ErrMultipleRecords: more than one DMARC record at one name; DMARC is
	// then not applied (§6.6.3 step 5).
	ErrMultipleRecords = errors.New("dmarc: more than one DMARC record")
	// ErrDNS: a lookup failed without an answer (TempError). It also wraps
	// the Resolver's own error.
	ErrDNS = errors.New("dmarc: DNS lookup failed")
)

// Lookup runs policy discovery (§6.6.3) for an RFC5322.From domain: the
// record at _dmarc.<domain>, or, when that name holds no DMARC record, the
// one at _dmarc.<organizational domain>. It returns the parsed record and
// the domain it was found at (in A-labels, lower case), or an error
// wrapping ErrNoRecord, ErrMultipleRecords, ErrInvalidRecord, ErrDNS or
// ErrInvalidDomain. Only "no DMARC record at this name" moves discovery on
// to the organizational domain: a DNS failure, several records or an
// invalid record end it where they are found.
func Lookup(ctx context.Context, r Resolver, domain string) (*Record, string, error) {
	from, err := canonical(domain)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %q", ErrInvalidDomain, domain)
	}
	return discover(ctx, r, from, orgOrSelf(from))
}

// discover is Lookup for canonical names.
func discover(ctx context.Context, r Resolver, from, org string) (*Record, string, error) {
	rec, err := lookupAt(ctx, r, from) // steps 1 and 2
	if !errors.Is(err, ErrNoRecord) || org == from {
		return rec, from, err
	}
	rec, err = lookupAt(ctx, r, org) // steps 3 and 4
	return rec, org, err
}

// lookupAt fetches and parses the DMARC record published for domain.
func lookupAt(ctx context.Context, r Resolver, domain string) (*Record, error) {
	name := "_dmarc." + domain
	if len(name) > 253 {
		// Cannot be asked; no record can be there.
		return nil, fmt.Errorf("%w at %s", ErrNoRecord, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDNS, name, err)
	}
	txts, err := r.LookupTXT(ctx, name)
	if err != nil && !notFound(err) {
		return nil, fmt.Errorf("%w: %s: %w", ErrDNS, name, err)
	}
	var found []string
	for _, txt := range txts {
		// Step 2/4: only records that begin with v=DMARC1 count.
		if _, ok := cutVersion(txt); ok {
			found = append(found, txt)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w at %s", ErrNoRecord, name)
	case 1:
	default:
		return nil, fmt.Errorf("%w at %s: %d", ErrMultipleRecords, name, len(found))
	}
	rec, err := Parse(found[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return rec, nil
}

// notFound reports whether a Resolver error means "nothing there".
func notFound(err error) bool {
	var dnsErr *net.DNSError
	return errors.Is(err, dns.ErrNotFound) || errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

// nonexistent reports whether domain has no A, AAAA and no MX record
// (RFC 9091 §2.1). It needs an AddressResolver; without one, or when any
// lookup fails or finds something, the domain is taken to exist.
func nonexistent(ctx context.Context, r Resolver, domain string) bool {
	ar, ok := r.(AddressResolver)
	if !ok {
		return false
	}
	absent := func(n int, err error) bool { return err == nil && n == 0 || err != nil && notFound(err) }
	ips, err := ar.LookupA(ctx, domain)
	if !absent(len(ips), err) {
		return false
	}
	ips, err = ar.LookupAAAA(ctx, domain)
	if !absent(len(ips), err) {
		return false
	}
	mxs, err := ar.LookupMX(ctx, domain)
	return absent(len(mxs), err)
}
