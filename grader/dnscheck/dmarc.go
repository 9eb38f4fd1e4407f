package dnscheck

import (
	"context"
	"errors"
	"fmt"

	"mailbolt/grader/dmarc"
)

// MonitoringDMARCPoints is what RuleDMARCPolicy awards p=none with a
// rua= address: the monitoring stage, short of quarantine's 8.
const MonitoringDMARCPoints = 5

// MonitoringSPFAllPoints is what RuleSPFAll awards ~all: the monitoring
// stage, short of -all's 5.
const MonitoringSPFAllPoints = 4

// policyRank orders DMARC policies from the weakest.
func policyRank(p dmarc.Policy) int {
	switch p {
	case dmarc.PolicyReject:
		return 2
	case dmarc.PolicyQuarantine:
		return 1
	}
	return 0
}

// checkDMARC judges RuleDMARCRecord, RuleDMARCPolicy and RuleDMARCReports,
// and returns the policy that applies to the domain ("" without a usable
// record) for the BIMI rule.
func (c *checker) checkDMARC(ctx context.Context, p *part, res *Result) string {
	fix := fmt.Sprintf(`Publish a TXT record at _dmarc.%s: "v=DMARC1; p=none; rua=mailto:dmarc-reports@%s", read the reports, then move to p=quarantine and p=reject once all legitimate mail passes`, c.domain, c.domain)
	rec, at, err := dmarc.Lookup(ctx, c.r, c.domain)
	ids := []string{RuleDMARCRecord, RuleDMARCPolicy, RuleDMARCReports}
	zero := func() {
		for _, id := range ids {
			p.score(id, 0)
		}
	}
	switch {
	case errors.Is(err, dmarc.ErrDNS):
		for _, id := range ids {
			p.unchecked(id, "DMARC", err)
		}
		return ""
	case errors.Is(err, dmarc.ErrNoRecord):
		zero()
		p.find(SeverityCritical, RuleDMARCRecord, fmt.Sprintf("%s publishes no DMARC record (looked at _dmarc.%s and at the organizational domain)", c.domain, c.domain))
		p.recommend(fix)
		return ""
	case errors.Is(err, dmarc.ErrMultipleRecords):
		zero()
		p.find(SeverityCritical, RuleDMARCRecord, fmt.Sprintf("more than one DMARC record is published for %s; receivers then apply none (RFC 7489 §6.6.3)", c.domain))
		p.recommend(fmt.Sprintf("Keep exactly one v=DMARC1 TXT record at _dmarc.%s", c.domain))
		return ""
	case err != nil:
		zero()
		p.find(SeverityCritical, RuleDMARCRecord, fmt.Sprintf("the DMARC record for %s is unusable: %v", c.domain, err))
		p.recommend(fix)
		return ""
	}
	res.DMARCRecord = c.rawDMARC(ctx, at, rec)
	res.DMARCRecordDomain = at
	p.score(RuleDMARCRecord, rule(RuleDMARCRecord).Weight)
	if at != c.domain {
		p.find(SeverityInfo, RuleDMARCRecord, fmt.Sprintf("the DMARC record applying to %s is the organizational domain's, at _dmarc.%s", c.domain, at))
	}
	for _, w := range rec.Warnings {
		p.find(SeverityWarning, RuleDMARCRecord, "DMARC record: "+w)
	}

	// The policy for this domain: p at its own record, sp (else p) when
	// the record is the organizational domain's.
	policy := rec.Policy
	if at != c.domain && rec.SubdomainPolicy != "" {
		policy = rec.SubdomainPolicy
	}
	res.DMARCPolicy = string(policy)
	points := 0
	switch policy {
	case dmarc.PolicyReject:
		points = rule(RuleDMARCPolicy).Weight
	case dmarc.PolicyQuarantine:
		points = 8
		p.find(SeverityInfo, RuleDMARCPolicy, fmt.Sprintf("DMARC policy for %s is quarantine; reject is the strongest", c.domain))
	case dmarc.PolicyNone:
		if len(rec.AggregateReports) == 0 {
			p.find(SeverityWarning, RuleDMARCPolicy, fmt.Sprintf("DMARC policy for %s is none without aggregate reports: receivers only monitor, and nobody sees the result", c.domain))
			p.recommend(fmt.Sprintf(`Add rua= to the DMARC record at _dmarc.%s (the monitoring stage), then raise the policy to p=quarantine and p=reject once the reports show only your own mail passing`, at))
			break
		}
		// The monitoring stage of the staged advice (docs/domains.md,
		// docs/grader.md): what domain setup publishes first. Not a fault,
		// so not a warning; enforcement still scores more.
		points = MonitoringDMARCPoints
		p.find(SeverityInfo, RuleDMARCPolicy, fmt.Sprintf("DMARC policy for %s is none with aggregate reports: the monitoring stage; the next stage is p=quarantine, then p=reject, once the reports show only your own mail passing", c.domain))
		p.recommend(fmt.Sprintf(`Next stage: once the DMARC reports show only your own mail passing, raise the policy at _dmarc.%s to p=quarantine, then p=reject`, at))
	}
	if rec.PolicyFallback {
		p.find(SeverityWarning, RuleDMARCPolicy, "the DMARC record has no valid p= tag; it is read as p=none because it has a rua= address")
	}
	if rec.SubdomainPolicy != "" && policyRank(rec.SubdomainPolicy) < policyRank(rec.Policy) {
		points -= 3
		p.find(SeverityWarning, RuleDMARCPolicy, fmt.Sprintf("sp=%s is weaker than p=%s: subdomains of %s can be spoofed more easily", rec.SubdomainPolicy, rec.Policy, at))
	}
	if rec.Percent < 100 && policy != dmarc.PolicyNone {
		points -= 2
		p.find(SeverityWarning, RuleDMARCPolicy, fmt.Sprintf("pct=%d: the DMARC policy applies to only %d%% of failing mail", rec.Percent, rec.Percent))
	}
	p.score(RuleDMARCPolicy, points)

	if len(rec.AggregateReports) > 0 {
		p.score(RuleDMARCReports, rule(RuleDMARCReports).Weight)
	} else {
		p.score(RuleDMARCReports, 0)
		p.find(SeverityWarning, RuleDMARCReports, "the DMARC record has no rua= address: no aggregate reports show who sends as the domain")
		p.recommend(fmt.Sprintf("Add rua=mailto:dmarc-reports@%s to the DMARC record at _dmarc.%s", at, at))
	}
	return string(policy)
}

// rawDMARC returns the DMARC record as published at _dmarc.<at>, or the
// parsed record written back when it cannot be fetched again.
func (c *checker) rawDMARC(ctx context.Context, at string, rec *dmarc.Record) string {
	txts, err := c.r.LookupTXT(ctx, "_dmarc."+at)
	if err == nil {
		for _, t := range txts {
			if _, err := dmarc.Parse(t); err == nil {
				return t
			}
		}
	}
	return rec.String()
}
