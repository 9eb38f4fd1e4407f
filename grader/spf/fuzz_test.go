package spf

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary records to the parser (go test -fuzz=FuzzParse).
// Nothing may panic; a rejected record fails with ErrSyntax; an accepted
// one writes back (Mechanism.String) to a record that parses the same; and
// evaluating it, or reading it as explanation text, keeps the failure
// rules.
func FuzzParse(f *testing.F) {
	for _, s := range loadSuite(f, rfc7208Suite) {
		for _, entries := range s.Zonedata {
			for _, e := range entries {
				m, ok := e.(map[string]any)
				if !ok {
					continue
				}
				for typ, v := range m {
					if typ == "SPF" || typ == "TXT" {
						f.Add(strings.Join(txtStrings(v), ""))
					}
				}
			}
		}
	}
	f.Add("v=spf1 a:%{d4r-+}.%{L}.%{i}.%{p}.%{v}.%{h}.%{o}.%{s}.example.com/24//64 exists:%{ir}.x.%{d}")
	f.Fuzz(func(t *testing.T, txt string) {
		rec, err := Parse(txt)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
		} else {
			checkRoundTrip(t, txt, rec)
		}

		z := zone{"fuzz.example.com": {{typ: "TXT", text: txt}}, "example.com": {{typ: "A", ip: net.IPv4(192, 0, 2, 1)}}}
		for _, ip := range []net.IP{net.ParseIP("192.0.2.1"), net.ParseIP("2001:db8::1")} {
			res, _, err := Check(context.Background(), z, ip, "fuzz.example.com", "a.b-c@fuzz.example.com", "helo.example.com", WithTimeout(time.Second))
			if (err != nil) != (res == TempError || res == PermError) {
				t.Fatalf("result %s with error %v", res, err)
			}
			if rec != nil && res == None {
				t.Fatalf("parsed record gave None")
			}
		}

		if ms, err := parseMacroString(txt, explainSyntax); err == nil {
			e := &evaluator{r: z, cfg: config{receiver: "r", now: time.Now}, ip: mustAddr("192.0.2.1"), local: "a", sender: "a@b.example", senderDomain: "b.example"}
			_ = ms.expand(e.macroValue(context.Background(), "d.example"))
		}
	})
}

// checkRoundTrip writes rec back and parses it again.
func checkRoundTrip(t *testing.T, txt string, rec *Record) {
	t.Helper()
	terms := []string{"v=spf1"}
	for _, m := range rec.Mechanisms {
		terms = append(terms, m.String())
	}
	if rec.Redirect != "" {
		terms = append(terms, "redirect="+rec.Redirect)
	}
	if rec.Exp != "" {
		terms = append(terms, "exp="+rec.Exp)
	}
	again, err := Parse(strings.Join(terms, " "))
	if err != nil {
		t.Fatalf("%q parsed, but its rewrite %q does not: %v", txt, strings.Join(terms, " "), err)
	}
	if len(again.Mechanisms) != len(rec.Mechanisms) || again.Redirect != rec.Redirect || again.Exp != rec.Exp {
		t.Fatalf("%q: rewrite parses differently", txt)
	}
	for i, m := range rec.Mechanisms {
		a := again.Mechanisms[i]
		if a.Qualifier != m.Qualifier || a.Kind != m.Kind || a.Domain != m.Domain || a.Net != m.Net || a.CIDR4 != m.CIDR4 || a.CIDR6 != m.CIDR6 {
			t.Fatalf("%q: mechanism %d: %+v became %+v", txt, i, m, a)
		}
	}
}
