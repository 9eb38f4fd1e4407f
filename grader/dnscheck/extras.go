package dnscheck

import (
	"context"
	"fmt"
	"strings"
)

// hasRecord looks for a TXT record at name that starts with the version
// tag prefix ("v=STSv1" …), case-insensitively, followed by ';', space or
// the end.
func (c *checker) hasRecord(ctx context.Context, name, prefix string) (string, bool, error) {
	txts, err := c.r.LookupTXT(ctx, name)
	if notFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	for _, t := range txts {
		t = strings.TrimSpace(t)
		if len(t) >= len(prefix) && strings.EqualFold(t[:len(prefix)], prefix) &&
			(len(t) == len(prefix) || t[len(prefix)] == ';' || t[len(prefix)] == ' ') {
			return t, true, nil
		}
	}
	return "", false, nil
}

// checkMTASTS judges RuleMTASTS.
func (c *checker) checkMTASTS(ctx context.Context, p *part) {
	_, ok, err := c.hasRecord(ctx, "_mta-sts."+c.domain, "v=STSv1")
	switch {
	case err != nil:
		p.unchecked(RuleMTASTS, "MTA-STS", err)
	case ok:
		p.score(RuleMTASTS, rule(RuleMTASTS).Weight)
	default:
		p.score(RuleMTASTS, 0)
		p.find(SeverityInfo, RuleMTASTS, fmt.Sprintf("no MTA-STS record at _mta-sts.%s: senders may deliver to %s without TLS", c.domain, c.domain))
		p.recommend(fmt.Sprintf(`To require TLS for mail to %s, serve a policy at https://mta-sts.%s/.well-known/mta-sts.txt and publish TXT at _mta-sts.%s: "v=STSv1; id=20240101T000000"`, c.domain, c.domain, c.domain))
	}
}

// checkTLSRPT judges RuleTLSRPT.
func (c *checker) checkTLSRPT(ctx context.Context, p *part) {
	_, ok, err := c.hasRecord(ctx, "_smtp._tls."+c.domain, "v=TLSRPTv1")
	switch {
	case err != nil:
		p.unchecked(RuleTLSRPT, "TLS-RPT", err)
	case ok:
		p.score(RuleTLSRPT, rule(RuleTLSRPT).Weight)
	default:
		p.score(RuleTLSRPT, 0)
		p.find(SeverityInfo, RuleTLSRPT, fmt.Sprintf("no TLS-RPT record at _smtp._tls.%s: no reports of TLS failures reach you", c.domain))
		p.recommend(fmt.Sprintf(`Publish TXT at _smtp._tls.%s: "v=TLSRPTv1; rua=mailto:tls-reports@%s"`, c.domain, c.domain))
	}
}

// lookupBIMI fetches the BIMI record for judgeBIMI, which needs the DMARC
// policy as well: "" when there is none.
func (c *checker) lookupBIMI(ctx context.Context) (string, error) {
	rec, _, err := c.hasRecord(ctx, "default._bimi."+c.domain, "v=BIMI1")
	return rec, err
}

// judgeBIMI notes RuleBIMI (weight 0): a BIMI record needs DMARC
// enforcement to be honoured.
func (c *checker) judgeBIMI(p *part, rec string, err error, policy string) {
	switch {
	case err != nil:
		p.find(SeverityInfo, RuleBIMI, fmt.Sprintf("BIMI could not be checked: %v", err))
	case rec == "":
		p.score(RuleBIMI, 0)
		p.find(SeverityInfo, RuleBIMI, fmt.Sprintf("no BIMI record at default._bimi.%s (optional: shows your logo in supporting inboxes; needs DMARC p=quarantine or p=reject)", c.domain))
	case policy == "quarantine" || policy == "reject":
		p.score(RuleBIMI, 0)
		p.find(SeverityInfo, RuleBIMI, fmt.Sprintf("BIMI record found at default._bimi.%s, with DMARC enforcement (p=%s)", c.domain, policy))
	default:
		p.score(RuleBIMI, 0)
		p.find(SeverityWarning, RuleBIMI, fmt.Sprintf("a BIMI record is published at default._bimi.%s but DMARC is not enforced (policy %q): mailbox providers ignore BIMI without p=quarantine or p=reject", c.domain, policy))
		p.recommend(fmt.Sprintf("Raise the DMARC policy of %s to p=quarantine or p=reject so that its BIMI record is honoured", c.domain))
	}
}
