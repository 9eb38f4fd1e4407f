package spf

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"
)

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s).Unmap() }

// testEvaluator is the evaluation context of RFC 7208 §7.4's examples.
func testEvaluator(ip string) *evaluator {
	return &evaluator{
		r:            zone{},
		cfg:          config{receiver: "mx.example.org", now: func() time.Time { return time.Unix(1700000000, 0) }},
		ip:           mustAddr(ip),
		sender:       "strong-bad@email.example.com",
		local:        "strong-bad",
		senderDomain: "email.example.com",
		helo:         "mx.example.org",
	}
}

func TestMacroExpansionRFCExamples(t *testing.T) {
	// RFC 7208 §7.4, sender strong-bad@email.example.com, IPv4 192.0.2.3.
	for in, want := range map[string]string{
		"%{s}":                              "strong-bad@email.example.com",
		"%{o}":                              "email.example.com",
		"%{d}":                              "email.example.com",
		"%{d4}":                             "email.example.com",
		"%{d3}":                             "email.example.com",
		"%{d2}":                             "example.com",
		"%{d1}":                             "com",
		"%{dr}":                             "com.example.email",
		"%{d2r}":                            "example.email",
		"%{l}":                              "strong-bad",
		"%{l-}":                             "strong.bad",
		"%{lr}":                             "strong-bad",
		"%{lr-}":                            "bad.strong",
		"%{l1r-}":                           "strong",
		"%{ir}.%{v}._spf.%{d2}":             "3.2.0.192.in-addr._spf.example.com",
		"%{lr-}.lp._spf.%{d2}":              "bad.strong.lp._spf.example.com",
		"%{lr-}.lp.%{ir}.%{v}._spf.%{d2}":   "bad.strong.lp.3.2.0.192.in-addr._spf.example.com",
		"%{ir}.%{v}.%{l1r-}.lp._spf.%{d2}":  "3.2.0.192.in-addr.strong.lp._spf.example.com",
		"%{d2}.trusted-domains.example.net": "example.com.trusted-domains.example.net",
		// Beyond the RFC's list: escapes, upper case, exp-only letters.
		"%%%_%-":         "% %20",
		"%{S}":           "strong-bad%40email.example.com",
		"%{c} %{r} %{t}": "192.0.2.3 mx.example.org 1700000000",
		"%{p}":           "unknown",
		"%{D2R}":         "example.email",
	} {
		ms, err := parseMacroString(in, explainSyntax)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := ms.expand(testEvaluator("192.0.2.3").macroValue(context.Background(), "email.example.com")); got != want {
			t.Errorf("%q = %q, want %q", in, got, want)
		}
	}
}

func TestMacroExpansionIPv6(t *testing.T) {
	// RFC 7208 §7.4's IPv6 example, with the nibbles in upper case (see
	// dotted) — DNS names are case-insensitive.
	e := testEvaluator("2001:db8::cb01")
	ms, err := parseMacroString("%{ir}.%{v}._spf.%{d2} %{c}", explainSyntax)
	if err != nil {
		t.Fatal(err)
	}
	want := "1.0.B.C.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.B.D.0.1.0.0.2.ip6._spf.example.com 2001:db8::cb01"
	if got := ms.expand(e.macroValue(context.Background(), "email.example.com")); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestMacroSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		in  string
		syn macroSyntax
	}{
		{"%", domainSpecSyntax},
		{"%x", domainSpecSyntax},
		{"%(ir)", domainSpecSyntax},
		{"%{", domainSpecSyntax},
		{"%{}", domainSpecSyntax},
		{"%{a}", domainSpecSyntax},    // not a macro letter
		{"%{c}", domainSpecSyntax},    // exp text only (§7.1)
		{"%{r}", domainSpecSyntax},    // exp text only
		{"%{t}", domainSpecSyntax},    // exp text only
		{"%{d0}", domainSpecSyntax},   // zero parts (§7.3)
		{"%{dx}", domainSpecSyntax},   // bad delimiter
		{"%{d2rr}", domainSpecSyntax}, // one r only
		{"a b", domainSpecSyntax},     // SP only in explanations
		{"caf\xc3\xa9", explainSyntax},
		{"tab\there", explainSyntax},
	} {
		if _, err := parseMacroString(tc.in, tc.syn); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err = %v, want ErrSyntax", tc.in, err)
		}
	}
}

func TestTargetNameTruncation(t *testing.T) {
	// §7.3: over 253 characters, labels go from the left; a final dot goes.
	e := testEvaluator("192.0.2.3")
	long := ""
	for range 30 {
		long += "abcdefghi."
	}
	ms, err := parseDomainSpec(long+"example.com.", "test")
	if err != nil {
		t.Fatal(err)
	}
	got := e.targetName(context.Background(), ms, "d.example")
	if len(got) > 253 || got[len(got)-12:] != ".example.com" || got[0] == '.' {
		t.Errorf("targetName = %q (%d)", got, len(got))
	}
}
