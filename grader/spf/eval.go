package spf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// lookupLimit is the number of mechanisms and modifiers that may cause DNS
// queries in one evaluation (§4.6.4: "MUST limit ... to at most 10").
const lookupLimit = 10

// mxLimit and ptrLimit bound the address lookups of one "mx" or "ptr"
// mechanism (§4.6.4).
const (
	mxLimit  = 10
	ptrLimit = 10
)

// evaluator holds the state of one check_host() call, nested include and
// redirect evaluations included: the limits are for the whole check.
type evaluator struct {
	r   Resolver
	cfg config

	ip           netip.Addr // unmapped: an IPv4-mapped address is IPv4 (§5)
	sender       string     // <sender>: local "@" domain (§4.1)
	local        string     // local part, "postmaster" when missing (§4.3)
	senderDomain string     // %{o}
	helo         string     // %{h}

	lookups int // DNS-querying terms so far
	voids   int // void lookups so far

	pDone  bool     // validated names for %{p} computed
	pNames []string // validated names of ip
}

// errResult maps an evaluation error to its result.
func errResult(err error) Result {
	if errors.Is(err, ErrDNS) {
		return TempError
	}
	return PermError
}

// checkHost is check_host(<ip>, <domain>, <sender>) of §4. wantExp asks
// for the explanation of a Fail; "include" does not want it (§6.2: only
// the exp= of the record that produced the result counts).
func (e *evaluator) checkHost(ctx context.Context, domain string, wantExp bool) (Result, string, error) {
	// §4.3: a malformed or single-label domain has no policy.
	if !validDomain(domain) {
		return None, "", nil
	}
	rec, err := e.record(ctx, domain)
	if err != nil {
		return errResult(err), "", err
	}
	if rec == nil {
		return None, "", nil
	}
	// §4.6.2: mechanisms in order; the first that matches decides.
	for i := range rec.Mechanisms {
		m := &rec.Mechanisms[i]
		ok, err := e.match(ctx, m, domain)
		if err != nil {
			err = fmt.Errorf("%s: %s: %w", domain, m, err)
			return errResult(err), "", err
		}
		if !ok {
			continue
		}
		res := m.Qualifier.Result()
		exp := ""
		if res == Fail && wantExp && rec.exp != nil {
			exp = e.explain(ctx, rec.exp, domain)
		}
		return res, exp, nil
	}
	if rec.redirect != nil {
		return e.redirect(ctx, rec, domain, wantExp)
	}
	// §4.7: no match and no redirect.
	return Neutral, "", nil
}

// record fetches and parses the SPF record at domain (§4.4, §4.5); nil
// without error when there is none.
func (e *evaluator) record(ctx context.Context, domain string) (*Record, error) {
	txts, err := e.lookupTXT(ctx, domain)
	if errors.Is(err, errVoid) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var found []string
	for _, t := range txts {
		if isSPF(t) {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%s: %w", domain, ErrMultipleRecords)
	}
	rec, err := Parse(found[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", domain, err)
	}
	return rec, nil
}

// countLookup spends one of the 10 DNS-querying terms (§4.6.4).
func (e *evaluator) countLookup() error {
	e.lookups++
	if e.lookups > lookupLimit {
		return ErrTooManyLookups
	}
	return nil
}

// countVoid spends one void lookup (§4.6.4).
func (e *evaluator) countVoid() error {
	e.voids++
	if e.cfg.voidLimit >= 0 && e.voids > e.cfg.voidLimit {
		return ErrTooManyVoidLookups
	}
	return nil
}

// redirect follows redirect= (§6.1): the record at the target decides, its
// own exp= included, and a target without a record is PermError.
func (e *evaluator) redirect(ctx context.Context, rec *Record, domain string, wantExp bool) (Result, string, error) {
	if err := e.countLookup(); err != nil {
		err = fmt.Errorf("%s: redirect=%s: %w", domain, rec.Redirect, err)
		return PermError, "", err
	}
	target := e.targetName(ctx, rec.redirect, domain)
	res, exp, err := e.checkHost(ctx, target, wantExp)
	if res == None {
		err = fmt.Errorf("%s: redirect=%s: %s: %w", domain, rec.Redirect, target, ErrNoRecord)
		return PermError, "", err
	}
	return res, exp, err
}

// targetName expands a domain-spec into the name to query: without its
// final dot, and cut from the left to 253 characters (§7.3).
func (e *evaluator) targetName(ctx context.Context, ms macroString, domain string) string {
	name := strings.TrimSuffix(ms.expand(e.macroValue(ctx, domain)), ".")
	for len(name) > 253 {
		dot := strings.IndexByte(name, '.')
		if dot < 0 {
			break
		}
		name = name[dot+1:]
	}
	return name
}

// explain computes the explanation of exp= (§6.2). Every problem — a DNS
// error, no record or several, a string outside the grammar (which also
// rules out anything but 7-bit ASCII) — means no explanation. These lookups
// do not count toward the limits.
func (e *evaluator) explain(ctx context.Context, spec macroString, domain string) string {
	txts, err := e.lookupTXT(ctx, e.targetName(ctx, spec, domain))
	if err != nil || len(txts) != 1 {
		return ""
	}
	ms, err := parseMacroString(txts[0], explainSyntax)
	if err != nil {
		return ""
	}
	return ms.expand(e.macroValue(ctx, domain))
}
