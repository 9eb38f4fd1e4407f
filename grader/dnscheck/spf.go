package dnscheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"mailbolt/grader/spf"
)

// spfProbeIP is the client address the SPF evaluator is run with to walk
// the whole record: TEST-NET-1 (RFC 5737), which no record should authorize.
var spfProbeIP = net.IPv4(192, 0, 2, 1)

// spfRecords returns the v=spf1 TXT records at name.
func (c *checker) spfRecords(ctx context.Context, name string) ([]string, error) {
	txts, err := c.r.LookupTXT(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range txts {
		if len(t) >= 6 && strings.EqualFold(t[:6], "v=spf1") && (len(t) == 6 || t[6] == ' ') {
			out = append(out, t)
		}
	}
	return out, nil
}

// checkSPF judges RuleSPFRecord, RuleSPFLimits and RuleSPFAll.
func (c *checker) checkSPF(ctx context.Context, p *part, res *Result) {
	fix := fmt.Sprintf(`Publish one TXT record at %s: "v=spf1 mx -all" (add an include: or ip4:/ip6: term for every service that sends mail as %s before -all)`, c.domain, c.domain)
	recs, err := c.spfRecords(ctx, c.domain)
	if err != nil && !notFound(err) {
		for _, id := range []string{RuleSPFRecord, RuleSPFLimits, RuleSPFAll} {
			p.unchecked(id, "SPF", err)
		}
		return
	}
	zero := func() {
		p.score(RuleSPFRecord, 0)
		p.score(RuleSPFLimits, 0)
		p.score(RuleSPFAll, 0)
	}
	switch len(recs) {
	case 0:
		zero()
		p.find(SeverityCritical, RuleSPFRecord, fmt.Sprintf("%s publishes no SPF record: receivers cannot tell which servers may send its mail", c.domain))
		p.recommend(fix)
		return
	case 1:
	default:
		zero()
		p.find(SeverityCritical, RuleSPFRecord, fmt.Sprintf("%s publishes %d v=spf1 records; with more than one, SPF is a permerror (RFC 7208 §4.5)", c.domain, len(recs)))
		p.recommend(fmt.Sprintf("Merge the SPF records of %s into one TXT record", c.domain))
		return
	}
	res.SPFRecord = recs[0]
	rec, err := spf.Parse(recs[0])
	if err != nil {
		zero()
		p.find(SeverityCritical, RuleSPFRecord, fmt.Sprintf("the SPF record of %s is invalid: %v", c.domain, err))
		p.recommend(fix)
		return
	}
	p.score(RuleSPFRecord, rule(RuleSPFRecord).Weight)

	// Count the DNS-querying terms through includes and redirects, and run
	// the evaluator (which also counts void lookups) in parallel.
	var (
		count   int
		cntErr  error
		spfRes  spf.Result
		evalErr error
	)
	parallel(
		func() {
			seen := map[string]bool{c.domain: true}
			count, cntErr = c.countLookups(ctx, rec, seen, 0)
		},
		func() {
			spfRes, _, evalErr = spf.Check(ctx, c.r, spfProbeIP, c.domain, "", "")
		},
	)
	limits := rule(RuleSPFLimits).Weight
	switch {
	case count > 10:
		limits = 0
		p.find(SeverityCritical, RuleSPFLimits, fmt.Sprintf("the SPF record of %s needs %d DNS lookups (include, a, mx, ptr, exists, redirect, counted through includes); more than 10 is a permerror (RFC 7208 §4.6.4)", c.domain, count))
		p.recommend("Cut the SPF record to at most 10 DNS-querying terms: replace include:, a and mx terms by the ip4:/ip6: ranges they stand for, and drop services that no longer send")
	case spfRes == spf.PermError && errors.Is(evalErr, spf.ErrTooManyLookups):
		limits = 0
		p.find(SeverityCritical, RuleSPFLimits, fmt.Sprintf("evaluating the SPF record of %s takes more than 10 DNS lookups, a permerror (RFC 7208 §4.6.4)", c.domain))
	case spfRes == spf.PermError && errors.Is(evalErr, spf.ErrTooManyVoidLookups):
		limits = 0
		p.find(SeverityCritical, RuleSPFLimits, fmt.Sprintf("the SPF record of %s causes more than 2 void lookups (names with no record), a permerror (RFC 7208 §4.6.4): %v", c.domain, evalErr))
		p.recommend("Remove the SPF terms that point at names without records")
	case spfRes == spf.PermError:
		limits = 0
		p.find(SeverityCritical, RuleSPFLimits, fmt.Sprintf("the SPF record of %s evaluates to permerror: %v", c.domain, evalErr))
	case spfRes == spf.TempError || cntErr != nil:
		e := evalErr
		if e == nil {
			e = cntErr
		}
		p.unchecked(RuleSPFLimits, "The SPF lookup count", e)
		limits = -1
	default:
		p.find(SeverityInfo, RuleSPFLimits, fmt.Sprintf("the SPF record of %s uses %d of the 10 DNS lookups allowed", c.domain, count))
	}
	if limits >= 0 {
		p.score(RuleSPFLimits, limits)
	}
	c.judgeAll(ctx, p, rec)
}

// countLookups counts the terms of rec that cost a DNS lookup (RFC 7208
// §4.6.4), adding those of the records reached by include and redirect.
// Targets written with macros are counted but not followed.
func (c *checker) countLookups(ctx context.Context, rec *spf.Record, seen map[string]bool, depth int) (int, error) {
	n := 0
	var follow []string
	for _, m := range rec.Mechanisms {
		switch m.Kind {
		case spf.KindInclude:
			n++
			follow = append(follow, m.Domain)
		case spf.KindA, spf.KindMX, spf.KindPTR, spf.KindExists:
			n++
		}
	}
	if rec.Redirect != "" {
		n++
		follow = append(follow, rec.Redirect)
	}
	if depth >= 10 || n > 10 {
		return n, nil
	}
	var firstErr error
	for _, target := range follow {
		target = strings.ToLower(strings.TrimSuffix(target, "."))
		if strings.Contains(target, "%") || seen[target] {
			continue
		}
		seen[target] = true
		recs, err := c.spfRecords(ctx, target)
		if err != nil {
			if !notFound(err) && firstErr == nil {
				firstErr = err
			}
			continue
		}
		if len(recs) != 1 {
			continue
		}
		sub, err := spf.Parse(recs[0])
		if err != nil {
			continue
		}
		k, err := c.countLookups(ctx, sub, seen, depth+1)
		n += k
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if n > 10 {
			break
		}
	}
	return n, firstErr
}

// judgeAll scores RuleSPFAll from the record's all mechanism, or from the
// redirect target's when the record has none.
func (c *checker) judgeAll(ctx context.Context, p *part, rec *spf.Record) {
	all, found := allQualifier(rec)
	if !found && rec.Redirect != "" && !strings.Contains(rec.Redirect, "%") {
		recs, err := c.spfRecords(ctx, rec.Redirect)
		if err != nil && !notFound(err) {
			p.unchecked(RuleSPFAll, "The all term of the redirect target", err)
			return
		}
		if len(recs) == 1 {
			if sub, err := spf.Parse(recs[0]); err == nil {
				all, found = allQualifier(sub)
			}
		}
	}
	fixAll := func(why string) {
		p.recommend(fmt.Sprintf("End the SPF record of %s with -all (or ~all while testing): %s", c.domain, why))
	}
	switch {
	case !found:
		p.score(RuleSPFAll, 0)
		p.find(SeverityWarning, RuleSPFAll, fmt.Sprintf("the SPF record of %s has no all term and no redirect: mail from unlisted servers gets neutral, not fail", c.domain))
		fixAll("without it, any server gets neutral")
	case all == spf.QualifierPass:
		p.score(RuleSPFAll, 0)
		p.find(SeverityCritical, RuleSPFAll, fmt.Sprintf("the SPF record of %s ends in +all: it authorizes every server on the internet to send as the domain", c.domain))
		fixAll("+all authorizes everyone")
	case all == spf.QualifierNeutral:
		p.score(RuleSPFAll, 0)
		p.find(SeverityWarning, RuleSPFAll, fmt.Sprintf("the SPF record of %s ends in ?all: it says nothing about unlisted servers", c.domain))
		fixAll("?all asserts nothing")
	case all == spf.QualifierSoftFail:
		p.score(RuleSPFAll, MonitoringSPFAllPoints)
		p.find(SeverityInfo, RuleSPFAll, fmt.Sprintf("the SPF record of %s ends in ~all (softfail): the monitoring stage; the next stage is -all, once the DMARC reports show every sender of yours passing", c.domain))
		p.recommend(fmt.Sprintf("Next stage: once the DMARC reports show every sender of yours passing SPF, end the SPF record of %s with -all", c.domain))
	default:
		p.score(RuleSPFAll, rule(RuleSPFAll).Weight)
	}
}

// allQualifier returns the qualifier of the first all mechanism: the terms
// after it are never reached.
func allQualifier(rec *spf.Record) (spf.Qualifier, bool) {
	for _, m := range rec.Mechanisms {
		if m.Kind == spf.KindAll {
			return m.Qualifier, true
		}
	}
	return 0, false
}
