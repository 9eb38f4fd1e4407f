package dmarc

import (
	"context"
	"errors"
	"testing"

	"mailbolt/grader/spf"
)

// TestAligned covers identifier alignment (§3.1).
func TestAligned(t *testing.T) {
	for _, tc := range []struct {
		mode       Alignment
		auth, from string
		want       bool
	}{
		{Relaxed, "example.com", "example.com", true},
		{Strict, "example.com", "example.com", true},
		{Strict, "EXAMPLE.com.", "example.COM", true},             // case, final dot
		{Relaxed, "mail.example.com", "example.com", true},        // subdomain of the From domain
		{Strict, "mail.example.com", "example.com", false},        //
		{Relaxed, "example.com", "news.example.com", true},        // From is the subdomain
		{Strict, "example.com", "news.example.com", false},        //
		{Relaxed, "a.example.com", "b.example.com", true},         // siblings
		{Strict, "a.example.com", "b.example.com", false},         //
		{Relaxed, "example.net", "example.com", false},            // different org
		{Relaxed, "example.com.evil.net", "example.com", false},   // different org
		{Relaxed, "examplecom", "example.com", false},             //
		{Relaxed, "a.example.co.uk", "b.example.co.uk", true},     // two-label suffix
		{Relaxed, "evil.co.uk", "example.co.uk", false},           //
		{Relaxed, "co.uk", "example.co.uk", false},                // a suffix is its own org
		{Relaxed, "alice.github.io", "bob.github.io", false},      // private section
		{Relaxed, "mail.xn--85x722f.xn--fiqs8s", "食狮.中国", true},   // IDN compared as A-labels
		{Strict, "xn--85x722f.xn--fiqs8s", "食狮.中国", true},         //
		{Relaxed, "", "example.com", false},                       // no identity
		{Relaxed, "example..com", "example.com", false},           // invalid
		{Alignment("x"), "mail.example.com", "example.com", true}, // unknown mode reads as relaxed
	} {
		if got := Aligned(tc.mode, tc.auth, tc.from); got != tc.want {
			t.Errorf("Aligned(%s, %q, %q) = %v, want %v", tc.mode, tc.auth, tc.from, got, tc.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	const (
		org = "_dmarc.example.com"
		sub = "_dmarc.news.example.com"
	)
	pass := func(d string) SPFResult { return SPFResult{spf.Pass, d} }
	sig := func(res, d string) []DKIMResult { return []DKIMResult{{res, d, "s1"}} }
	for _, tc := range []struct {
		name     string
		txt      map[string][]string
		fail     []string
		hosts    []string // nil: the resolver has no AddressResolver
		from     string
		spf      SPFResult
		dkim     []DKIMResult
		want     Status
		policy   Policy
		tag      string
		spfAl    bool
		dkimAl   bool
		err      error
		recordAt string
	}{
		// Alignment through Evaluate (§3.1, §4.2).
		{name: "SPF relaxed, subdomain MAIL FROM", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", spf: pass("bounce.example.com"),
			want: Pass, policy: PolicyReject, tag: "p", spfAl: true, recordAt: "example.com"},
		{name: "SPF strict, subdomain MAIL FROM", txt: map[string][]string{org: {"v=DMARC1; p=reject; aspf=s"}},
			from: "example.com", spf: pass("bounce.example.com"),
			want: Fail, policy: PolicyReject, tag: "p", recordAt: "example.com"},
		{name: "SPF strict, exact", txt: map[string][]string{org: {"v=DMARC1; p=reject; aspf=s"}},
			from: "example.com", spf: pass("Example.COM"),
			want: Pass, policy: PolicyReject, tag: "p", spfAl: true, recordAt: "example.com"},
		{name: "SPF pass for a different org", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", spf: pass("esp.example.net"),
			want: Fail, policy: PolicyReject, tag: "p", recordAt: "example.com"},
		{name: "SPF aligned but softfail", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", spf: SPFResult{spf.SoftFail, "example.com"},
			want: Fail, policy: PolicyReject, tag: "p", recordAt: "example.com"},
		{name: "DKIM relaxed, signed by the org for a subdomain From", txt: map[string][]string{org: {"v=DMARC1; p=quarantine"}},
			from: "news.example.com", dkim: sig("pass", "example.com"),
			want: Pass, policy: PolicyQuarantine, tag: "p", dkimAl: true, recordAt: "example.com"},
		{name: "DKIM strict, signed by the org for a subdomain From", txt: map[string][]string{org: {"v=DMARC1; p=quarantine; adkim=s"}},
			from: "news.example.com", dkim: sig("pass", "example.com"),
			want: Fail, policy: PolicyQuarantine, tag: "p", recordAt: "example.com"},
		{name: "DKIM strict, exact", txt: map[string][]string{org: {"v=DMARC1; p=quarantine; adkim=s"}},
			from: "news.example.com", dkim: sig("PASS", "news.example.com"),
			want: Pass, policy: PolicyQuarantine, tag: "p", dkimAl: true, recordAt: "example.com"},
		{name: "DKIM pass for a different org, aligned one fails", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", dkim: []DKIMResult{{"pass", "esp.example.net", "a"}, {"fail", "example.com", "b"}},
			want: Fail, policy: PolicyReject, tag: "p", recordAt: "example.com"},
		{name: "either one is enough", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", spf: pass("esp.example.net"), dkim: sig("pass", "mail.example.com"),
			want: Pass, policy: PolicyReject, tag: "p", dkimAl: true, recordAt: "example.com"},

		// Policy selection: p, sp (§6.3), np (RFC 9091).
		{name: "sp applies to a subdomain via the org record", txt: map[string][]string{org: {"v=DMARC1; p=reject; sp=quarantine"}},
			from: "news.example.com", spf: pass("other.net"),
			want: Fail, policy: PolicyQuarantine, tag: "sp", recordAt: "example.com"},
		{name: "sp absent: p applies to a subdomain", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "news.example.com",
			want: Fail, policy: PolicyReject, tag: "p", recordAt: "example.com"},
		{name: "sp ignored for the org domain itself", txt: map[string][]string{org: {"v=DMARC1; p=reject; sp=none"}},
			from: "example.com",
			want: Fail, policy: PolicyReject, tag: "p", recordAt: "example.com"},
		{name: "sp ignored for a subdomain's own record", txt: map[string][]string{org: {"v=DMARC1; p=reject; sp=reject"}, sub: {"v=DMARC1; p=none; sp=reject"}},
			from: "news.example.com",
			want: Fail, policy: PolicyNone, tag: "p", recordAt: "news.example.com"},
		{name: "np for a non-existent subdomain", txt: map[string][]string{org: {"v=DMARC1; p=none; sp=quarantine; np=reject"}}, hosts: []string{"example.com"},
			from: "ghost.example.com",
			want: Fail, policy: PolicyReject, tag: "np", recordAt: "example.com"},
		{name: "np not for an existing subdomain", txt: map[string][]string{org: {"v=DMARC1; p=none; sp=quarantine; np=reject"}}, hosts: []string{"news.example.com"},
			from: "news.example.com",
			want: Fail, policy: PolicyQuarantine, tag: "sp", recordAt: "example.com"},
		{name: "np unknowable without AddressResolver: sp", txt: map[string][]string{org: {"v=DMARC1; p=none; sp=quarantine; np=reject"}},
			from: "ghost.example.com",
			want: Fail, policy: PolicyQuarantine, tag: "sp", recordAt: "example.com"},
		{name: "np: failed address lookup counts as existing", txt: map[string][]string{org: {"v=DMARC1; p=none; np=reject"}}, hosts: []string{}, fail: []string{"ghost.example.com"},
			from: "ghost.example.com",
			want: Fail, policy: PolicyNone, tag: "p", recordAt: "example.com"},
		{name: "rua fallback: p=none", txt: map[string][]string{org: {"v=DMARC1; p=rejekt; rua=mailto:d@example.com"}},
			from: "example.com",
			want: Fail, policy: PolicyNone, tag: "p", recordAt: "example.com"},

		// No usable record.
		{name: "no record: none, alignment still shown", from: "example.com", spf: pass("mail.example.com"),
			want: None, policy: PolicyNone, spfAl: true},
		{name: "two records: none", txt: map[string][]string{org: {"v=DMARC1; p=reject", "v=DMARC1; p=none"}},
			from: "example.com", want: None, policy: PolicyNone, err: ErrMultipleRecords},
		{name: "invalid record: permerror, no policy", txt: map[string][]string{org: {"v=DMARC1; p=maybe"}},
			from: "example.com", want: PermError, policy: PolicyNone, err: ErrInvalidRecord},
		{name: "DNS failure: temperror", fail: []string{sub}, txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "news.example.com", dkim: sig("pass", "example.com"),
			want: TempError, policy: PolicyNone, dkimAl: true, err: ErrDNS},
		{name: "invalid From domain", from: "", want: None, policy: PolicyNone, err: ErrInvalidDomain},

		// A retry could pass: temperror.
		{name: "aligned SPF temperror", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", spf: SPFResult{spf.TempError, "example.com"},
			want: TempError, policy: PolicyReject, tag: "p", err: ErrAuthTemporary, recordAt: "example.com"},
		{name: "unaligned DKIM temperror is a fail", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", dkim: sig("temperror", "example.net"),
			want: Fail, policy: PolicyReject, tag: "p", recordAt: "example.com"},
		{name: "aligned DKIM temperror beside an aligned pass", txt: map[string][]string{org: {"v=DMARC1; p=reject"}},
			from: "example.com", dkim: []DKIMResult{{"temperror", "example.com", "a"}, {"pass", "example.com", "b"}},
			want: Pass, policy: PolicyReject, tag: "p", dkimAl: true, recordAt: "example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &zone{txt: tc.txt, fail: map[string]bool{}}
			for _, n := range tc.fail {
				z.fail[n] = true
			}
			var r Resolver = z
			if tc.hosts != nil {
				hz := hostZone{zone: z, hosts: map[string]bool{}}
				for _, h := range tc.hosts {
					hz.hosts[h] = true
				}
				r = hz
			}
			res, err := Evaluate(context.Background(), r, tc.from, tc.spf, tc.dkim)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if res.Result != tc.want || res.Policy != tc.policy || res.PolicyTag != tc.tag {
				t.Errorf("got %s policy %s (%q), want %s policy %s (%q)", res.Result, res.Policy, res.PolicyTag, tc.want, tc.policy, tc.tag)
			}
			if res.SPFAligned != tc.spfAl || res.DKIMAligned != tc.dkimAl {
				t.Errorf("aligned spf=%v dkim=%v, want %v %v", res.SPFAligned, res.DKIMAligned, tc.spfAl, tc.dkimAl)
			}
			if res.RecordDomain != tc.recordAt || (res.Record != nil) != (tc.recordAt != "") {
				t.Errorf("record %+v at %q, want one at %q", res.Record, res.RecordDomain, tc.recordAt)
			}
		})
	}
}

func TestEvaluateOrgDomain(t *testing.T) {
	for _, tc := range []struct{ from, want string }{
		{"a.b.example.co.uk", "example.co.uk"},
		{"co.uk", "co.uk"}, // a public suffix is its own
		{"News.Example.COM.", "example.com"},
	} {
		res, _ := Evaluate(context.Background(), &zone{}, tc.from, SPFResult{}, nil)
		if res.OrgDomain != tc.want {
			t.Errorf("%s: OrgDomain %q, want %q", tc.from, res.OrgDomain, tc.want)
		}
	}
}

// TestDisposition covers pct sampling (§6.3 "pct", §6.6.4).
func TestDisposition(t *testing.T) {
	rec := func(pct int) *Record { r := defaultRecord(); r.Percent = pct; return &r }
	for _, tc := range []struct {
		res  Result
		roll int
		want Policy
	}{
		{Result{Result: Fail, Policy: PolicyReject, Record: rec(100)}, 99, PolicyReject},
		{Result{Result: Fail, Policy: PolicyReject, Record: rec(20)}, 19, PolicyReject},
		{Result{Result: Fail, Policy: PolicyReject, Record: rec(20)}, 20, PolicyQuarantine},
		{Result{Result: Fail, Policy: PolicyQuarantine, Record: rec(20)}, 50, PolicyNone},
		{Result{Result: Fail, Policy: PolicyQuarantine, Record: rec(0)}, 0, PolicyNone},
		{Result{Result: Fail, Policy: PolicyNone, Record: rec(50)}, 0, PolicyNone},
		{Result{Result: Pass, Policy: PolicyReject, Record: rec(100)}, 0, PolicyNone},
		{Result{Result: TempError, Policy: PolicyReject, Record: rec(100)}, 0, PolicyNone},
	} {
		if got := tc.res.Disposition(tc.roll); got != tc.want {
			t.Errorf("%s p=%s pct=%d roll %d: %s, want %s", tc.res.Result, tc.res.Policy, tc.res.Record.Percent, tc.roll, got, tc.want)
		}
	}
}
