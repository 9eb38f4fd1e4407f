package grader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strings"

	"github.com/emersion/go-msgauth/dkim"

	"mailbolt/grader/dmarc"
	"mailbolt/grader/dnscheck"
	"mailbolt/grader/spf"
	"mailbolt/mta/dns"
)

// Authentication rule IDs.
const (
	// Submission mode (sender_ip and helo_hostname given).
	RuleAuthSPF       = "auth_spf"
	RuleAuthDKIM      = "auth_dkim"
	RuleAuthDMARC     = "auth_dmarc"
	RuleAuthAlignment = "auth_alignment"
	// Readiness mode (domain-only check, or a submission without them).
	RuleReadySPF   = "ready_spf"
	RuleReadyDKIM  = "ready_dkim"
	RuleReadyDMARC = "ready_dmarc"
)

// Modes of an AuthRule.
const (
	ModeSubmission = "submission"
	ModeReadiness  = "readiness"
)

// AuthRule is one row of the authentication table: the points it can
// award (Weight) toward the authentication dimension, and how.
type AuthRule struct {
	ID       string
	Mode     string // ModeSubmission or ModeReadiness
	Weight   int
	Describe string
}

// AuthRules is the authentication scoring table. Each mode's weights sum
// to 100. The dimension's Max is the sum of the weights of the rules of
// the mode in use that could be judged: a rule whose outcome is a
// temporary DNS failure (temperror, or a dnscheck rule left unjudged) is
// left out of both Score and Max, with a finding.
var AuthRules = []AuthRule{
	{RuleAuthSPF, ModeSubmission, 25, "SPF (RFC 7208) for the sending IP, on the MAIL FROM domain or, for a null reverse-path, the HELO name: pass 25, neutral/none 0 (warning), softfail 5 (warning), fail 0 (critical), permerror 0 (critical); temperror not judged."},
	{RuleAuthDKIM, ModeSubmission, 25, "DKIM (RFC 6376) signatures of the raw message, verified with go-msgauth: at least one passes 25; signatures that all fail or permerror 0 (critical); no signature, or no raw message to verify, 0 (warning); only temperror not judged."},
	{RuleAuthDMARC, ModeSubmission, 25, "DMARC (RFC 7489) with policy discovery at the From domain then its organizational domain: pass 25, fail 0 (critical), none (no record) 0 (warning), permerror 0 (critical); temperror not judged."},
	{RuleAuthAlignment, ModeSubmission, 25, "Identifier alignment with the From domain in the record's aspf/adkim mode (relaxed without a record): SPF and DKIM aligned 25, DKIM only 20 (survives forwarding), SPF only 12 (warning), neither 0 (critical)."},
	{RuleReadySPF, ModeReadiness, 35, "An SPF record is published and strict: the dnscheck rules spf_record and spf_limits at full points, then 35 × spf_all/5 (-all 35; ~all 28, the monitoring stage, info; ?all, +all or no all 0). A missing, broken or over-limit record scores 0 (critical)."},
	{RuleReadyDKIM, ModeReadiness, 30, "A trusted DKIM key is published for the checked selectors: 30 × dkim/15 (ed25519 or RSA ≥ 2048 bits 30, RSA 1024–2047 16, weaker or none 0)."},
	{RuleReadyDMARC, ModeReadiness, 35, "DMARC is published and enforcing: 35 × dmarc_policy/10 (p=reject 35, p=quarantine 28, with dnscheck's sp/pct deductions; p=none with rua= 18, the monitoring stage, info; p=none without it 0, warning); no usable record 0 (critical)."},
}

func authRule(id string) AuthRule {
	for _, r := range AuthRules {
		if r.ID == id {
			return r
		}
	}
	panic("grader: unknown rule " + id)
}

// tally accumulates the authentication dimension.
type tally struct{ score Score }

func (t *tally) award(id string, points int) {
	w := authRule(id).Weight
	t.score.Score += max(0, min(points, w))
	t.score.Max += w
}

// readiness scores the authentication dimension from what dnscheck found.
func (b *builder) readiness(dr dnscheck.Result) Score {
	rules := map[string]dnscheck.RuleScore{}
	for _, r := range dr.Rules {
		rules[r.Rule] = r
	}
	full := func(id string) bool { r := rules[id]; return r.Judged && r.Points >= r.Weight }
	scaled := func(id string, weight int) int {
		r := rules[id]
		if r.Weight == 0 {
			return 0
		}
		return (r.Points*weight + r.Weight/2) / r.Weight
	}
	t := tally{}

	// SPF.
	w := authRule(RuleReadySPF).Weight
	switch {
	case !rules[dnscheck.RuleSPFRecord].Judged || !rules[dnscheck.RuleSPFAll].Judged && full(dnscheck.RuleSPFRecord):
		b.find(SeverityWarning, DimAuthentication, "SPF readiness could not be judged: the DNS lookup failed")
	case !full(dnscheck.RuleSPFRecord):
		t.award(RuleReadySPF, 0)
		b.find(SeverityCritical, DimAuthentication, "SPF is not ready: the domain publishes no single valid SPF record, so receivers cannot authenticate its senders")
	case rules[dnscheck.RuleSPFLimits].Judged && !full(dnscheck.RuleSPFLimits):
		t.award(RuleReadySPF, 0)
		b.find(SeverityCritical, DimAuthentication, "SPF is not ready: the record exceeds the RFC 7208 lookup limits or includes a domain without a record, so evaluating it ends in permerror")
	default:
		p := scaled(dnscheck.RuleSPFAll, w)
		t.award(RuleReadySPF, p)
		if rules[dnscheck.RuleSPFAll].Points == dnscheck.MonitoringSPFAllPoints {
			// ~all: the monitoring stage domain setup advises, not a fault.
			b.find(SeverityInfo, DimAuthentication, fmt.Sprintf("SPF is at the monitoring stage (~all, %d of %d readiness points): the next stage is -all, once the DMARC reports show every sender of yours passing", p, w))
		} else if p < w {
			sev := SeverityWarning
			if p == 0 {
				sev = SeverityCritical
			}
			b.find(sev, DimAuthentication, fmt.Sprintf("SPF is published but not strict (%d of %d readiness points): end the record with -all so unauthorized senders fail", p, w))
			b.recommend(fmt.Sprintf("End the SPF record of %s with -all once every sending source is listed, so mail from unauthorized IPs fails SPF.", b.res.Domain))
		}
	}

	// DKIM.
	w = authRule(RuleReadyDKIM).Weight
	if r := rules[dnscheck.RuleDKIM]; !r.Judged {
		b.find(SeverityWarning, DimAuthentication, "DKIM readiness could not be judged: the key lookups failed")
	} else {
		p := scaled(dnscheck.RuleDKIM, w)
		t.award(RuleReadyDKIM, p)
		switch {
		case p == 0:
			b.find(SeverityCritical, DimAuthentication, "DKIM is not ready: no usable DKIM key was found for the checked selectors, so mail cannot carry a verifiable signature")
		case p < w:
			b.find(SeverityWarning, DimAuthentication, fmt.Sprintf("DKIM is published with a weak key (%d of %d readiness points)", p, w))
		}
	}

	// DMARC.
	w = authRule(RuleReadyDMARC).Weight
	switch {
	case !rules[dnscheck.RuleDMARCRecord].Judged:
		b.find(SeverityWarning, DimAuthentication, "DMARC readiness could not be judged: the DNS lookup failed")
	case !full(dnscheck.RuleDMARCRecord):
		t.award(RuleReadyDMARC, 0)
		b.find(SeverityCritical, DimAuthentication, "DMARC is not ready: no usable DMARC record, so receivers have no policy for mail that fails authentication")
	default:
		p := scaled(dnscheck.RuleDMARCPolicy, w)
		t.award(RuleReadyDMARC, p)
		switch {
		case dr.DMARCPolicy == "none" && full(dnscheck.RuleDMARCReports):
			// p=none with reports: the monitoring stage, not a fault.
			b.find(SeverityInfo, DimAuthentication, fmt.Sprintf("DMARC is at the monitoring stage (p=none with reports, %d of %d readiness points): the next stage is p=quarantine, then p=reject, once the reports show only your own mail passing", p, w))
		case p == 0:
			b.find(SeverityWarning, DimAuthentication, "DMARC is published but neither enforcing nor reporting (p=none without rua=): spoofed mail is still delivered and nobody sees it")
		case p < w:
			b.find(SeverityInfo, DimAuthentication, fmt.Sprintf("DMARC is enforcing but not at full strength (%d of %d readiness points): p=reject protects best", p, w))
		}
	}
	return t.score
}

// authOutcome is what authenticate learned.
type authOutcome struct {
	results  AuthResults
	spfErr   error
	spfExp   string
	dkimNote string // why there is no DKIM result, when there is none
	dmarc    dmarc.Result
	dmarcErr error
}

// authenticate runs SPF, DKIM and DMARC for a submission with a sending
// IP and HELO name.
func authenticate(ctx context.Context, r Resolver, in input, s Submission) *authOutcome {
	out := &authOutcome{results: AuthResults{DKIM: []DKIMResult{}}}

	// SPF and DKIM are independent; DMARC needs both.
	done := make(chan struct{})
	go func() {
		defer close(done)
		var res spf.Result
		if in.mailFrom != "" {
			out.results.SPF.Domain = in.mailFrom[strings.LastIndexByte(in.mailFrom, '@')+1:]
			res, out.spfExp, out.spfErr = spf.CheckMailFrom(ctx, r, in.ip, in.mailFrom, in.helo)
		} else {
			out.results.SPF.Domain = in.helo
			res, out.spfExp, out.spfErr = spf.CheckHelo(ctx, r, in.ip, in.helo)
		}
		out.results.SPF.Domain = strings.ToLower(strings.TrimSuffix(out.results.SPF.Domain, "."))
		out.results.SPF.Result = string(res)
	}()
	out.results.DKIM, out.dkimNote = verifyDKIM(ctx, r, s.Raw)
	<-done

	dk := make([]dmarc.DKIMResult, len(out.results.DKIM))
	for i, d := range out.results.DKIM {
		dk[i] = dmarc.DKIMResult{Result: d.Result, Domain: d.Domain, Selector: d.Selector}
	}
	out.dmarc, out.dmarcErr = dmarc.Evaluate(ctx, r, in.domain,
		dmarc.SPFResult{Result: spf.Result(out.results.SPF.Result), Domain: out.results.SPF.Domain}, dk)
	out.results.DMARC = DMARCResult{
		Result:      string(out.dmarc.Result),
		Policy:      string(out.dmarc.Policy),
		SPFAligned:  out.dmarc.SPFAligned,
		DKIMAligned: out.dmarc.DKIMAligned,
	}
	return out
}

// sigInfo is the d= and s= of one DKIM-Signature.
type sigInfo struct{ domain, selector string }

// signaturesOf returns the DKIM-Signature fields of raw, in order.
func signaturesOf(raw []byte) []sigInfo {
	if len(raw) == 0 {
		return nil
	}
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	var out []sigInfo
	for _, v := range m.Header["Dkim-Signature"] {
		var si sigInfo
		for _, tag := range strings.Split(v, ";") {
			k, val, ok := strings.Cut(tag, "=")
			if !ok {
				continue
			}
			val = strings.Join(strings.Fields(val), "")
			switch strings.TrimSpace(k) {
			case "d":
				si.domain = strings.ToLower(val)
			case "s":
				si.selector = val
			}
		}
		out = append(out, si)
	}
	return out
}

// maxSignatures bounds the signatures verified per message.
const maxSignatures = 5

// verifyDKIM verifies the signatures of raw and names each result as RFC
// 8601 does. Without raw, or without a signature, it returns no result
// and a note saying why.
func verifyDKIM(ctx context.Context, r Resolver, raw []byte) ([]DKIMResult, string) {
	if len(raw) == 0 {
		return []DKIMResult{}, "no raw message was submitted, so there is no DKIM signature to verify: submit the complete message (raw) to check DKIM"
	}
	sigs := signaturesOf(raw)
	if len(sigs) == 0 {
		return []DKIMResult{}, "the message carries no DKIM-Signature header field"
	}
	if len(sigs) > maxSignatures {
		sigs = sigs[:maxSignatures]
	}
	opts := &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) {
			txts, err := r.LookupTXT(ctx, strings.TrimSuffix(name, "."))
			if err != nil && (dns.IsTemporary(err) || ctx.Err() != nil) {
				// go-msgauth reads only a temporary net.Error as temperror.
				return nil, &net.DNSError{Err: err.Error(), Name: name, IsTemporary: true}
			}
			return txts, err
		},
		MaxVerifications: maxSignatures,
	}
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(raw), opts)
	if err != nil && !errors.Is(err, dkim.ErrTooManySignatures) && len(verifs) == 0 {
		out := make([]DKIMResult, len(sigs))
		for i, s := range sigs {
			out[i] = DKIMResult{Result: "permerror", Domain: s.domain, Selector: s.selector}
		}
		return out, fmt.Sprintf("the DKIM signatures could not be verified: %v", err)
	}
	out := make([]DKIMResult, 0, len(verifs))
	for i, v := range verifs {
		d := DKIMResult{Domain: strings.ToLower(v.Domain)}
		if i < len(sigs) {
			d.Selector = sigs[i].selector
			if d.Domain == "" {
				d.Domain = sigs[i].domain
			}
		}
		switch {
		case v.Err == nil:
			d.Result = "pass"
		case dkim.IsTempFail(v.Err):
			d.Result = "temperror"
		case dkim.IsPermFail(v.Err):
			d.Result = "permerror"
		default:
			d.Result = "fail"
		}
		out = append(out, d)
	}
	return out, ""
}

// scoreAuth scores the authentication dimension of a submission from the
// SPF, DKIM and DMARC outcomes.
func (b *builder) scoreAuth(o *authOutcome) Score {
	t := tally{}
	ar := o.results

	// SPF.
	what := fmt.Sprintf("SPF for %s is %s", ar.SPF.Domain, ar.SPF.Result)
	if o.spfErr != nil {
		what += fmt.Sprintf(" (%v)", o.spfErr)
	}
	switch spf.Result(ar.SPF.Result) {
	case spf.Pass:
		t.award(RuleAuthSPF, 25)
		b.find(SeverityInfo, DimAuthentication, what)
	case spf.SoftFail:
		t.award(RuleAuthSPF, 5)
		b.find(SeverityWarning, DimAuthentication, what+": the sending IP is not authorized by the SPF record")
	case spf.Fail:
		t.award(RuleAuthSPF, 0)
		if o.spfExp != "" {
			what += ": " + o.spfExp
		}
		b.find(SeverityCritical, DimAuthentication, what+": the sending IP is not authorized by the SPF record")
		b.recommend(fmt.Sprintf("Authorize the sending IP in the SPF record of %s (e.g. add ip4:/ip6: or include: for your sending service before the all term).", ar.SPF.Domain))
	case spf.PermError:
		t.award(RuleAuthSPF, 0)
		b.find(SeverityCritical, DimAuthentication, what+": the published SPF record is broken")
	case spf.TempError:
		b.find(SeverityWarning, DimAuthentication, what+": not scored, try again later")
	default: // none, neutral
		t.award(RuleAuthSPF, 0)
		b.find(SeverityWarning, DimAuthentication, what+": the sending IP is not authorized")
		b.recommend(fmt.Sprintf("Publish an SPF record for %s that authorizes the sending IP and ends in -all.", ar.SPF.Domain))
	}

	// DKIM.
	var pass, temp bool
	for _, d := range ar.DKIM {
		msg := fmt.Sprintf("DKIM signature d=%s s=%s: %s", d.Domain, d.Selector, d.Result)
		sev := SeverityInfo
		switch d.Result {
		case "pass":
			pass = true
		case "temperror":
			temp = true
			sev = SeverityWarning
		default:
			sev = SeverityCritical
		}
		b.find(sev, DimAuthentication, msg)
	}
	switch {
	case pass:
		t.award(RuleAuthDKIM, 25)
	case len(ar.DKIM) == 0:
		t.award(RuleAuthDKIM, 0)
		b.find(SeverityWarning, DimAuthentication, "DKIM: "+o.dkimNote)
		if o.dkimNote != "" && !strings.HasPrefix(o.dkimNote, "no raw") {
			b.recommend("Sign outgoing mail with DKIM (relaxed/relaxed, SHA-256) using a key published at <selector>._domainkey." + b.res.Domain + ".")
		}
	case temp:
		b.find(SeverityWarning, DimAuthentication, "DKIM verification hit a temporary DNS failure: not scored, try again later")
	default:
		t.award(RuleAuthDKIM, 0)
		if o.dkimNote != "" {
			b.find(SeverityCritical, DimAuthentication, "DKIM: "+o.dkimNote)
		}
		b.recommend("Make sure the DKIM signature verifies: the public key at <selector>._domainkey.<d=> must match the signing key, and the message must not be altered after signing.")
	}

	// DMARC.
	dm := ar.DMARC
	what = fmt.Sprintf("DMARC for %s is %s (policy %s)", b.res.Domain, dm.Result, dm.Policy)
	if o.dmarcErr != nil {
		what += fmt.Sprintf(" (%v)", o.dmarcErr)
	}
	switch dmarc.Status(dm.Result) {
	case dmarc.Pass:
		t.award(RuleAuthDMARC, 25)
		b.find(SeverityInfo, DimAuthentication, what)
	case dmarc.Fail:
		t.award(RuleAuthDMARC, 0)
		sev := SeverityCritical
		b.find(sev, DimAuthentication, what+": neither SPF nor DKIM passed for a domain aligned with the From domain")
	case dmarc.TempError:
		b.find(SeverityWarning, DimAuthentication, what+": not scored, try again later")
	case dmarc.PermError:
		t.award(RuleAuthDMARC, 0)
		b.find(SeverityCritical, DimAuthentication, what+": the published DMARC record is unusable")
	default:
		t.award(RuleAuthDMARC, 0)
		b.find(SeverityWarning, DimAuthentication, what+": no DMARC policy applies to the From domain")
		org := o.dmarc.OrgDomain
		if org == "" {
			org = b.res.Domain
		}
		b.recommend(fmt.Sprintf("Publish a DMARC record: TXT _dmarc.%s \"v=DMARC1; p=quarantine; rua=mailto:dmarc-reports@%s\".", org, org))
	}

	// Alignment.
	switch {
	case dm.SPFAligned && dm.DKIMAligned:
		t.award(RuleAuthAlignment, 25)
		b.find(SeverityInfo, DimAuthentication, "SPF and DKIM both pass aligned with the From domain")
	case dm.DKIMAligned:
		t.award(RuleAuthAlignment, 20)
		b.find(SeverityInfo, DimAuthentication, "DKIM passes aligned with the From domain; SPF does not align")
	case dm.SPFAligned:
		t.award(RuleAuthAlignment, 12)
		b.find(SeverityWarning, DimAuthentication, "only SPF passes aligned with the From domain: without an aligned DKIM signature, DMARC fails when the mail is forwarded")
		b.recommend("Sign with DKIM using d=" + b.res.Domain + " (or its organizational domain) so DMARC survives forwarding.")
	default:
		t.award(RuleAuthAlignment, 0)
		b.find(SeverityCritical, DimAuthentication, "neither SPF nor DKIM passes for a domain aligned with the From domain "+b.res.Domain)
		b.recommend("Align the authenticated domains with the From domain: use a MAIL FROM (return-path) domain under " + b.res.Domain + " and sign DKIM with d=" + b.res.Domain + ".")
	}
	return t.score
}
