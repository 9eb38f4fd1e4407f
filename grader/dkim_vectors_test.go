package grader

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
)

// TestDKIMRFCExamples verifies the signed examples of RFC 6376 Appendix A
// (rsa-sha256) and the ed25519-sha256 signature of RFC 8463 Appendix A
// through Submit, with their keys published in a loopback DNS server; a
// changed body fails them.
func TestDKIMRFCExamples(t *testing.T) {
	zone := dnstest.Start(t)
	keys, err := os.ReadFile("../testdata/dkim/keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(keys)), "\n") {
		name, record, _ := strings.Cut(line, " ")
		zone.LongTXT(name, record)
	}
	cfg := Config{Resolver: &dns.Resolver{Server: zone.Addr, Timeout: 300 * time.Millisecond},
		IPBlocklists: []string{}, DomainBlocklists: []string{}}
	for _, c := range []struct {
		file, from string
		want       map[string]string // selector -> result
	}{
		{"rfc6376-appendix-a.eml", "joe@example.com", map[string]string{"brisbane": "pass"}},
		{"rfc8463-appendix-a.eml", "joe@football.example.com", map[string]string{"brisbane": "pass"}},
	} {
		raw, err := os.ReadFile("../testdata/dkim/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tamper := range []bool{false, true} {
			msg := raw
			if tamper {
				msg = []byte(strings.Replace(string(raw), "Are you hungry yet?", "Are you angry yet?", 1))
			}
			r, err := Submit(context.Background(), cfg, Submission{From: c.from, To: []string{"suzie@shopping.example.net"},
				Subject: "Is dinner ready?", SenderIP: "192.0.2.1", HELO: "client1.football.example.com", Raw: msg})
			if err != nil {
				t.Fatal(err)
			}
			if r.AuthenticationResults == nil {
				t.Fatalf("%s: no authentication results", c.file)
			}
			got := map[string]string{}
			for _, d := range r.AuthenticationResults.DKIM {
				got[d.Selector] = d.Result
			}
			for sel, want := range c.want {
				if tamper {
					want = "fail"
				}
				if got[sel] != want {
					t.Errorf("%s (tampered %v): selector %s: %q, want %q (all: %v)", c.file, tamper, sel, got[sel], want, got)
				}
			}
		}
	}
}
