package dnscheck

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
)

// maxMXHosts bounds the exchanges whose addresses and reverse DNS are
// looked up.
const maxMXHosts = 5

// checkMX judges RuleMX and RuleMXFCrDNS.
func (c *checker) checkMX(ctx context.Context, p *part, res *Result) {
	mxs, err := c.r.LookupMX(ctx, c.domain)
	switch {
	case notFound(err):
		p.score(RuleMX, 0)
		p.find(SeverityWarning, RuleMX, fmt.Sprintf("%s has no MX record: mail to it falls back to its address records, and bounces and replies may not arrive", c.domain))
		p.recommend(fmt.Sprintf("Publish an MX record: %s. MX 10 mail.%s. (naming a host that accepts mail for the domain)", c.domain, c.domain))
		return
	case err != nil:
		p.unchecked(RuleMX, "MX", err)
		return
	}
	if len(mxs) == 1 && mxs[0].Host == "." {
		p.score(RuleMX, rule(RuleMX).Weight)
		p.find(SeverityInfo, RuleMX, fmt.Sprintf("%s publishes a null MX (RFC 7505): the domain takes no mail, so replies and bounces to it are refused", c.domain))
		return
	}
	hosts := make([]string, 0, len(mxs))
	for _, mx := range mxs {
		if mx.Host != "." {
			hosts = append(hosts, strings.ToLower(mx.Host))
		}
	}
	res.MXHosts = hosts
	if len(hosts) > maxMXHosts {
		hosts = hosts[:maxMXHosts]
	}
	addrs := make([][]net.IPAddr, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { addrs[i], errs[i] = c.r.LookupIPAddr(ctx, h) })
	}
	wg.Wait()
	resolved, failed := 0, 0
	for i, h := range hosts {
		switch {
		case errs[i] == nil:
			resolved++
		case notFound(errs[i]):
			p.find(SeverityWarning, RuleMX, fmt.Sprintf("MX host %s has no A or AAAA record", h))
		default:
			failed++
			p.unchecked(RuleMX, "The address of MX host "+h, errs[i])
		}
	}
	switch {
	case resolved == len(hosts):
		p.score(RuleMX, rule(RuleMX).Weight)
	case resolved > 0:
		p.score(RuleMX, rule(RuleMX).Weight/2)
	case failed == 0:
		p.score(RuleMX, 0)
		p.find(SeverityCritical, RuleMX, fmt.Sprintf("no MX host of %s resolves to an address: mail to the domain cannot be delivered", c.domain))
		p.recommend(fmt.Sprintf("Point the MX records of %s at host names that have A or AAAA records", c.domain))
	}
	if resolved == 0 {
		return
	}
	c.checkMXRDNS(ctx, p, hosts, addrs)
}

// checkMXRDNS judges RuleMXFCrDNS over the addresses found for the MX hosts.
func (c *checker) checkMXRDNS(ctx context.Context, p *part, hosts []string, addrs [][]net.IPAddr) {
	type probe struct {
		host string
		ip   net.IP
		fc   fcrdns
	}
	var probes []*probe
	for i, h := range hosts {
		for j, a := range addrs[i] {
			if j == 4 {
				break
			}
			probes = append(probes, &probe{host: h, ip: a.IP})
		}
	}
	var wg sync.WaitGroup
	for _, pr := range probes {
		wg.Go(func() { pr.fc = c.forwardConfirm(ctx, pr.ip) })
	}
	wg.Wait()
	bad, failed := 0, 0
	for _, pr := range probes {
		switch {
		case pr.fc.err != nil:
			failed++
			p.unchecked(RuleMXFCrDNS, fmt.Sprintf("Reverse DNS of MX host %s (%s)", pr.host, pr.ip), pr.fc.err)
		case len(pr.fc.names) == 0:
			bad++
			p.find(SeverityWarning, RuleMXFCrDNS, fmt.Sprintf("MX host %s (%s) has no PTR record", pr.host, pr.ip))
		case len(pr.fc.confirmed) == 0:
			bad++
			p.find(SeverityWarning, RuleMXFCrDNS, fmt.Sprintf("MX host %s (%s): no PTR name (%s) resolves back to the address", pr.host, pr.ip, strings.Join(pr.fc.names, ", ")))
		}
	}
	switch {
	case bad > 0:
		p.score(RuleMXFCrDNS, 0)
		p.recommend("Give every MX host address a PTR record naming a host that resolves back to it (forward-confirmed reverse DNS); the provider of the address sets it")
	case failed == 0:
		p.score(RuleMXFCrDNS, rule(RuleMXFCrDNS).Weight)
	}
}
