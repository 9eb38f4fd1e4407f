package grader

import (
	"context"
	"net"
	"strings"
)

// Authenticate runs the evaluators of a submission (SPF on the MAIL FROM
// domain or the HELO name, DKIM on raw, DMARC at the From domain) on a
// message this server received from ip: inbound mail is judged exactly as
// Submit judges a submitted one. fromDomain is the From field's domain;
// mailFrom the envelope's reverse-path ("" for the null one). A HELO name
// or From domain that cannot be checked gives the results "none" or
// "permerror" rather than an error: a received message is never refused
// for it.
func Authenticate(ctx context.Context, cfg Config, ip net.IP, helo, mailFrom, fromDomain string, raw []byte) AuthResults {
	ctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	in := input{ip: ip, mailFrom: mailFrom, full: ip != nil}
	if h, err := normalizeDomain(strings.TrimSpace(helo), "helo", false); err == nil {
		in.helo = h
	} else {
		in.helo = strings.ToLower(strings.TrimSpace(helo))
	}
	if d, err := normalizeDomain(fromDomain, "from", true); err == nil {
		in.domain = d
	}
	if ip == nil || cfg.Resolver == nil {
		return AuthResults{SPF: SPFResult{Result: "none"}, DKIM: []DKIMResult{}, DMARC: DMARCResult{Result: "none"}}
	}
	out := authenticate(ctx, cfg.Resolver, in, Submission{Raw: raw})
	if in.domain == "" {
		out.results.DMARC = DMARCResult{Result: "permerror"}
	}
	return out.results
}
