package dmarc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"mailbolt/grader/spf"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
)

// TestEvaluateOverDNS resolves through *dns.Resolver against a real DNS
// server (mta/dns/dnstest): TXT records split into strings, NXDOMAIN against
// NODATA, SERVFAIL, and the A/AAAA/MX lookups behind np.
func TestEvaluateOverDNS(t *testing.T) {
	zone := dnstest.Start(t)
	// The organization's record, long enough to be split in two strings.
	long := "mailto:" + strings.Repeat("x", 200) + "@example.com"
	zone.LongTXT("_dmarc.example.com", "v=DMARC1; p=reject; sp=quarantine; np=reject; adkim=r; aspf=s; rua=mailto:agg@reports.example.com!10m,"+long)
	zone.A("example.com", "192.0.2.1")
	zone.A("news.example.com", "192.0.2.2")
	zone.MX("mx-only.example.com", 10, "mx.example.com")
	zone.TXT("_dmarc.own.example.com", "v=DMARC1; p=none")
	zone.TXT("_dmarc.own.example.com", "not dmarc")
	zone.TXT("_dmarc.example.org", "v=DMARC1; p=reject")
	zone.TXT("_dmarc.example.org", "v=DMARC1; p=quarantine")
	zone.TXT("_dmarc.example.net", "v=spf1 -all")
	zone.TXT("_dmarc.bad.example", "v=DMARC1; p=reject-all")
	zone.ServFail("_dmarc.broken.example.com", true)

	r := &dns.Resolver{Server: zone.Addr, Timeout: time.Second}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		from   string
		spf    SPFResult
		dkim   []DKIMResult
		want   Status
		policy Policy
		tag    string
		err    error
	}{
		{"org domain, aligned DKIM", "example.com", SPFResult{spf.Fail, "example.com"}, []DKIMResult{{"pass", "mail.example.com", "s1"}},
			Pass, PolicyReject, "p", nil},
		{"aspf=s: subdomain MAIL FROM does not align", "example.com", SPFResult{spf.Pass, "bounce.example.com"}, nil,
			Fail, PolicyReject, "p", nil},
		{"existing subdomain gets sp", "news.example.com", SPFResult{spf.Pass, "news.example.com"}, nil,
			Pass, PolicyQuarantine, "sp", nil},
		{"non-existent subdomain gets np", "ghost.example.com", SPFResult{}, nil,
			Fail, PolicyReject, "np", nil},
		{"an MX is enough to exist", "mx-only.example.com", SPFResult{}, nil,
			Fail, PolicyQuarantine, "sp", nil},
		{"subdomain's own record", "own.example.com", SPFResult{}, []DKIMResult{{"pass", "example.com", "s1"}},
			Pass, PolicyNone, "p", nil},
		{"two records", "example.org", SPFResult{}, nil, None, PolicyNone, "", ErrMultipleRecords},
		{"only non-DMARC TXT", "example.net", SPFResult{}, nil, None, PolicyNone, "", nil},
		{"no record at all", "nothing.test", SPFResult{}, nil, None, PolicyNone, "", nil},
		{"invalid p", "www.bad.example", SPFResult{}, nil, PermError, PolicyNone, "", ErrInvalidRecord},
		{"SERVFAIL", "broken.example.com", SPFResult{}, nil, TempError, PolicyNone, "", ErrDNS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Evaluate(ctx, r, tc.from, tc.spf, tc.dkim)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if res.Result != tc.want || res.Policy != tc.policy || res.PolicyTag != tc.tag {
				t.Errorf("got %s %s (%q), want %s %s (%q)", res.Result, res.Policy, res.PolicyTag, tc.want, tc.policy, tc.tag)
			}
		})
	}

	rec, at, err := Lookup(ctx, r, "deep.news.example.com")
	if err != nil || at != "example.com" {
		t.Fatalf("Lookup: %v at %q", err, at)
	}
	if len(rec.AggregateReports) != 2 || rec.AggregateReports[0].MaxSize != 10<<20 || rec.AggregateReports[1].Address != long {
		t.Errorf("split TXT record not joined: rua %+v", rec.AggregateReports)
	}
}
