package dnscheck

import (
	"context"
	"crypto/ed25519"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dkim"
	"mailbolt/mta/dns"
)

// domainSetup is what a test domain publishes; good() is the
// well-configured one and each test changes a field.
type domainSetup struct {
	mx       []string // MX hosts; "." for a null MX; nil for none
	spf      []string // v=spf1 TXT records at the domain
	dmarc    string
	dkim     map[string]string // selector → record
	mtaSTS   string
	tlsRPT   string
	bimi     string
	extraTXT []string // other TXT records at the domain
}

const (
	mxIP     = "192.0.2.25"
	senderIP = "192.0.2.10"
	helo     = "mail.example.com"
)

var dkim2048 = func() string {
	k, err := dkim.GenerateKey(dkim.AlgRSA2048)
	if err != nil {
		panic(err)
	}
	return k.RecordValue()
}()

func good() domainSetup {
	return domainSetup{
		mx:     []string{"mx.example.com"},
		spf:    []string{"v=spf1 mx ip4:" + senderIP + " -all"},
		dmarc:  "v=DMARC1; p=reject; rua=mailto:dmarc@example.com",
		dkim:   map[string]string{"default": dkim2048},
		mtaSTS: "v=STSv1; id=20240101",
		tlsRPT: "v=TLSRPTv1; rua=mailto:tls@example.com",
	}
}

// publish serves domain as s describes, the mail hosts with forward-
// confirmed reverse DNS, and returns check options for the zone with test
// blocklists.
func publish(t testing.TB, z *zone, domain string, s domainSetup) {
	t.Helper()
	for i, h := range s.mx {
		z.MX(domain, uint16(10*(i+1)), h)
	}
	for _, r := range append(append([]string{}, s.spf...), s.extraTXT...) {
		z.LongTXT(domain, r)
	}
	if s.dmarc != "" {
		z.TXT("_dmarc."+domain, s.dmarc)
	}
	for sel, rec := range s.dkim {
		z.LongTXT(sel+"._domainkey."+domain, rec)
	}
	if s.mtaSTS != "" {
		z.TXT("_mta-sts."+domain, s.mtaSTS)
	}
	if s.tlsRPT != "" {
		z.TXT("_smtp._tls."+domain, s.tlsRPT)
	}
	if s.bimi != "" {
		z.TXT("default._bimi."+domain, s.bimi)
	}
}

// hosts serves the MX host and the sending host, both with FCrDNS.
func hosts(z *zone) {
	z.A("mx.example.com", mxIP)
	z.PTR(mxIP, "mx.example.com")
	z.A(helo, senderIP)
	z.PTR(senderIP, helo)
}

func options(z *zone) Options {
	return Options{
		Resolver:         &dns.Resolver{Server: z.Addr, Timeout: 2 * time.Second},
		IPBlocklists:     []string{"bl.test"},
		DomainBlocklists: []string{"dbl.test"},
		Timeout:          5 * time.Second,
	}
}

func run(t *testing.T, z *zone, opts Options, in Input) Result {
	t.Helper()
	res, err := Check(context.Background(), opts, in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func ruleScore(t *testing.T, res Result, id string) RuleScore {
	t.Helper()
	for _, s := range res.Rules {
		if s.Rule == id {
			return s
		}
	}
	t.Fatalf("no score for rule %s", id)
	return RuleScore{}
}

// wantRule asserts a rule's points, and that it was judged.
func wantRule(t *testing.T, res Result, id string, points int) {
	t.Helper()
	s := ruleScore(t, res, id)
	if !s.Judged || s.Points != points {
		t.Errorf("rule %s: got %+v, want %d points, judged", id, s, points)
	}
}

// wantFinding asserts a finding of the severity and category whose
// message contains text.
func wantFinding(t *testing.T, res Result, sev, cat, text string) {
	t.Helper()
	for _, f := range res.Findings {
		if f.Severity == sev && f.Category == cat && strings.Contains(f.Message, text) {
			return
		}
	}
	t.Errorf("no %s finding in %s containing %q; findings:\n%s", sev, cat, text, dump(res.Findings))
}

func wantRecommendation(t *testing.T, res Result, text string) {
	t.Helper()
	for _, r := range res.Recommendations {
		if strings.Contains(r, text) {
			return
		}
	}
	t.Errorf("no recommendation containing %q; got:\n%s", text, strings.Join(res.Recommendations, "\n"))
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s: %s\n", f.Severity, f.Category, f.Message)
	}
	return b.String()
}

func TestRulesTable(t *testing.T) {
	seen := map[string]bool{}
	sum := map[string]int{}
	for _, r := range Rules {
		if seen[r.ID] {
			t.Errorf("duplicate rule %s", r.ID)
		}
		seen[r.ID] = true
		sum[r.Dimension] += r.Weight
		if r.Describe == "" || (r.Dimension != DimensionDNSHealth && r.Dimension != DimensionReputation) {
			t.Errorf("rule %+v", r)
		}
	}
	if sum[DimensionDNSHealth] != 75 || sum[DimensionReputation] != 45 {
		t.Errorf("weights: %v", sum)
	}
}

func TestWellConfiguredScoresMax(t *testing.T) {
	z := startZone(t)
	publish(t, z, "example.com", good())
	hosts(z)
	res := run(t, z, options(z), Input{Domain: "Example.COM.", SenderIP: net.ParseIP(senderIP), HELO: helo})
	if res.DNSHealth != (Score{75, 75}) || res.Reputation != (Score{45, 45}) {
		t.Errorf("scores %+v %+v; findings:\n%s", res.DNSHealth, res.Reputation, dump(res.Findings))
	}
	for _, s := range res.Rules {
		if !s.Judged || s.Points != s.Weight {
			t.Errorf("rule %+v", s)
		}
	}
	for _, f := range res.Findings {
		if f.Severity != SeverityInfo {
			t.Errorf("finding %+v", f)
		}
	}
	if len(res.DKIMKeys) != 1 || res.DKIMKeys[0] != (KeyInfo{Selector: "default", Type: "rsa", Bits: 2048, Trusted: true}) {
		t.Errorf("keys %+v", res.DKIMKeys)
	}
	if res.SPFRecord != good().spf[0] || res.DMARCRecord != "v=DMARC1; p=reject; rua=mailto:dmarc@example.com" || res.DMARCPolicy != "reject" {
		t.Errorf("records %q %q %q", res.SPFRecord, res.DMARCRecord, res.DMARCPolicy)
	}
	if strings.Join(res.MXHosts, ",") != "mx.example.com" || strings.Join(res.PTRNames, ",") != helo {
		t.Errorf("mx %v ptr %v", res.MXHosts, res.PTRNames)
	}
	wantFinding(t, res, SeverityInfo, RuleSPFLimits, "uses 1 of the 10")
	wantFinding(t, res, SeverityInfo, RuleBIMI, "no BIMI record")

	// Without an IP and HELO, the rules about them are not judged.
	res = run(t, z, options(z), Input{Domain: "example.com"})
	if res.DNSHealth != (Score{75, 75}) || res.Reputation != (Score{15, 15}) {
		t.Errorf("domain only: %+v %+v", res.DNSHealth, res.Reputation)
	}
	for _, id := range []string{RuleIPBlocklists, RuleIPFCrDNS, RuleHELOMatchesPTR} {
		if ruleScore(t, res, id).Judged {
			t.Errorf("%s judged without an IP", id)
		}
	}
}

func TestSPF(t *testing.T) {
	many := "v=spf1"
	for i := range 11 {
		many += fmt.Sprintf(" include:inc%d.example.com", i)
	}
	many += " -all"
	for _, tc := range []struct {
		name                string
		spf                 []string
		record, limits, all int
		sev, cat, text, rec string
	}{
		{"no record", nil, 0, 0, 0, SeverityCritical, RuleSPFRecord, "publishes no SPF record", `"v=spf1 mx -all"`},
		{"two records", []string{"v=spf1 -all", "v=spf1 mx -all"}, 0, 0, 0, SeverityCritical, RuleSPFRecord, "publishes 2 v=spf1 records", "Merge"},
		{"syntax", []string{"v=spf1 mx:: -all"}, 0, 0, 0, SeverityCritical, RuleSPFRecord, "invalid", "v=spf1 mx -all"},
		{"+all", []string{"v=spf1 mx +all"}, 10, 5, 0, SeverityCritical, RuleSPFAll, "ends in +all", "-all"},
		{"bare all is +all", []string{"v=spf1 all"}, 10, 5, 0, SeverityCritical, RuleSPFAll, "ends in +all", "-all"},
		{"?all", []string{"v=spf1 mx ?all"}, 10, 5, 0, SeverityWarning, RuleSPFAll, "?all", "-all"},
		{"~all", []string{"v=spf1 mx ~all"}, 10, 5, 4, SeverityInfo, RuleSPFAll, "~all (softfail): the monitoring stage", "Next stage: once the DMARC reports show every sender of yours passing SPF"},
		{"no all", []string{"v=spf1 mx"}, 10, 5, 0, SeverityWarning, RuleSPFAll, "no all term", "-all"},
		{"redirect decides", []string{"v=spf1 redirect=_spf.example.com"}, 10, 5, 5, SeverityInfo, RuleSPFLimits, "uses 2 of the 10", ""},
		{"11 includes", []string{many}, 10, 0, 5, SeverityCritical, RuleSPFLimits, "needs 11 DNS lookups", "at most 10"},
		{"void lookups", []string{"v=spf1 a:v1.example.com a:v2.example.com a:v3.example.com -all"}, 10, 0, 5, SeverityCritical, RuleSPFLimits, "more than 2 void lookups", "Remove"},
		{"include without record", []string{"v=spf1 include:nothing.example.com -all"}, 10, 0, 5, SeverityCritical, RuleSPFLimits, "permerror", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := startZone(t)
			s := good()
			s.spf = tc.spf
			publish(t, z, "example.com", s)
			hosts(z)
			for i := range 11 {
				z.TXT(fmt.Sprintf("inc%d.example.com", i), "v=spf1 -all")
			}
			z.TXT("_spf.example.com", "v=spf1 mx -all")
			res := run(t, z, options(z), Input{Domain: "example.com"})
			wantRule(t, res, RuleSPFRecord, tc.record)
			wantRule(t, res, RuleSPFLimits, tc.limits)
			wantRule(t, res, RuleSPFAll, tc.all)
			wantFinding(t, res, tc.sev, tc.cat, tc.text)
			if tc.rec != "" {
				wantRecommendation(t, res, tc.rec)
			}
			if res.DNSHealth.Max != 75 || res.DNSHealth.Score != 75-(20-tc.record-tc.limits-tc.all) {
				t.Errorf("dns health %+v", res.DNSHealth)
			}
		})
	}
}

func TestDMARCAndBIMI(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		dmarc, bimi            string
		record, policy, rua    int
		sev, cat, text, recomm string
	}{
		{"missing", "", "", 0, 0, 0, SeverityCritical, RuleDMARCRecord, "no DMARC record", `"v=DMARC1; p=none; rua=mailto:dmarc-reports@example.com"`},
		// p=none with reports is the monitoring stage domain setup
		// advises: info, part of the points, and the next stage.
		{"p=none with rua", "v=DMARC1; p=none; rua=mailto:d@example.com", "", 10, 5, 5, SeverityInfo, RuleDMARCPolicy, "the monitoring stage; the next stage is p=quarantine", "Next stage"},
		{"p=none without rua", "v=DMARC1; p=none", "", 10, 0, 0, SeverityWarning, RuleDMARCPolicy, "none without aggregate reports", "Add rua="},
		{"p=quarantine", "v=DMARC1; p=quarantine; rua=mailto:d@example.com", "", 10, 8, 5, SeverityInfo, RuleDMARCPolicy, "quarantine", ""},
		{"weak sp", "v=DMARC1; p=reject; sp=none; rua=mailto:d@example.com", "", 10, 7, 5, SeverityWarning, RuleDMARCPolicy, "sp=none is weaker", ""},
		{"pct", "v=DMARC1; p=reject; pct=50; rua=mailto:d@example.com", "", 10, 8, 5, SeverityWarning, RuleDMARCPolicy, "pct=50", ""},
		{"no rua", "v=DMARC1; p=reject", "", 10, 10, 0, SeverityWarning, RuleDMARCReports, "no rua=", "rua=mailto:dmarc-reports@example.com"},
		{"BIMI without enforcement", "v=DMARC1; p=none; rua=mailto:d@example.com", "v=BIMI1; l=https://example.com/logo.svg", 10, 5, 5, SeverityWarning, RuleBIMI, "DMARC is not enforced", "so that its BIMI record is honoured"},
		{"BIMI with enforcement", "v=DMARC1; p=quarantine; rua=mailto:d@example.com", "v=BIMI1; l=https://example.com/logo.svg", 10, 8, 5, SeverityInfo, RuleBIMI, "with DMARC enforcement", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := startZone(t)
			s := good()
			s.dmarc, s.bimi = tc.dmarc, tc.bimi
			publish(t, z, "example.com", s)
			hosts(z)
			res := run(t, z, options(z), Input{Domain: "example.com"})
			wantRule(t, res, RuleDMARCRecord, tc.record)
			wantRule(t, res, RuleDMARCPolicy, tc.policy)
			wantRule(t, res, RuleDMARCReports, tc.rua)
			wantFinding(t, res, tc.sev, tc.cat, tc.text)
			if tc.recomm != "" {
				wantRecommendation(t, res, tc.recomm)
			}
		})
	}
}

func TestDMARCOrganizationalDomain(t *testing.T) {
	z := startZone(t)
	s := good()
	s.dmarc = ""
	publish(t, z, "news.example.com", s)
	z.TXT("_dmarc.example.com", "v=DMARC1; p=reject; sp=quarantine; rua=mailto:d@example.com")
	hosts(z)
	res := run(t, z, options(z), Input{Domain: "news.example.com"})
	if res.DMARCRecordDomain != "example.com" || res.DMARCPolicy != "quarantine" {
		t.Errorf("found at %q policy %q", res.DMARCRecordDomain, res.DMARCPolicy)
	}
	wantRule(t, res, RuleDMARCRecord, 10)
	wantRule(t, res, RuleDMARCPolicy, 8-3)
	wantFinding(t, res, SeverityInfo, RuleDMARCRecord, "organizational domain")
}

// rsaRecord makes a DKIM record for an RSA public key of the given modulus
// size, in SubjectPublicKeyInfo DER. The modulus is not a product of two
// primes — only its size matters here — which is also how a key under
// 1024 bits can be made at all, as crypto/rsa refuses to generate one.
func rsaRecord(bits int) string {
	n := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
	n.Add(n, big.NewInt(12345)) // odd, exactly bits long
	pub, err := asn1.Marshal(struct {
		N *big.Int
		E int
	}{n, 65537})
	if err != nil {
		panic(err)
	}
	der, err := asn1.Marshal(struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}{pkix.AlgorithmIdentifier{Algorithm: oidRSA, Parameters: asn1.NullRawValue}, asn1.BitString{Bytes: pub, BitLength: 8 * len(pub)}})
	if err != nil {
		panic(err)
	}
	return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
}

func TestDKIM(t *testing.T) {
	edPub, _, _ := ed25519.GenerateKey(nil)
	ed := "v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(edPub)
	for _, tc := range []struct {
		name           string
		keys           map[string]string
		selectors      []string
		wildcard       string
		points         int
		sev, text, rec string
	}{
		{"missing key", nil, nil, "", 0, SeverityWarning, "no DKIM key found for example.com at selectors default, google, dkim, selector1", "_domainkey.example.com"},
		{"512-bit key", map[string]string{"default": rsaRecord(512)}, nil, "", 0, SeverityCritical, "is a 512-bit RSA key", "2048-bit"},
		{"1024-bit key", map[string]string{"google": rsaRecord(1024)}, nil, "", 8, SeverityWarning, "1024-bit RSA key", "Rotate"},
		{"weakest key counts", map[string]string{"default": dkim2048, "selector1": rsaRecord(1024)}, nil, "", 8, SeverityWarning, "selector1._domainkey.example.com is a 1024-bit", ""},
		{"ed25519", map[string]string{"s1": ed}, []string{"s1"}, "", 15, SeverityInfo, "ed25519", ""},
		{"revoked", map[string]string{"default": "v=DKIM1; p="}, nil, "", 0, SeverityInfo, "revoked", ""},
		{"broken", map[string]string{"default": "v=DKIM1; k=rsa; p=AAAA"}, nil, "", 0, SeverityWarning, "unusable", ""},
		{"wildcard key", nil, nil, dkim2048, 0, SeverityWarning, "is not trusted: a wildcard", ""},
		{"wildcard text", nil, nil, "v=spf1 -all", 0, SeverityWarning, "wildcard TXT record answers", ""},
		{"explicit key under a wildcard", map[string]string{"default": dkim2048}, nil, "hello", 15, SeverityWarning, "wildcard TXT record answers", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := startZone(t)
			s := good()
			s.dkim = tc.keys
			publish(t, z, "example.com", s)
			hosts(z)
			if tc.wildcard != "" {
				z.Wildcard("_domainkey.example.com", tc.wildcard)
			}
			opts := options(z)
			opts.Selectors = tc.selectors
			res := run(t, z, opts, Input{Domain: "example.com"})
			wantRule(t, res, RuleDKIM, tc.points)
			wantFinding(t, res, tc.sev, RuleDKIM, tc.text)
			if tc.rec != "" {
				wantRecommendation(t, res, tc.rec)
			}
		})
	}
}

func TestParseDKIMKey(t *testing.T) {
	edPub, _, _ := ed25519.GenerateKey(nil)
	n := new(big.Int).Lsh(big.NewInt(1), 1023)
	pkcs1, _ := asn1.Marshal(struct {
		N *big.Int
		E int
	}{n.Add(n, big.NewInt(1)), 3})
	for _, tc := range []struct {
		txt  string
		want KeyInfo
	}{
		{dkim2048, KeyInfo{Selector: "s", Type: "rsa", Bits: 2048}},
		{rsaRecord(512), KeyInfo{Selector: "s", Type: "rsa", Bits: 512}},
		{"p=" + base64.StdEncoding.EncodeToString(pkcs1), KeyInfo{Selector: "s", Type: "rsa", Bits: 1024}},
		{"v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(edPub), KeyInfo{Selector: "s", Type: "ed25519", Bits: 256}},
		{"v=DKIM1; k=rsa; p=", KeyInfo{Selector: "s", Type: "rsa", Revoked: true}},
		{"v=DKIM2; p=AAAA", KeyInfo{Selector: "s", Type: "rsa", Problem: "v= is not DKIM1"}},
		{"v=DKIM1; k=ed25519; p=AAAA", KeyInfo{Selector: "s", Type: "ed25519", Problem: "an ed25519 key is 32 bytes, p= holds 3"}},
		{"v=DKIM1; k=dsa; p=AAAA", KeyInfo{Selector: "s", Type: "dsa", Problem: "unknown key type k=dsa"}},
		{"v=DKIM1; k=rsa", KeyInfo{Selector: "s", Type: "rsa", Problem: "no p= tag"}},
		{"v=DKIM1; p=!!", KeyInfo{Selector: "s", Type: "rsa", Problem: "p= is not valid base64"}},
	} {
		if got := parseDKIMKey("s", tc.txt); got != tc.want {
			t.Errorf("%.40s: got %+v, want %+v", tc.txt, got, tc.want)
		}
	}
}

func TestMTASTSAndTLSRPT(t *testing.T) {
	z := startZone(t)
	s := good()
	s.mtaSTS, s.tlsRPT = "", "v=TLSRPTv2; rua=mailto:x@example.com"
	publish(t, z, "example.com", s)
	hosts(z)
	res := run(t, z, options(z), Input{Domain: "example.com"})
	wantRule(t, res, RuleMTASTS, 0)
	wantRule(t, res, RuleTLSRPT, 0)
	wantFinding(t, res, SeverityInfo, RuleMTASTS, "no MTA-STS record")
	wantFinding(t, res, SeverityInfo, RuleTLSRPT, "no TLS-RPT record")
	wantRecommendation(t, res, `_smtp._tls.example.com: "v=TLSRPTv1; rua=mailto:tls-reports@example.com"`)
	wantRecommendation(t, res, `_mta-sts.example.com: "v=STSv1; id=`)
}

// Records the sender would ignore (mta/tlspolicy refuses them) earn
// nothing, with a warning saying why.
func TestMTASTSAndTLSRPTInvalid(t *testing.T) {
	z := startZone(t)
	s := good()
	s.mtaSTS, s.tlsRPT = "v=STSv1; id=not-alnum", "v=TLSRPTv1; rua=ftp://example.com/x"
	publish(t, z, "example.com", s)
	hosts(z)
	res := run(t, z, options(z), Input{Domain: "example.com"})
	wantRule(t, res, RuleMTASTS, 0)
	wantRule(t, res, RuleTLSRPT, 0)
	wantFinding(t, res, SeverityWarning, RuleMTASTS, "is not valid (MTA-STS record: id")
	wantFinding(t, res, SeverityWarning, RuleTLSRPT, "no mailto: or https: address")

	z2 := startZone(t)
	s = good()
	publish(t, z2, "example.com", s)
	z2.TXT("_mta-sts.example.com", "v=STSv1; id=2")
	hosts(z2)
	res = run(t, z2, options(z2), Input{Domain: "example.com"})
	wantRule(t, res, RuleMTASTS, 0)
	wantFinding(t, res, SeverityWarning, RuleMTASTS, "2 records start with v=STSv1")
}

func TestMX(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mx            []string
		points        int
		rdnsJudged    bool
		sev, text     string
		wantNoFinding bool
	}{
		{"none", nil, 0, false, SeverityWarning, "has no MX record", false},
		{"null MX", []string{"."}, 10, false, SeverityInfo, "null MX", false},
		{"unresolvable", []string{"nowhere.example.com"}, 0, false, SeverityCritical, "no MX host of example.com resolves", false},
		{"one of two resolvable", []string{"mx.example.com", "nowhere.example.com"}, 5, true, SeverityWarning, "nowhere.example.com has no A or AAAA", false},
		{"without FCrDNS", []string{"mx2.example.com"}, 10, true, SeverityWarning, "MX host mx2.example.com (192.0.2.26) has no PTR record", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := startZone(t)
			s := good()
			s.mx = tc.mx
			publish(t, z, "example.com", s)
			hosts(z)
			z.A("mx2.example.com", "192.0.2.26")
			res := run(t, z, options(z), Input{Domain: "example.com"})
			wantRule(t, res, RuleMX, tc.points)
			wantFinding(t, res, tc.sev, RuleMX+map[bool]string{true: "_fcrdns"}[strings.Contains(tc.text, "PTR")], tc.text)
			if got := ruleScore(t, res, RuleMXFCrDNS).Judged; got != tc.rdnsJudged {
				t.Errorf("mx_fcrdns judged %v", got)
			}
		})
	}
}

func TestBlocklists(t *testing.T) {
	z := startZone(t)
	publish(t, z, "example.com", good())
	hosts(z)
	z.A("10.2.0.192.bl.test", "127.0.0.2")
	z.A("10.2.0.192.refused.test", "127.255.255.254")
	z.A("10.2.0.192.uribl.test", "127.0.0.1")
	z.A("10.2.0.192.hijack.test", "198.51.100.1")
	z.A("example.com.dbl.test", "127.0.1.2")
	z.A("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.bl.test", "127.0.0.4")
	z.ServFail("10.2.0.192.broken.test", true)
	ip := net.ParseIP(senderIP)

	opts := options(z)
	res := run(t, z, opts, Input{Domain: "example.com", SenderIP: ip})
	wantRule(t, res, RuleIPBlocklists, 0)
	wantFinding(t, res, SeverityCritical, RuleIPBlocklists, "the sending IP 192.0.2.10 is listed on bl.test (10.2.0.192.bl.test answers 127.0.0.2)")
	wantRule(t, res, RuleDomainBlocklists, 0)
	wantFinding(t, res, SeverityCritical, RuleDomainBlocklists, "example.com is listed on dbl.test")
	wantRecommendation(t, res, "request delisting")
	if res.Reputation != (Score{15, 40}) {
		t.Errorf("reputation %+v", res.Reputation)
	}

	// Refusals and failures are never listings; with no list answering,
	// the rule is not judged.
	opts.IPBlocklists = []string{"refused.test", "uribl.test", "hijack.test", "broken.test"}
	res = run(t, z, opts, Input{Domain: "example.com", SenderIP: ip})
	if s := ruleScore(t, res, RuleIPBlocklists); s.Judged {
		t.Errorf("judged on refusals: %+v", s)
	}
	wantFinding(t, res, SeverityInfo, RuleIPBlocklists, "refused.test refused the query for the sending IP 192.0.2.10 (answer 127.255.255.254)")
	wantFinding(t, res, SeverityInfo, RuleIPBlocklists, "uribl.test refused the query")
	wantFinding(t, res, SeverityInfo, RuleIPBlocklists, "hijack.test gave an answer outside 127.0.0.0/8")
	wantFinding(t, res, SeverityInfo, RuleIPBlocklists, "broken.test could not be checked")
	for _, f := range res.Findings {
		if f.Category == RuleIPBlocklists && f.Severity != SeverityInfo {
			t.Errorf("finding %+v", f)
		}
	}

	// A refusal next to a clean answer: judged clean.
	opts.IPBlocklists = []string{"refused.test", "clean.test"}
	res = run(t, z, opts, Input{Domain: "example.com", SenderIP: ip})
	wantRule(t, res, RuleIPBlocklists, 15)

	// IPv6 in nibble form.
	opts.IPBlocklists = []string{"bl.test"}
	res = run(t, z, opts, Input{Domain: "example.com", SenderIP: net.ParseIP("2001:db8::1")})
	wantRule(t, res, RuleIPBlocklists, 0)
	wantFinding(t, res, SeverityCritical, RuleIPBlocklists, "2001:db8::1 is listed on bl.test")
}

func TestSenderReverseDNS(t *testing.T) {
	z := startZone(t)
	publish(t, z, "example.com", good())
	hosts(z)
	z.PTR("192.0.2.11", "liar.example.com") // resolves elsewhere
	z.A("liar.example.com", "192.0.2.99")
	for _, tc := range []struct {
		name       string
		ip, helo   string
		fcrdns     int
		heloPoints int
		sev, cat   string
		text, rec  string
	}{
		{"confirmed, HELO mismatch", senderIP, "other.example.com", 10, 0, SeverityWarning, RuleHELOMatchesPTR, "does not match the PTR name of 192.0.2.10 (mail.example.com)", "Announce mail.example.com as the HELO"},
		{"not confirmed", "192.0.2.11", "liar.example.com", 0, 0, SeverityWarning, RuleIPFCrDNS, "(liar.example.com) does not resolve back to it", "set its PTR record"},
		{"no PTR", "192.0.2.12", "mail.example.com", 0, 0, SeverityCritical, RuleIPFCrDNS, "192.0.2.12 has no PTR record", "set its PTR record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, z, options(z), Input{Domain: "example.com", SenderIP: net.ParseIP(tc.ip), HELO: tc.helo})
			wantRule(t, res, RuleIPFCrDNS, tc.fcrdns)
			wantRule(t, res, RuleHELOMatchesPTR, tc.heloPoints)
			wantFinding(t, res, tc.sev, tc.cat, tc.text)
			wantRecommendation(t, res, tc.rec)
		})
	}
}

func TestTemporaryFailuresAreNotJudged(t *testing.T) {
	z := startZone(t)
	publish(t, z, "example.com", good())
	hosts(z)
	z.ServFail("_dmarc.example.com", true)
	z.Silent("default._domainkey.example.com", true)
	opts := options(z)
	opts.Resolver.(*dns.Resolver).Timeout = 300 * time.Millisecond
	start := time.Now()
	res := run(t, z, opts, Input{Domain: "example.com"})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("check took %v: lookups are not parallel or not bounded", d)
	}
	for _, id := range []string{RuleDMARCRecord, RuleDMARCPolicy, RuleDMARCReports, RuleDKIM} {
		if ruleScore(t, res, id).Judged {
			t.Errorf("%s judged on a failed lookup", id)
		}
		wantFinding(t, res, SeverityWarning, id, "could not be checked")
	}
	if res.DNSHealth != (Score{75 - 40, 75 - 40}) {
		t.Errorf("dns health %+v", res.DNSHealth)
	}
	for _, f := range res.Findings {
		if strings.Contains(f.Message, "no DMARC") || strings.Contains(f.Message, "no DKIM") {
			t.Errorf("a failure reported as missing: %+v", f)
		}
	}
}

func TestOverallDeadline(t *testing.T) {
	z := startZone(t)
	publish(t, z, "example.com", good())
	z.Silent("example.com", true)
	opts := options(z)
	opts.Timeout = 300 * time.Millisecond
	start := time.Now()
	res := run(t, z, opts, Input{Domain: "example.com"})
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("check took %v past a 300ms deadline", d)
	}
	wantFinding(t, res, SeverityWarning, RuleSPFRecord, "could not be checked")
	wantFinding(t, res, SeverityWarning, RuleMX, "could not be checked")
}

func TestInvalidInput(t *testing.T) {
	r := &dns.Resolver{Server: "127.0.0.1:1"}
	for _, in := range []Input{
		{Domain: ""}, {Domain: "localhost"}, {Domain: "a..example.com"}, {Domain: "exa mple.com"},
		{Domain: "example.com", HELO: "bad helo"}, {Domain: "example.com", SenderIP: net.IP{1, 2, 3}},
	} {
		if _, err := Check(context.Background(), Options{Resolver: r}, in); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%+v: %v", in, err)
		}
	}
	if _, err := Check(context.Background(), Options{}, Input{Domain: "example.com"}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("no resolver: %v", err)
	}
}

func TestNormalizeDomain(t *testing.T) {
	for in, want := range map[string]string{"Example.COM.": "example.com", "Bücher.example": "xn--bcher-kva.example", " _dmarc.example.com ": "_dmarc.example.com"} {
		if got, err := normalizeDomain(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
}

func TestHELOMatchesAnyConfirmedPTRName(t *testing.T) {
	z := startZone(t)
	publish(t, z, "example.com", good())
	hosts(z)
	z.PTR(senderIP, "out.example.com")
	z.A("out.example.com", senderIP)
	res := run(t, z, options(z), Input{Domain: "example.com", SenderIP: net.ParseIP(senderIP), HELO: "OUT.example.com"})
	wantRule(t, res, RuleIPFCrDNS, 10)
	wantRule(t, res, RuleHELOMatchesPTR, 5)
	if strings.Join(res.PTRNames, ",") != "mail.example.com,out.example.com" {
		t.Errorf("ptr names %v", res.PTRNames)
	}
}

// BenchmarkCheckCold measures a whole check (domain, IP and HELO) against
// the loopback DNS server with nothing cached, and reports its p99.
func BenchmarkCheckCold(b *testing.B) {
	z := startZone(b)
	publish(b, z, "example.com", good())
	hosts(z)
	opts := options(z)
	in := Input{Domain: "example.com", SenderIP: net.ParseIP(senderIP), HELO: helo}
	var durs []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := Check(context.Background(), opts, in); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds())/1000, "p99-ms")
}
