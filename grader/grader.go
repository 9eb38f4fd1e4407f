// Package grader is the deliverability grader's scoring core: it combines
// the DNS-health and reputation checks of grader/dnscheck, the content and
// spam rules of grader/content and its own authentication rules (SPF,
// DKIM, DMARC outcome and alignment, or their readiness) into one score
// from 0 to 100 and a letter grade. Every point comes from a rule in a
// table with a documented weight (see docs/grader.md); there is no opaque
// model.
package grader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"mime"
	"net"
	"net/mail"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/idna"

	"mailbolt/grader/content"
	"mailbolt/grader/dnscheck"
	"mailbolt/mta/dns"
)

// ErrInvalidInput is returned for a domain or submission that cannot be
// graded (the API answers 400 INVALID_INPUT), always as an *InputError
// that names the field at fault.
var ErrInvalidInput = errors.New("grader: invalid input")

// InputError is an ErrInvalidInput about one field of the request: Field
// names it as the API does ("from", "to[1]", "selectors[0]",
// "headers.X-Tag"), Reason says what is wrong with it.
type InputError struct {
	Field, Reason string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrInvalidInput, e.Field, e.Reason)
}

// Is makes every InputError an ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

func invalid(field, reason string) error { return &InputError{Field: field, Reason: reason} }

// Score is the points awarded in one dimension out of the points possible.
type Score struct {
	Score int `json:"score"`
	Max   int `json:"max"`
}

// Finding is one observation. Category is the dimension it belongs to.
type Finding struct {
	Severity string `json:"severity"` // info, warning, critical
	Category string `json:"category"`
	Message  string `json:"message"`
}

// SPFResult is the SPF outcome of a submission: the RFC 7208 result word
// and the identity (domain) that was checked.
type SPFResult struct {
	Result string `json:"result"`
	Domain string `json:"domain"`
}

// DKIMResult is the verification outcome of one DKIM-Signature.
type DKIMResult struct {
	Result   string `json:"result"`
	Domain   string `json:"domain"`
	Selector string `json:"selector"`
}

// DMARCResult is the DMARC outcome of a submission.
type DMARCResult struct {
	Result      string `json:"result"`
	Policy      string `json:"policy"`
	SPFAligned  bool   `json:"spf_aligned"`
	DKIMAligned bool   `json:"dkim_aligned"`
}

// AuthResults are the authentication results of a submission.
type AuthResults struct {
	SPF   SPFResult    `json:"spf"`
	DKIM  []DKIMResult `json:"dkim"`
	DMARC DMARCResult  `json:"dmarc"`
}

// Result is a graded domain or email.
type Result struct {
	Domain                string           `json:"domain"`
	Score                 int              `json:"score"`           // 0–100
	Grade                 string           `json:"grade"`           // A ≥ 90, B ≥ 80, C ≥ 70, D ≥ 60, else F
	Breakdown             map[string]Score `json:"breakdown"`       // keys: dns_health, authentication, spam_likelihood, content_quality, reputation — always all five
	Findings              []Finding        `json:"findings"`        // never nil
	Recommendations       []string         `json:"recommendations"` // never nil
	AuthenticationResults *AuthResults     `json:"authentication_results,omitempty"`
}

// Resolver is the DNS the grader asks: what the DNS-health checks need
// (dnscheck.Resolver), which covers the SPF, DKIM key and DMARC lookups
// of a submission too. *dns.Resolver (mta/dns) implements it.
type Resolver = dnscheck.Resolver

var _ Resolver = (*dns.Resolver)(nil)

// Config configures Check and Submit.
type Config struct {
	Resolver  Resolver // required
	Selectors []string // default DKIM selectors (GRADER_DKIM_SELECTORS); dnscheck.DefaultSelectors when nil
	// ExtraSelectors are tried in addition to the requested or default
	// selectors: the caller's own selectors for the checked name (app
	// passes those of the sending domains this server holds), so a domain
	// it set up is not graded as having no DKIM key.
	ExtraSelectors                 []string
	IPBlocklists, DomainBlocklists []string // nil: dnscheck defaults
	Timeout                        time.Duration
}

// DefaultConfig is the grader's documented configuration (docs/grader.md):
// dnscheck's default DKIM selectors and blocklists, and a whole check
// bounded at dnscheck.DefaultTimeout. Resolver must still be set.
func DefaultConfig() Config {
	return Config{Timeout: dnscheck.DefaultTimeout}
}

// Submission is a full email to grade.
type Submission struct {
	From      string
	To        []string
	Subject   string
	BodyText  string
	Headers   map[string]string
	Selectors []string
	SenderIP  string
	HELO      string
	MailFrom  string
	Raw       []byte // optional complete RFC 5322 message (DKIM is verified on these exact bytes)
}

// Dimension names: the keys of Result.Breakdown and the categories of
// findings.
const (
	DimDNSHealth      = "dns_health"
	DimAuthentication = "authentication"
	DimSpamLikelihood = "spam_likelihood"
	DimContentQuality = "content_quality"
	DimReputation     = "reputation"
)

// Severities of a Finding.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// DimensionWeight is one dimension's share of the overall score.
type DimensionWeight struct {
	Dimension string
	Weight    int
}

// DimensionWeights is the weighting of the overall score. The score is
// 100 × Σ weight·(score/max) / Σ weight over the dimensions that were
// judged (Max > 0), rounded to the nearest integer: dimensions that do not
// apply (content for a domain-only check) are left out and the weights of
// the others renormalised.
var DimensionWeights = []DimensionWeight{
	{DimDNSHealth, 25},
	{DimAuthentication, 30},
	{DimReputation, 20},
	{DimSpamLikelihood, 15},
	{DimContentQuality, 10},
}

// GradeBand is the lowest score that earns a letter.
type GradeBand struct {
	Min    int
	Letter string
}

// GradeBands map a score to a letter, best first; below the last, "F".
var GradeBands = []GradeBand{{90, "A"}, {80, "B"}, {70, "C"}, {60, "D"}}

// Grade maps a 0–100 score to a letter.
func Grade(score int) string {
	for _, b := range GradeBands {
		if score >= b.Min {
			return b.Letter
		}
	}
	return "F"
}

// overall is the weighted average of the judged dimensions, 0–100.
func overall(b map[string]Score) int {
	var sum, weights float64
	for _, d := range DimensionWeights {
		s := b[d.Dimension]
		if s.Max <= 0 {
			continue
		}
		frac := math.Max(0, math.Min(1, float64(s.Score)/float64(s.Max)))
		sum += float64(d.Weight) * frac
		weights += float64(d.Weight)
	}
	if weights == 0 {
		return 0
	}
	return int(math.Round(100 * sum / weights))
}

// Check grades a domain from DNS alone: content_quality is {0,0} with an info finding.
func Check(ctx context.Context, cfg Config, domain string, selectors []string) (Result, error) {
	d, err := normalizeDomain(domain, "domain", false)
	if err != nil {
		return Result{}, err
	}
	if err := checkSelectors(selectors); err != nil {
		return Result{}, err
	}
	if cfg.Resolver == nil {
		return Result{}, errors.New("grader: no resolver configured")
	}
	ctx, cancel := withTimeout(ctx, cfg)
	defer cancel()

	dr, err := dnscheck.Check(ctx, dnsOptions(cfg, selectors), dnscheck.Input{Domain: d})
	if err != nil {
		return Result{}, invalid("domain", "cannot be checked: "+err.Error())
	}
	b := newBuilder(d)
	b.addDNS(dr)
	b.breakdown[DimAuthentication] = b.readiness(dr)
	b.find(SeverityInfo, DimContentQuality, "content quality was not judged: a domain-only check has no message (submit an email to grade its content)")
	b.find(SeverityInfo, DimSpamLikelihood, "spam likelihood was not judged: a domain-only check has no message (submit an email to grade it)")
	return b.result(), nil
}

// Submit grades a full email. With SenderIP and HELO both given it runs real SPF (on MailFrom, falling back to the HELO identity), DKIM verification (go-msgauth, on Raw; without Raw there is no signature to verify — say so in a finding) and DMARC (policy discovery with org-domain fallback, relaxed/strict alignment); without them it scores DNS readiness only and adds a finding saying so.
func Submit(ctx context.Context, cfg Config, s Submission) (Result, error) {
	s = FillFromRaw(s)
	in, err := validate(s)
	if err != nil {
		return Result{}, err
	}
	if cfg.Resolver == nil {
		return Result{}, errors.New("grader: no resolver configured")
	}
	ctx, cancel := withTimeout(ctx, cfg)
	defer cancel()

	selectors := selectorsFor(cfg, s.Selectors)
	// The selectors of the message's own signatures for the From domain
	// are checked too.
	for _, sig := range signaturesOf(s.Raw) {
		if strings.EqualFold(strings.TrimSuffix(sig.domain, "."), in.domain) && validSelector(sig.selector) && !containsFold(selectors, sig.selector) {
			selectors = append(selectors, sig.selector)
		}
	}

	var (
		dr    dnscheck.Result
		dErr  error
		auth  *authOutcome
		cr    content.Result
		wg    sync.WaitGroup
		dnsIn = dnscheck.Input{Domain: in.domain, SenderIP: in.ip, HELO: in.helo}
	)
	wg.Go(func() { dr, dErr = dnscheck.Check(ctx, dnsOptions(cfg, selectors), dnsIn) })
	if in.full {
		wg.Go(func() { auth = authenticate(ctx, cfg.Resolver, in, s) })
	}
	wg.Go(func() { cr = content.Evaluate(contentInput(s)) })
	wg.Wait()
	if dErr != nil {
		// validate refuses all that dnscheck does (the domains, the IP),
		// so this is a disagreement between the two, not the caller's
		// input: no field to name.
		return Result{}, fmt.Errorf("grader: the DNS check refused a validated submission: %w", dErr)
	}

	b := newBuilder(in.domain)
	b.addDNS(dr)
	b.addContent(cr)
	if in.full {
		b.breakdown[DimAuthentication] = b.scoreAuth(auth)
		ar := auth.results
		b.res.AuthenticationResults = &ar
	} else {
		b.find(SeverityInfo, DimAuthentication, "authentication was scored on DNS readiness only: give sender_ip and helo_hostname to run real SPF, DKIM and DMARC checks on this email")
		b.breakdown[DimAuthentication] = b.readiness(dr)
	}
	return b.result(), nil
}

// builder assembles a Result.
type builder struct {
	res       Result
	breakdown map[string]Score
	recs      []string
	seenRec   map[string]bool
}

func newBuilder(domain string) *builder {
	b := &builder{
		res:       Result{Domain: domain, Findings: []Finding{}, Recommendations: []string{}},
		breakdown: map[string]Score{},
		seenRec:   map[string]bool{},
	}
	for _, d := range DimensionWeights {
		b.breakdown[d.Dimension] = Score{}
	}
	return b
}

func (b *builder) find(sev, dim, msg string) {
	b.res.Findings = append(b.res.Findings, Finding{Severity: sev, Category: dim, Message: msg})
}

func (b *builder) recommend(r string) {
	r = strings.TrimSpace(r)
	if r == "" || b.seenRec[r] {
		return
	}
	b.seenRec[r] = true
	b.res.Recommendations = append(b.res.Recommendations, r)
}

// addDNS takes dns_health and reputation from a dnscheck result, with its
// findings filed under their rule's dimension.
func (b *builder) addDNS(dr dnscheck.Result) {
	b.breakdown[DimDNSHealth] = Score(dr.DNSHealth)
	b.breakdown[DimReputation] = Score(dr.Reputation)
	dims := map[string]string{}
	for _, r := range dnscheck.Rules {
		dims[r.ID] = r.Dimension
	}
	for _, f := range dr.Findings {
		dim := dims[f.Category]
		if dim == "" {
			dim = DimDNSHealth
		}
		b.find(f.Severity, dim, f.Message)
	}
	for _, r := range dr.Recommendations {
		b.recommend(r)
	}
	b.addStage(dr)
}

// addContent takes content_quality and spam_likelihood from a content
// result.
func (b *builder) addContent(cr content.Result) {
	b.breakdown[DimContentQuality] = Score{Score: cr.Content.Score, Max: cr.Content.Max}
	b.breakdown[DimSpamLikelihood] = Score{Score: cr.Spam.Score, Max: cr.Spam.Max}
	for _, f := range cr.Findings {
		dim := DimContentQuality
		if f.Category == content.DimSpam {
			dim = DimSpamLikelihood
		}
		msg := f.Message
		if strings.HasPrefix(msg, "not checked") {
			msg = f.Rule + " " + msg
		}
		b.find(f.Severity, dim, msg)
	}
	for _, r := range cr.Recommendations {
		b.recommend(r)
	}
}

func (b *builder) result() Result {
	b.res.Breakdown = b.breakdown
	b.res.Score = overall(b.breakdown)
	b.res.Grade = Grade(b.res.Score)
	return b.res
}

// selectorsFor is the DKIM selectors to look up: the requested ones, else
// the configured defaults, else dnscheck's; then cfg.ExtraSelectors not
// already among them. The result is a new slice.
func selectorsFor(cfg Config, requested []string) []string {
	base := requested
	if len(base) == 0 {
		base = cfg.Selectors
	}
	if len(base) == 0 {
		base = dnscheck.DefaultSelectors
	}
	out := append([]string{}, base...)
	for _, x := range cfg.ExtraSelectors {
		if validSelector(x) && !containsFold(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func dnsOptions(cfg Config, selectors []string) dnscheck.Options {
	return dnscheck.Options{
		Resolver:         cfg.Resolver,
		Selectors:        selectorsFor(cfg, selectors),
		IPBlocklists:     cfg.IPBlocklists,
		DomainBlocklists: cfg.DomainBlocklists,
		Timeout:          cfg.Timeout,
	}
}

func withTimeout(ctx context.Context, cfg Config) (context.Context, context.CancelFunc) {
	t := cfg.Timeout
	if t <= 0 {
		t = dnscheck.DefaultTimeout
	}
	return context.WithTimeout(ctx, t)
}

// input is a validated submission.
type input struct {
	domain   string // From domain, A-labels, lower case
	from     string // From address
	ip       net.IP
	helo     string
	mailFrom string // bare address, "" for the null reverse-path
	full     bool   // SenderIP and HELO both given
}

func validate(s Submission) (input, error) {
	var in input
	if strings.TrimSpace(s.From) == "" {
		return in, invalid("from", "is required")
	}
	if strings.ContainsAny(s.From, "\r\n") {
		return in, invalid("from", "must not contain CR or LF")
	}
	addr, err := mail.ParseAddress(s.From)
	if err != nil {
		return in, invalid("from", "is not a valid address: "+err.Error())
	}
	at := strings.LastIndexByte(addr.Address, '@')
	if at <= 0 {
		return in, invalid("from", "is not a valid address")
	}
	if in.domain, err = normalizeDomain(addr.Address[at+1:], "from", true); err != nil {
		return in, err
	}
	in.from = addr.Address
	for i, to := range s.To {
		if _, err := mail.ParseAddress(to); err != nil || strings.ContainsAny(to, "\r\n") {
			return in, invalid(fmt.Sprintf("to[%d]", i), "is not a valid address")
		}
	}
	if strings.ContainsAny(s.Subject, "\r\n") {
		return in, invalid("subject", "must not contain CR or LF")
	}
	for k, v := range s.Headers {
		if k == "" || strings.ContainsAny(k, "\r\n: ") || strings.ContainsAny(v, "\r\n") {
			return in, invalid("headers."+k, "must be a field name without ':' or white space, and neither name nor value may contain CR or LF")
		}
	}
	if err := checkSelectors(s.Selectors); err != nil {
		return in, err
	}
	if ip := strings.TrimSpace(s.SenderIP); ip != "" {
		if in.ip = net.ParseIP(ip); in.ip == nil {
			return in, invalid("sender_ip", fmt.Sprintf("%q is not an IP address", s.SenderIP))
		}
	}
	if h := strings.TrimSpace(s.HELO); h != "" {
		if in.helo, err = normalizeDomain(h, "helo_hostname", false); err != nil {
			return in, err
		}
	}
	if mf := strings.TrimSpace(s.MailFrom); mf != "" && mf != "<>" {
		a, err := mail.ParseAddress(mf)
		if err != nil || strings.LastIndexByte(a.Address, '@') <= 0 {
			return in, invalid("mail_from", fmt.Sprintf("%q is not a valid address", s.MailFrom))
		}
		d := a.Address[strings.LastIndexByte(a.Address, '@')+1:]
		if _, err := normalizeDomain(d, "mail_from", true); err != nil {
			return in, err
		}
		in.mailFrom = a.Address
	}
	in.full = in.ip != nil && in.helo != ""
	return in, nil
}

// NormalizeDomain is the form in which the grader checks a domain: A-labels,
// lower case, no final dot. It is ErrInvalidInput for a name it would
// refuse.
func NormalizeDomain(name string) (string, error) { return normalizeDomain(name, "domain", false) }

// SubmissionDomain is the From domain a submission is graded for, in the
// form of NormalizeDomain; ErrInvalidInput when the submission is invalid.
func SubmissionDomain(s Submission) (string, error) {
	in, err := validate(FillFromRaw(s))
	return in.domain, err
}

// FillFromRaw takes From, To and Subject from the header of s.Raw where
// they are not given, so a complete message is enough to grade: From and
// Subject as written (RFC 2047 words decoded), To as the addresses of the
// To field. A field the header lacks or that does not parse stays as it
// was; validate then judges what is there.
func FillFromRaw(s Submission) Submission {
	if len(s.Raw) == 0 || (s.From != "" && len(s.To) > 0 && s.Subject != "") {
		return s
	}
	m, err := mail.ReadMessage(bytes.NewReader(s.Raw))
	if err != nil {
		return s
	}
	var dec mime.WordDecoder
	decoded := func(v string) string {
		if d, err := dec.DecodeHeader(v); err == nil {
			return d
		}
		return v
	}
	if s.From == "" {
		s.From = strings.TrimSpace(decoded(m.Header.Get("From")))
	}
	if s.Subject == "" {
		s.Subject = strings.TrimSpace(decoded(m.Header.Get("Subject")))
	}
	if len(s.To) == 0 {
		if list, err := m.Header.AddressList("To"); err == nil {
			for _, a := range list {
				s.To = append(s.To, a.Address)
			}
		}
	}
	return s
}

// normalizeDomain converts an IDN to A-labels, lower-cases the name, drops
// one final dot and checks it is a host name of two labels or more. Its
// error names field, of which name is the domain part when inAddress,
// else the whole.
func normalizeDomain(name, field string, inAddress bool) (string, error) {
	bad, missing := invalid(field, fmt.Sprintf("%q is not a valid domain name", name)), invalid(field, "is required")
	if inAddress {
		bad = invalid(field, fmt.Sprintf("has the domain %q, which is not a valid domain name", name))
		missing = invalid(field, "has no domain")
	}
	d := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
	if d == "" {
		return "", missing
	}
	a, err := idna.Lookup.ToASCII(d)
	if err != nil {
		// Lookup rejects underscores, which some hosts carry; fall back to
		// the name as given, checked below.
		a = d
	}
	d = a
	if len(d) > 253 || !strings.Contains(d, ".") {
		return "", bad
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", bad
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", bad
			}
		}
	}
	if tld := d[strings.LastIndexByte(d, '.')+1:]; strings.Trim(tld, "0123456789") == "" {
		return "", bad // an IP address, not a domain
	}
	return d, nil
}

func validSelector(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i] | 0x20
			if !(c >= 'a' && c <= 'z' || label[i] >= '0' && label[i] <= '9' || label[i] == '-' || label[i] == '_') {
				return false
			}
		}
	}
	return true
}

func checkSelectors(sels []string) error {
	if len(sels) > 20 {
		return invalid("selectors", "must hold at most 20 selectors")
	}
	for i, s := range sels {
		if !validSelector(s) {
			return invalid(fmt.Sprintf("selectors[%d]", i), fmt.Sprintf("%q is not a valid DKIM selector", s))
		}
	}
	return nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func contentInput(s Submission) content.Input {
	var h map[string][]string
	if len(s.Headers) > 0 {
		h = make(map[string][]string, len(s.Headers))
		for k, v := range s.Headers {
			h[k] = []string{v}
		}
	}
	in := content.Input{From: s.From, Subject: s.Subject, Text: s.BodyText, Headers: h, Raw: s.Raw}
	return in
}
