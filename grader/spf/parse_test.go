package spf

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParseValid(t *testing.T) {
	rec, err := Parse("V=SPF1  +a -MX:%{d}.example.com/24//64 ~ip4:192.0.2.0/24 ?ip6:2001:DB8::/32 ptr exists:%{i}.bl.example.org include:_spf.example.net all redirect=_spf.example.com exp=why.%{d} x-custom=%{l} ")
	if err != nil {
		t.Fatal(err)
	}
	want := []Mechanism{
		{Qualifier: QualifierPass, Kind: KindA, CIDR4: 32, CIDR6: 128},
		{Qualifier: QualifierFail, Kind: KindMX, Domain: "%{d}.example.com", CIDR4: 24, CIDR6: 64},
		{Qualifier: QualifierSoftFail, Kind: KindIP4, Net: netip.MustParsePrefix("192.0.2.0/24"), CIDR4: 32, CIDR6: 128},
		{Qualifier: QualifierNeutral, Kind: KindIP6, Net: netip.MustParsePrefix("2001:db8::/32"), CIDR4: 32, CIDR6: 128},
		{Qualifier: QualifierPass, Kind: KindPTR, CIDR4: 32, CIDR6: 128},
		{Qualifier: QualifierPass, Kind: KindExists, Domain: "%{i}.bl.example.org", CIDR4: 32, CIDR6: 128},
		{Qualifier: QualifierPass, Kind: KindInclude, Domain: "_spf.example.net", CIDR4: 32, CIDR6: 128},
		{Qualifier: QualifierPass, Kind: KindAll, CIDR4: 32, CIDR6: 128},
	}
	if len(rec.Mechanisms) != len(want) {
		t.Fatalf("got %d mechanisms, want %d", len(rec.Mechanisms), len(want))
	}
	for i, w := range want {
		g := rec.Mechanisms[i]
		if g.Qualifier != w.Qualifier || g.Kind != w.Kind || g.Domain != w.Domain || g.Net != w.Net || g.CIDR4 != w.CIDR4 || g.CIDR6 != w.CIDR6 {
			t.Errorf("mechanism %d = %+v, want %+v", i, g, w)
		}
	}
	if rec.Redirect != "_spf.example.com" || rec.Exp != "why.%{d}" {
		t.Errorf("modifiers = %q, %q", rec.Redirect, rec.Exp)
	}
	if s := rec.Mechanisms[1].String(); s != "-mx:%{d}.example.com/24//64" {
		t.Errorf("String() = %q", s)
	}
}

func TestParseErrors(t *testing.T) {
	for _, rec := range []string{
		"v=spf10",                              // version not followed by SP
		"spf1 -all",                            // no version
		"v=spf1 -all moo",                      // unknown mechanism, after a match (§4.6)
		"v=spf1 a:foo-bar",                     // no top label
		"v=spf1 a:111.222.33.44",               // numeric top label
		"v=spf1 a:example.-com",                // top label starts with a dash
		"v=spf1 a:museum.",                     // single label
		"v=spf1 a:",                            // empty domain
		"v=spf1 a/33",                          // IPv4 prefix too long
		"v=spf1 a//129",                        // IPv6 prefix too long
		"v=spf1 a/24/64",                       // ip6 length needs //
		"v=spf1 ip4:1.2.3.4/032",               // leading zero
		"v=spf1 ip4:1.2.3",                     // short address
		"v=spf1 ip4:1.2.03.4",                  // leading zero in an octet
		"v=spf1 ip4:1.2.3.4//32",               // dual CIDR on ip4
		"v=spf1 ip4:::1",                       // IPv6 in ip4
		"v=spf1 ip6:1.2.3.4",                   // IPv4 in ip6
		"v=spf1 ip6:fe80::1%eth0",              // zone
		"v=spf1 ip6",                           // no address
		"v=spf1 -all.",                         // all takes nothing
		"v=spf1 -all:x",                        //
		"v=spf1 ptr/0",                         // no CIDR on ptr
		"v=spf1 include",                       // include needs a domain
		"v=spf1 include:x.example.com/24",      // no CIDR on include
		"v=spf1 exists:x.example.com/24",       // nor on exists
		"v=spf1 redirect:x.example.com",        // redirect is a modifier
		"v=spf1 redirect=",                     // empty domain
		"v=spf1 exp=",                          // empty domain (test exp-empty-domain)
		"v=spf1 redirect=a.com redirect=a.com", // twice (§6)
		"v=spf1 exp=a.com exp=b.com",           // twice (§6)
		"v=spf1 exp=%{r}.example.com",          // r only in exp text
		"v=spf1 1up=foo",                       // modifier name starts with a letter
		"v=spf1 =all",                          //
		"v=spf1 foo=%abc",                      // bad macro in unknown modifier
		"v=spf1 a:ctrl.example.com\rptr",       // only SP separates terms
		"v=spf1 ip4:192.0.2.5\n",               //
		"v=spf1 a:\xef\xbb\xbfx.example.net",   // 7-bit ASCII only (§3.1)
		"v=spf1 a:foo.example.com\x00",         //
	} {
		if _, err := Parse(rec); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) err = %v, want ErrSyntax", rec, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	for _, rec := range []string{
		"v=spf1",
		"v=spf1 ",
		"v=spf1 moo.cow-far_out=man:dog/cat", // unknown modifier
		"v=spf1 default=+",
		"v=spf1 moo=",                      // empty macro-string
		"v=spf1 a:foo:bar/baz.example.com", // ':' and '/' inside a domain-spec
		"v=spf1 a:foo.example.xn--zckzah",  // dashes inside a top label
		"v=spf1 a:mail.example...com",      // empty label: valid syntax
		"v=spf1 a:%{H}.bar",                // ends in a top label after a macro
		"v=spf1 exists:%{i}",               // ends in a macro
		"v=spf1 a:x.example.com%-",         // %- is a macro-expand too
		"v=spf1 ip6:::ffff:1.2.3.4 ip6:::1.1.1.1/0",
		"v=spf1 a//0 mx/0",
	} {
		if _, err := Parse(rec); err != nil {
			t.Errorf("Parse(%q): %v", rec, err)
		}
	}
}
