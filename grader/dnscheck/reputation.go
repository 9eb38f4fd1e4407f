package dnscheck

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"

	"mailbolt/grader/dmarc"
)

// fcrdns is the outcome of forward-confirming the reverse DNS of an IP.
type fcrdns struct {
	names     []string // PTR names
	confirmed []string // the PTR names whose addresses contain the IP
	err       error    // a failed PTR lookup (not "none")
}

// maxPTRNames bounds the PTR names confirmed per address.
const maxPTRNames = 5

// forwardConfirm looks up the PTR names of ip and then the addresses of
// each name, in parallel.
func (c *checker) forwardConfirm(ctx context.Context, ip net.IP) fcrdns {
	names, err := c.r.LookupPTR(ctx, ip)
	if notFound(err) {
		return fcrdns{}
	}
	if err != nil {
		return fcrdns{err: err}
	}
	for i := range names {
		names[i] = strings.ToLower(names[i])
	}
	check := names
	if len(check) > maxPTRNames {
		check = check[:maxPTRNames]
	}
	ok := make([]bool, len(check))
	var wg sync.WaitGroup
	for i, n := range check {
		wg.Go(func() {
			addrs, err := c.r.LookupIPAddr(ctx, n)
			if err != nil {
				return
			}
			for _, a := range addrs {
				if a.IP.Equal(ip) {
					ok[i] = true
				}
			}
		})
	}
	wg.Wait()
	out := fcrdns{names: names}
	for i, n := range check {
		if ok[i] {
			out.confirmed = append(out.confirmed, n)
		}
	}
	return out
}

// checkSenderRDNS judges RuleIPFCrDNS and RuleHELOMatchesPTR.
func (c *checker) checkSenderRDNS(ctx context.Context, p *part, res *Result) {
	ip := c.in.SenderIP
	if ip == nil {
		return
	}
	fc := c.forwardConfirm(ctx, ip)
	if fc.err != nil {
		p.unchecked(RuleIPFCrDNS, fmt.Sprintf("Reverse DNS of %s", ip), fc.err)
		if c.in.HELO != "" {
			p.unchecked(RuleHELOMatchesPTR, "The HELO name against reverse DNS", fc.err)
		}
		return
	}
	res.PTRNames = fc.names
	fix := fmt.Sprintf("Ask the provider of %s to set its PTR record to a name that resolves back to it, e.g. mail.%s (with mail.%s. A %s), and announce that name in HELO", ip, c.domain, c.domain, ip)
	switch {
	case len(fc.names) == 0:
		p.score(RuleIPFCrDNS, 0)
		p.find(SeverityCritical, RuleIPFCrDNS, fmt.Sprintf("the sending IP %s has no PTR record; many receivers reject or junk mail from such addresses", ip))
		p.recommend(fix)
	case len(fc.confirmed) == 0:
		p.score(RuleIPFCrDNS, 0)
		p.find(SeverityWarning, RuleIPFCrDNS, fmt.Sprintf("the PTR name of %s (%s) does not resolve back to it: reverse DNS is not forward-confirmed", ip, strings.Join(fc.names, ", ")))
		p.recommend(fix)
	default:
		p.score(RuleIPFCrDNS, rule(RuleIPFCrDNS).Weight)
	}
	if c.in.HELO == "" {
		return
	}
	switch {
	case slices.Contains(fc.confirmed, c.in.HELO):
		p.score(RuleHELOMatchesPTR, rule(RuleHELOMatchesPTR).Weight)
	case len(fc.names) == 0:
		p.score(RuleHELOMatchesPTR, 0)
		p.find(SeverityWarning, RuleHELOMatchesPTR, fmt.Sprintf("the HELO name %s cannot match reverse DNS: %s has no PTR record", c.in.HELO, ip))
	case len(fc.confirmed) == 0:
		p.score(RuleHELOMatchesPTR, 0)
		p.find(SeverityWarning, RuleHELOMatchesPTR, fmt.Sprintf("the HELO name %s does not match a forward-confirmed PTR name of %s", c.in.HELO, ip))
	default:
		p.score(RuleHELOMatchesPTR, 0)
		p.find(SeverityWarning, RuleHELOMatchesPTR, fmt.Sprintf("the HELO name %s does not match the PTR name of %s (%s)", c.in.HELO, ip, strings.Join(fc.confirmed, ", ")))
		p.recommend(fmt.Sprintf("Announce %s as the HELO/EHLO name of the server sending from %s", fc.confirmed[0], ip))
	}
}

// listing is the answer of one blocklist zone about one name.
type listing struct {
	zone, label, query string
	codes              []string // 127.0.0.x answers: listed
	refused            []string // 127.255.255.x or 127.0.0.1: the list refused the query
	other              []string // answers outside 127/8: not a DNSBL answer
	err                error    // lookup failed
}

// queryList asks zone about label (reversed IP or domain name).
func (c *checker) queryList(ctx context.Context, label, zone string) listing {
	l := listing{zone: zone, label: label, query: label + "." + zone}
	ips, err := c.r.LookupA(ctx, l.query)
	if notFound(err) {
		return l
	}
	if err != nil {
		l.err = err
		return l
	}
	for _, ip := range ips {
		v4 := ip.To4()
		switch {
		case v4 == nil || v4[0] != 127:
			l.other = append(l.other, ip.String())
		case v4[1] == 255 && v4[2] == 255, v4.Equal(net.IPv4(127, 0, 0, 1)):
			l.refused = append(l.refused, ip.String())
		default:
			l.codes = append(l.codes, ip.String())
		}
	}
	return l
}

// queryLists asks every zone about every label in parallel.
func (c *checker) queryLists(ctx context.Context, labels, zones []string) []listing {
	out := make([]listing, len(labels)*len(zones))
	var wg sync.WaitGroup
	for i, label := range labels {
		for j, zone := range zones {
			zone = strings.TrimSuffix(strings.TrimSpace(zone), ".")
			wg.Go(func() { out[i*len(zones)+j] = c.queryList(ctx, label, zone) })
		}
	}
	wg.Wait()
	return out
}

// judgeLists scores rule from the listings about subject.
// An empty subject names each listing's own label (a domain).
func judgeLists(p *part, id, subject string, ls []listing, fix string) {
	listed, answered := 0, 0
	for _, l := range ls {
		subject := subject
		if subject == "" {
			subject = l.label
		}
		switch {
		case l.err != nil:
			p.find(SeverityInfo, id, fmt.Sprintf("blocklist %s could not be checked for %s: %v", l.zone, subject, l.err))
		case len(l.codes) > 0:
			listed++
			answered++
			p.find(SeverityCritical, id, fmt.Sprintf("%s is listed on %s (%s answers %s)", subject, l.zone, l.query, strings.Join(l.codes, ", ")))
		case len(l.refused) > 0:
			p.find(SeverityInfo, id, fmt.Sprintf("blocklist %s refused the query for %s (answer %s): it blocks public or unregistered resolvers, so the listing is unknown", l.zone, subject, strings.Join(l.refused, ", ")))
		case len(l.other) > 0:
			p.find(SeverityInfo, id, fmt.Sprintf("blocklist %s gave an answer outside 127.0.0.0/8 for %s (%s): the resolver may rewrite NXDOMAIN; ignored", l.zone, subject, strings.Join(l.other, ", ")))
		default:
			answered++
		}
	}
	switch {
	case listed > 0:
		p.score(id, 0)
		p.recommend(fix)
	case answered > 0:
		p.score(id, rule(id).Weight)
	}
}

// checkIPBlocklists judges RuleIPBlocklists.
func (c *checker) checkIPBlocklists(ctx context.Context, p *part) {
	ip := c.in.SenderIP
	if ip == nil || len(c.opts.IPBlocklists) == 0 {
		return
	}
	arpa, err := dns.ReverseAddr(ip.String())
	if err != nil {
		return
	}
	label := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(arpa, "."), ".in-addr.arpa"), ".ip6.arpa")
	ls := c.queryLists(ctx, []string{label}, c.opts.IPBlocklists)
	judgeLists(p, RuleIPBlocklists, "the sending IP "+ip.String(), ls,
		fmt.Sprintf("Find why %s is listed (the blocklist's lookup page gives the reason), fix the cause (a compromised account, a spam source, an unsecured form) and request delisting", ip))
}

// checkDomainBlocklists judges RuleDomainBlocklists.
func (c *checker) checkDomainBlocklists(ctx context.Context, p *part) {
	if len(c.opts.DomainBlocklists) == 0 {
		return
	}
	names := []string{c.domain}
	if org := dmarc.OrgDomain(c.domain); org != "" && org != c.domain {
		names = append(names, org)
	}
	ls := c.queryLists(ctx, names, c.opts.DomainBlocklists)
	judgeLists(p, RuleDomainBlocklists, "", ls,
		fmt.Sprintf("Find why %s is listed (the blocklist's lookup page gives the reason), stop the mail or links that caused it and request delisting", c.domain))
}
