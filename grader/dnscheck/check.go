package dnscheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/idna"
)

// Default lists and limits.
var (
	DefaultSelectors        = []string{"default", "google", "dkim", "selector1"}
	DefaultIPBlocklists     = []string{"zen.spamhaus.org", "bl.spamcop.net", "b.barracudacentral.org"}
	DefaultDomainBlocklists = []string{"dbl.spamhaus.org", "multi.uribl.com"}
)

// DefaultTimeout bounds a whole check when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// ErrInvalidInput: the domain, IP or HELO name cannot be checked. It is
// the only kind of error Check returns.
var ErrInvalidInput = errors.New("dnscheck: invalid input")

// Options configure Check. Zero values take the defaults above.
type Options struct {
	// Resolver asks the DNS; required.
	Resolver Resolver
	// Selectors are the DKIM selectors to look for (DefaultSelectors).
	Selectors []string
	// IPBlocklists and DomainBlocklists are DNSBL zones
	// (DefaultIPBlocklists, DefaultDomainBlocklists).
	IPBlocklists, DomainBlocklists []string
	// Timeout bounds the whole check (DefaultTimeout).
	Timeout time.Duration
}

// Input is what to check: a domain, and optionally the IP address mail is
// sent from and the HELO name it announces.
type Input struct {
	Domain   string
	SenderIP net.IP
	HELO     string
}

// Finding is one observation. Category is the rule ID it belongs to.
type Finding struct {
	Severity string `json:"severity"`
	Category string `json:"category"`
	Message  string `json:"message"`
}

// Score is the points awarded in one dimension out of the points possible.
type Score struct {
	Score int `json:"score"`
	Max   int `json:"max"`
}

// KeyInfo describes one DKIM key record found.
type KeyInfo struct {
	Selector string `json:"selector"`
	Type     string `json:"type"` // "rsa", "ed25519", or what k= says
	Bits     int    `json:"bits"` // RSA modulus size; 256 for ed25519; 0 when unknown
	Revoked  bool   `json:"revoked,omitempty"`
	Trusted  bool   `json:"trusted"` // false when a wildcard TXT gives the same answer
	Problem  string `json:"problem,omitempty"`
}

// RuleScore is the outcome of one rule of Rules.
type RuleScore struct {
	Rule   string `json:"rule"`
	Points int    `json:"points"`
	Weight int    `json:"weight"`
	// Judged is false when the rule does not apply or could not be
	// checked; it then counts toward neither Score nor Max.
	Judged bool `json:"judged"`
}

// Result is the outcome of Check.
type Result struct {
	DNSHealth       Score       `json:"dns_health"`
	Reputation      Score       `json:"reputation"`
	Rules           []RuleScore `json:"rules"`
	Findings        []Finding   `json:"findings"`
	Recommendations []string    `json:"recommendations"`
	DKIMKeys        []KeyInfo   `json:"dkim_keys"`
	// What was found: the SPF record, the DMARC record (and the domain it
	// was found at), the MX hosts and the PTR names of the sending IP.
	SPFRecord         string   `json:"spf_record,omitempty"`
	DMARCRecord       string   `json:"dmarc_record,omitempty"`
	DMARCRecordDomain string   `json:"dmarc_record_domain,omitempty"`
	DMARCPolicy       string   `json:"dmarc_policy,omitempty"`
	MXHosts           []string `json:"mx_hosts,omitempty"`
	PTRNames          []string `json:"ptr_names,omitempty"`
}

// part collects what one check observed; each check goroutine owns one.
type part struct {
	scores   map[string]RuleScore
	findings []Finding
	recs     []string
}

func (p *part) score(id string, points int) {
	if p.scores == nil {
		p.scores = map[string]RuleScore{}
	}
	w := rule(id).Weight
	points = max(0, min(points, w))
	p.scores[id] = RuleScore{Rule: id, Points: points, Weight: w, Judged: true}
}

// unchecked records that a rule could not be judged because of a DNS
// failure: a warning, and no score.
func (p *part) unchecked(id, what string, err error) {
	p.find(SeverityWarning, id, fmt.Sprintf("%s could not be checked: the DNS lookup failed (%v); try again later", what, err))
}

func (p *part) find(sev, id, msg string) {
	p.findings = append(p.findings, Finding{Severity: sev, Category: id, Message: msg})
}

func (p *part) recommend(s string) { p.recs = append(p.recs, s) }

// checker holds one run.
type checker struct {
	r       Resolver
	opts    Options
	in      Input
	domain  string
	senders bool
}

// Check runs the DNS-health and reputation checks for in. Lookups run in
// parallel under one deadline (Options.Timeout). DNS failures become
// findings; the error is only for unusable input (ErrInvalidInput).
func Check(ctx context.Context, opts Options, in Input) (Result, error) {
	if opts.Resolver == nil {
		return Result{}, fmt.Errorf("%w: no resolver", ErrInvalidInput)
	}
	domain, err := normalizeDomain(in.Domain)
	if err != nil {
		return Result{}, err
	}
	if in.SenderIP != nil && in.SenderIP.To16() == nil {
		return Result{}, fmt.Errorf("%w: sender IP %v", ErrInvalidInput, in.SenderIP)
	}
	if in.HELO != "" {
		if in.HELO, err = normalizeDomain(in.HELO); err != nil {
			return Result{}, fmt.Errorf("%w (HELO name)", err)
		}
	}
	if len(opts.Selectors) == 0 {
		opts.Selectors = DefaultSelectors
	}
	if opts.IPBlocklists == nil {
		opts.IPBlocklists = DefaultIPBlocklists
	}
	if opts.DomainBlocklists == nil {
		opts.DomainBlocklists = DefaultDomainBlocklists
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	c := &checker{r: opts.Resolver, opts: opts, in: in, domain: domain}
	var res Result
	var (
		mx, spfP, dmarcP, dkimP, stsP, rptP, bimiP, ipbl, dombl, rdns part
		bimiRec                                                       string
		bimiErr                                                       error
		policy                                                        string
	)
	parallel(
		func() { c.checkMX(ctx, &mx, &res) },
		func() { c.checkSPF(ctx, &spfP, &res) },
		func() { policy = c.checkDMARC(ctx, &dmarcP, &res) },
		func() { c.checkDKIM(ctx, &dkimP, &res) },
		func() { c.checkMTASTS(ctx, &stsP) },
		func() { c.checkTLSRPT(ctx, &rptP) },
		func() { bimiRec, bimiErr = c.lookupBIMI(ctx) },
		func() { c.checkIPBlocklists(ctx, &ipbl) },
		func() { c.checkDomainBlocklists(ctx, &dombl) },
		func() { c.checkSenderRDNS(ctx, &rdns, &res) },
	)
	c.judgeBIMI(&bimiP, bimiRec, bimiErr, policy)

	scores := map[string]RuleScore{}
	for _, p := range []*part{&mx, &spfP, &dmarcP, &dkimP, &stsP, &rptP, &bimiP, &ipbl, &dombl, &rdns} {
		for id, s := range p.scores {
			scores[id] = s
		}
		res.Findings = append(res.Findings, p.findings...)
		res.Recommendations = append(res.Recommendations, p.recs...)
	}
	for _, r := range Rules {
		s, ok := scores[r.ID]
		if !ok {
			s = RuleScore{Rule: r.ID, Weight: r.Weight}
		}
		res.Rules = append(res.Rules, s)
		if !s.Judged {
			continue
		}
		dim := &res.DNSHealth
		if r.Dimension == DimensionReputation {
			dim = &res.Reputation
		}
		dim.Score += s.Points
		dim.Max += s.Weight
	}
	if res.Findings == nil {
		res.Findings = []Finding{}
	}
	if res.Recommendations == nil {
		res.Recommendations = []string{}
	}
	if res.DKIMKeys == nil {
		res.DKIMKeys = []KeyInfo{}
	}
	return res, nil
}

// parallel runs fns concurrently and waits for all of them.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Go(f)
	}
	wg.Wait()
}

// normalizeDomain converts an IDN to A-labels, lower-cases name, drops
// one final dot and checks that it can go into a query: at least two
// labels of letters, digits, '-' and '_'.
func normalizeDomain(name string) (string, error) {
	d := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
	if a, err := idna.Lookup.ToASCII(d); err == nil {
		d = a
	}
	if d == "" || len(d) > 253 || !strings.Contains(d, ".") {
		return "", fmt.Errorf("%w: domain %q", ErrInvalidInput, name)
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("%w: domain %q", ErrInvalidInput, name)
		}
		for _, ch := range label {
			if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
				return "", fmt.Errorf("%w: domain %q", ErrInvalidInput, name)
			}
		}
	}
	return d, nil
}
