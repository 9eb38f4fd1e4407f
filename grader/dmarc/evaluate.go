package dmarc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"mailbolt/grader/spf"
)

// Status is the DMARC result (RFC 7489 §11.2), spelled as in
// Authentication-Results headers.
type Status string

// The five results of §11.2.
const (
	None      Status = "none"      // no usable policy published (§6.6.3)
	Pass      Status = "pass"      // an aligned SPF or DKIM pass (§4.2)
	Fail      Status = "fail"      // a policy exists and nothing aligned passed
	TempError Status = "temperror" // a retry may reach a conclusion
	PermError Status = "permerror" // the published record is unusable
)

// ErrAuthTemporary explains a TempError that comes from the SPF or DKIM
// result of an aligned identifier rather than from policy discovery.
var ErrAuthTemporary = errors.New("dmarc: aligned SPF or DKIM result is temperror")

// SPFResult is the SPF outcome for the message (RFC 7208): Domain is the
// identity SPF checked, the RFC5321.MailFrom domain, or the HELO name when
// the reverse-path was null (§3.1.2, RFC 7208 §2.4).
type SPFResult struct {
	Result spf.Result
	Domain string
}

// DKIMResult is the verification outcome of one DKIM-Signature (RFC 6376):
// Result is the RFC 8601 word ("pass", "fail", "temperror", …; case does
// not matter), Domain its d= tag, Selector its s= tag.
type DKIMResult struct {
	Result   string
	Domain   string
	Selector string
}

// Result is a DMARC evaluation.
type Result struct {
	// Result is the DMARC result (see the package comment for the rules).
	Result Status
	// Policy is what the domain owner asks for mail from this From domain
	// that fails DMARC: p, sp or np of the record per PolicyTag. It is
	// PolicyNone without a usable record. See Disposition for pct.
	Policy Policy
	// PolicyTag names the tag Policy came from: "p", "sp" or "np" (RFC
	// 9091); "" without a usable record.
	PolicyTag string
	// SPFAligned: SPF passed for a domain aligned with the From domain.
	// DKIMAligned: some signature passed for an aligned d= domain. Without a
	// usable record they are computed in relaxed mode, the default, to show
	// whether the mail would pass.
	SPFAligned, DKIMAligned bool
	// Record is the policy record used; nil without a usable one.
	Record *Record
	// RecordDomain is the domain whose _dmarc record was used: the From
	// domain or its organizational domain (§6.6.3); "" without one.
	RecordDomain string
	// OrgDomain is the organizational domain of the From domain (§3.2), the
	// From domain itself when that is a public suffix.
	OrgDomain string
}

// Evaluate runs DMARC (§6.6) for a message whose RFC5322.From domain is
// fromDomain, given its SPF result and the results of its DKIM signatures.
//
// The Result is always filled in as far as it can be. The error is nil for
// Pass, Fail and for None because no record is published; otherwise it
// says why: TempError (wrapping ErrDNS or ErrAuthTemporary), PermError
// (wrapping ErrInvalidRecord), and None because of ErrMultipleRecords or
// an unusable fromDomain (ErrInvalidDomain).
func Evaluate(ctx context.Context, r Resolver, fromDomain string, spfRes SPFResult, dkim []DKIMResult) (Result, error) {
	res := Result{Result: None, Policy: PolicyNone}
	from, err := canonical(fromDomain)
	if err != nil {
		return res, fmt.Errorf("%w: From domain %q", ErrInvalidDomain, fromDomain)
	}
	res.OrgDomain = orgOrSelf(from)

	rec, at, err := discover(ctx, r, from, res.OrgDomain)
	spfMode, dkimMode := Relaxed, Relaxed
	if rec != nil {
		spfMode, dkimMode = rec.SPFAlignment, rec.DKIMAlignment
	}

	// §4.2: an authenticated identifier that is also aligned. Keep note of
	// aligned identifiers whose check failed only for now.
	retry := false
	if Aligned(spfMode, spfRes.Domain, from) {
		res.SPFAligned = spfRes.Result == spf.Pass
		retry = spfRes.Result == spf.TempError
	}
	for _, d := range dkim {
		if Aligned(dkimMode, d.Domain, from) {
			switch Status(strings.ToLower(d.Result)) {
			case Pass:
				res.DKIMAligned = true
			case TempError:
				retry = true
			}
		}
	}

	switch {
	case errors.Is(err, ErrNoRecord):
		return res, nil
	case errors.Is(err, ErrDNS):
		res.Result = TempError
		return res, err
	case errors.Is(err, ErrInvalidRecord):
		res.Result = PermError
		return res, err
	case err != nil: // ErrMultipleRecords
		return res, err
	}

	res.Record, res.RecordDomain = rec, at
	res.Policy, res.PolicyTag = rec.Policy, "p"
	if at != from {
		// The record is the organizational domain's, applied to a
		// subdomain: np for one that does not exist (RFC 9091 §4.1), else
		// sp (§6.3 "sp"), each falling back to p when absent.
		if rec.NonexistentPolicy != "" && nonexistent(ctx, r, from) {
			res.Policy, res.PolicyTag = rec.NonexistentPolicy, "np"
		} else if rec.SubdomainPolicy != "" {
			res.Policy, res.PolicyTag = rec.SubdomainPolicy, "sp"
		}
	}

	switch {
	case res.SPFAligned || res.DKIMAligned:
		res.Result = Pass
	case retry:
		res.Result = TempError
		return res, ErrAuthTemporary
	default:
		res.Result = Fail
	}
	return res, nil
}

// Aligned reports whether an authenticated domain (DKIM d=, SPF identity)
// is aligned with the RFC5322.From domain (§3.1): the same name in Strict
// mode, the same organizational domain in Relaxed mode (any other mode
// counts as Relaxed, the default). Names compare case-insensitively,
// without a final dot, with IDNs as A-labels; an invalid name aligns with
// nothing.
func Aligned(mode Alignment, authDomain, fromDomain string) bool {
	a, err := canonical(authDomain)
	if err != nil {
		return false
	}
	f, err := canonical(fromDomain)
	if err != nil {
		return false
	}
	if mode == Strict {
		return a == f
	}
	return a == f || orgOrSelf(a) == orgOrSelf(f)
}

// Disposition is the policy to act on for this message (§6.6.4): PolicyNone
// unless the result is Fail; otherwise Policy, sampled by the record's pct
// (§6.3): roll is a number drawn uniformly from 0 to 99 by the caller, and
// a message outside the sample gets the next weaker policy (reject becomes
// quarantine, quarantine becomes none).
func (r Result) Disposition(roll int) Policy {
	if r.Result != Fail {
		return PolicyNone
	}
	pct := DefaultPercent
	if r.Record != nil {
		pct = r.Record.Percent
	}
	if roll < pct {
		return r.Policy
	}
	switch r.Policy {
	case PolicyReject:
		return PolicyQuarantine
	default:
		return PolicyNone
	}
}
