package dnscheck

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"mailbolt/mta/tlspolicy"
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

// lookupRecord finds the record of a version at name with the parser the
// sender uses (mta/tlspolicy): ("", nil) when there is none, an error
// from the lookup, or a record that several candidates make ambiguous
// (bad is set then).
func (c *checker) lookupRecord(ctx context.Context, name, version string) (rec string, bad, err error) {
	txts, err := c.r.LookupTXT(ctx, name)
	if notFound(err) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	rec, sel := tlspolicy.Select(txts, version)
	switch {
	case errors.Is(sel, tlspolicy.ErrNoRecord):
		return "", nil, nil
	case sel != nil:
		return "", sel, nil
	}
	return rec, nil, nil
}

// checkMTASTS judges RuleMTASTS: the record must parse as senders parse it
// (mta/tlspolicy), or senders ignore it. The policy file is not fetched.
func (c *checker) checkMTASTS(ctx context.Context, p *part) {
	rec, bad, err := c.lookupRecord(ctx, "_mta-sts."+c.domain, tlspolicy.STSVersion)
	if bad == nil && rec != "" {
		_, bad = tlspolicy.ParseSTSRecord(rec)
	}
	switch {
	case err != nil:
		p.unchecked(RuleMTASTS, "MTA-STS", err)
	case bad != nil:
		p.score(RuleMTASTS, 0)
		p.find(SeverityWarning, RuleMTASTS, fmt.Sprintf("the MTA-STS record at _mta-sts.%s is not valid (%v): senders ignore it", c.domain, bad))
		p.recommend(fmt.Sprintf(`Publish one TXT record at _mta-sts.%s: "v=STSv1; id=20240101T000000" (id: 1 to 32 letters and digits, changed with every policy change)`, c.domain))
	case rec != "":
		p.score(RuleMTASTS, rule(RuleMTASTS).Weight)
	default:
		p.score(RuleMTASTS, 0)
		p.find(SeverityInfo, RuleMTASTS, fmt.Sprintf("no MTA-STS record at _mta-sts.%s: senders may deliver to %s without TLS", c.domain, c.domain))
		p.recommend(fmt.Sprintf(`To require TLS for mail to %s, serve a policy at https://mta-sts.%s/.well-known/mta-sts.txt and publish TXT at _mta-sts.%s: "v=STSv1; id=20240101T000000"`, c.domain, c.domain, c.domain))
	}
}

// checkTLSRPT judges RuleTLSRPT with the sender's parser: a record without
// a usable rua gets no reports.
func (c *checker) checkTLSRPT(ctx context.Context, p *part) {
	rec, bad, err := c.lookupRecord(ctx, "_smtp._tls."+c.domain, tlspolicy.TLSRPTVersion)
	if bad == nil && rec != "" {
		_, bad = tlspolicy.ParseTLSRPTRecord(rec)
	}
	switch {
	case err != nil:
		p.unchecked(RuleTLSRPT, "TLS-RPT", err)
	case bad != nil:
		p.score(RuleTLSRPT, 0)
		p.find(SeverityWarning, RuleTLSRPT, fmt.Sprintf("the TLS-RPT record at _smtp._tls.%s is not valid (%v): no reports reach you", c.domain, bad))
		p.recommend(fmt.Sprintf(`Publish one TXT record at _smtp._tls.%s: "v=TLSRPTv1; rua=mailto:tls-reports@%s"`, c.domain, c.domain))
	case rec != "":
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
