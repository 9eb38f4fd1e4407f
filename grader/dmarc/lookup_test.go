package dmarc

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// TestLookup covers policy discovery (§6.6.3).
func TestLookup(t *testing.T) {
	const (
		sub   = "_dmarc.mail.example.com"
		org   = "_dmarc.example.com"
		good  = "v=DMARC1; p=reject"
		good2 = "v=DMARC1; p=quarantine"
	)
	for _, tc := range []struct {
		name    string
		txt     map[string][]string
		fail    []string
		domain  string
		want    Policy // of the record found
		at      string
		err     error
		queries []string
	}{
		{"record at the From domain", map[string][]string{sub: {good}, org: {good2}}, nil,
			"mail.example.com", PolicyReject, "mail.example.com", nil, []string{sub}},
		{"fallback to the organizational domain", map[string][]string{org: {good2}}, nil,
			"mail.example.com", PolicyQuarantine, "example.com", nil, []string{sub, org}},
		{"From domain is the organizational domain", map[string][]string{org: {good}}, nil,
			"example.com", PolicyReject, "example.com", nil, []string{org}},
		{"deep subdomain skips the levels between", map[string][]string{org: {good}}, nil,
			"a.b.mail.example.com", PolicyReject, "example.com", nil, []string{"_dmarc.a.b.mail.example.com", org}},
		{"none anywhere", nil, nil,
			"mail.example.com", "", "example.com", ErrNoRecord, []string{sub, org}},
		{"non-DMARC TXT records are dropped first", map[string][]string{sub: {"v=spf1 -all", "hello"}, org: {"google-site-verification=x", good}}, nil,
			"mail.example.com", PolicyReject, "example.com", nil, []string{sub, org}},
		{"two records at the From domain: none, no fallback", map[string][]string{sub: {good, good2}, org: {good}}, nil,
			"mail.example.com", "", "mail.example.com", ErrMultipleRecords, []string{sub}},
		{"two records at the organizational domain", map[string][]string{org: {good, good}}, nil,
			"mail.example.com", "", "example.com", ErrMultipleRecords, []string{sub, org}},
		{"syntax error: invalid p, no rua", map[string][]string{sub: {"v=DMARC1; p=bogus"}, org: {good}}, nil,
			"mail.example.com", "", "mail.example.com", ErrInvalidRecord, []string{sub}},
		{"invalid p with rua reads as p=none", map[string][]string{org: {"v=DMARC1; p=bogus; rua=mailto:d@example.com"}}, nil,
			"mail.example.com", PolicyNone, "example.com", nil, []string{sub, org}},
		{"temporary failure at the From domain: no fallback", map[string][]string{org: {good}}, []string{sub},
			"mail.example.com", "", "mail.example.com", ErrDNS, []string{sub}},
		{"temporary failure at the organizational domain", nil, []string{org},
			"mail.example.com", "", "example.com", ErrDNS, []string{sub, org}},
		{"public suffix From domain: one query", map[string][]string{"_dmarc.co.uk": {good}}, nil,
			"co.uk", PolicyReject, "co.uk", nil, []string{"_dmarc.co.uk"}},
		{"case and final dot", map[string][]string{org: {good}}, nil,
			"Mail.EXAMPLE.com.", PolicyReject, "example.com", nil, []string{sub, org}},
		{"IDN From domain queried as A-labels", map[string][]string{"_dmarc.xn--85x722f.xn--fiqs8s": {good}}, nil,
			"www.食狮.中国", PolicyReject, "xn--85x722f.xn--fiqs8s", nil, []string{"_dmarc.www.xn--85x722f.xn--fiqs8s", "_dmarc.xn--85x722f.xn--fiqs8s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &zone{txt: tc.txt, fail: map[string]bool{}}
			for _, n := range tc.fail {
				z.fail[n] = true
			}
			rec, at, err := Lookup(context.Background(), z, tc.domain)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if (rec == nil) != (tc.want == "") || rec != nil && rec.Policy != tc.want {
				t.Errorf("record %+v, want p=%s", rec, tc.want)
			}
			if at != tc.at {
				t.Errorf("found at %q, want %q", at, tc.at)
			}
			if !reflect.DeepEqual(z.queries, tc.queries) {
				t.Errorf("queries %q, want %q", z.queries, tc.queries)
			}
		})
	}
}

func TestLookupInvalidDomain(t *testing.T) {
	for _, d := range []string{"", ".", "a..b", "exa mple.com", "-\x00.com"} {
		z := &zone{}
		if _, _, err := Lookup(context.Background(), z, d); !errors.Is(err, ErrInvalidDomain) || len(z.queries) > 0 {
			t.Errorf("Lookup(%q): %v after %d queries, want ErrInvalidDomain and none", d, err, len(z.queries))
		}
	}
}

func TestLookupCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Lookup(ctx, &zone{}, "example.com"); !errors.Is(err, ErrDNS) || !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want ErrDNS wrapping context.Canceled", err)
	}
}
