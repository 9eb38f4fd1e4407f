package grader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/grader/content"
	"mailbolt/grader/dnscheck"
	"mailbolt/mta/dkim"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
)

// zone is the loopback DNS server these tests publish in.
type zone = dnstest.Server

func startZone(t testing.TB) *zone { return dnstest.Start(t) }

const (
	domain   = "example.com"
	mxIP     = "192.0.2.25"
	senderIP = "192.0.2.10"
	heloName = "mail.example.com"
	selector = "mb1"
)

var (
	keyOnce sync.Once
	testKey dkim.Key
	keyErr  error
)

func dkimKey(t testing.TB) dkim.Key {
	t.Helper()
	keyOnce.Do(func() { testKey, keyErr = dkim.GenerateKey(dkim.AlgRSA2048) })
	if keyErr != nil {
		t.Fatal(keyErr)
	}
	return testKey
}

// setup is what a test domain publishes; the zero value of a field leaves
// that record out.
type setup struct {
	spf, dmarc string
	dkim       bool
}

var good = setup{
	spf:   "v=spf1 ip4:" + senderIP + " mx -all",
	dmarc: "v=DMARC1; p=reject; rua=mailto:dmarc@example.com",
	dkim:  true,
}

// publish serves example.com per s, with an MX host and a sending host
// that both have forward-confirmed reverse DNS, and the blocklist zones
// bl.test and dbl.test (empty unless a test lists something).
func publish(t *testing.T, s setup) (*zone, Config) {
	t.Helper()
	z := startZone(t)
	z.MX(domain, 10, "mx.example.com")
	z.A("mx.example.com", mxIP)
	z.PTR(mxIP, "mx.example.com")
	z.A(heloName, senderIP)
	z.PTR(senderIP, heloName)
	if s.spf != "" {
		z.TXT(domain, s.spf)
	}
	if s.dmarc != "" {
		z.TXT("_dmarc."+domain, s.dmarc)
	}
	if s.dkim {
		z.LongTXT(selector+"._domainkey."+domain, dkimKey(t).RecordValue())
	}
	z.TXT("_mta-sts."+domain, "v=STSv1; id=20260101")
	z.TXT("_smtp._tls."+domain, "v=TLSRPTv1; rua=mailto:tls@example.com")
	return z, Config{
		Resolver:         &dns.Resolver{Server: z.Addr, Timeout: 2 * time.Second},
		Selectors:        []string{selector},
		IPBlocklists:     []string{"bl.test"},
		DomainBlocklists: []string{"dbl.test"},
		Timeout:          5 * time.Second,
	}
}

func check(t *testing.T, cfg Config) Result {
	t.Helper()
	res, err := Check(context.Background(), cfg, domain, nil)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, res)
	return res
}

// wellFormed asserts the invariants of every Result.
func wellFormed(t *testing.T, res Result) {
	t.Helper()
	if len(res.Breakdown) != 5 {
		t.Errorf("breakdown has %d keys, want 5: %v", len(res.Breakdown), res.Breakdown)
	}
	for _, d := range DimensionWeights {
		s, ok := res.Breakdown[d.Dimension]
		if !ok {
			t.Errorf("breakdown lacks %s", d.Dimension)
		}
		if s.Score < 0 || s.Score > s.Max && s.Max > 0 {
			t.Errorf("%s: score %d out of max %d", d.Dimension, s.Score, s.Max)
		}
	}
	if res.Findings == nil || res.Recommendations == nil {
		t.Error("findings and recommendations must never be nil")
	}
	if res.Score < 0 || res.Score > 100 || res.Grade != Grade(res.Score) {
		t.Errorf("score %d grade %s", res.Score, res.Grade)
	}
	if res.Score != overall(res.Breakdown) {
		t.Errorf("score %d is not the weighted breakdown %d", res.Score, overall(res.Breakdown))
	}
	seen := map[string]bool{}
	for _, r := range res.Recommendations {
		if seen[r] {
			t.Errorf("duplicate recommendation %q", r)
		}
		seen[r] = true
	}
	valid := map[string]bool{}
	for _, d := range DimensionWeights {
		valid[d.Dimension] = true
	}
	for _, f := range res.Findings {
		if !valid[f.Category] {
			t.Errorf("finding category %q is not a dimension: %+v", f.Category, f)
		}
		if f.Severity != SeverityInfo && f.Severity != SeverityWarning && f.Severity != SeverityCritical {
			t.Errorf("finding severity %q: %+v", f.Severity, f)
		}
	}
}

// hasFinding asserts a finding of that severity and category whose
// message contains substr.
func hasFinding(t *testing.T, res Result, sev, cat, substr string) {
	t.Helper()
	for _, f := range res.Findings {
		if f.Severity == sev && f.Category == cat && strings.Contains(f.Message, substr) {
			return
		}
	}
	t.Errorf("no %s %s finding containing %q in %+v", sev, cat, substr, res.Findings)
}

func TestCheckWellConfigured(t *testing.T) {
	_, cfg := publish(t, good)
	res := check(t, cfg)
	if res.Grade != "A" || res.Domain != domain {
		t.Errorf("got %s %d %s, want A: %+v", res.Domain, res.Score, res.Grade, res)
	}
	if got := res.Breakdown[DimAuthentication]; got != (Score{100, 100}) {
		t.Errorf("authentication %+v, want 100/100", got)
	}
	if got := res.Breakdown[DimContentQuality]; got != (Score{}) {
		t.Errorf("content_quality %+v, want {0,0}", got)
	}
	hasFinding(t, res, SeverityInfo, DimContentQuality, "domain-only")
	if res.AuthenticationResults != nil {
		t.Error("a domain check has no authentication_results")
	}
	b, _ := json.Marshal(res)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"domain", "score", "grade", "breakdown", "findings", "recommendations"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if _, ok := m["authentication_results"]; ok {
		t.Errorf("JSON has authentication_results for a domain check: %s", b)
	}
}

func TestCheckProblems(t *testing.T) {
	cases := []struct {
		name     string
		s        setup
		auth     int // authentication score (of 100)
		sev, msg string
	}{
		{"no SPF", setup{dmarc: good.dmarc, dkim: true}, 65, SeverityCritical, "SPF is not ready"},
		{"+all", setup{spf: "v=spf1 +all", dmarc: good.dmarc, dkim: true}, 65, SeverityCritical, "not strict"},
		// ~all and p=none with reports are the monitoring stage domain
		// setup advises: fewer points, an info finding naming the stage.
		{"~all", setup{spf: "v=spf1 mx ~all", dmarc: good.dmarc, dkim: true}, 93, SeverityInfo, "SPF is at the monitoring stage"},
		{"p=none", setup{spf: good.spf, dmarc: "v=DMARC1; p=none; rua=mailto:dmarc@example.com", dkim: true}, 83, SeverityInfo, "DMARC is at the monitoring stage"},
		{"p=none without rua", setup{spf: good.spf, dmarc: "v=DMARC1; p=none", dkim: true}, 65, SeverityWarning, "neither enforcing nor reporting"},
		{"no DMARC", setup{spf: good.spf, dkim: true}, 65, SeverityCritical, "DMARC is not ready"},
		{"missing DKIM", setup{spf: good.spf, dmarc: good.dmarc}, 70, SeverityCritical, "DKIM is not ready"},
	}
	_, cfg := publish(t, good)
	best := check(t, cfg).Score
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, cfg := publish(t, c.s)
			res := check(t, cfg)
			if got := res.Breakdown[DimAuthentication]; got != (Score{c.auth, 100}) {
				t.Errorf("authentication %+v, want %d/100", got, c.auth)
			}
			hasFinding(t, res, c.sev, DimAuthentication, c.msg)
			if res.Score >= best {
				t.Errorf("score %d, want below the well-configured %d", res.Score, best)
			}
			if len(res.Recommendations) == 0 {
				t.Error("no recommendation")
			}
		})
	}
}

func TestCheckBlocklistedIP(t *testing.T) {
	z, cfg := publish(t, good)
	z.A("10.2.0.192.bl.test", "127.0.0.2")
	res, err := Submit(context.Background(), cfg, Submission{
		From: "news@example.com", Subject: "Hello", BodyText: "Hello there, this is a plain note.",
		SenderIP: senderIP,
	})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, res)
	hasFinding(t, res, SeverityCritical, DimReputation, "listed on bl.test")
	rep := res.Breakdown[DimReputation]
	if rep.Max == 0 || rep.Score > rep.Max-15 {
		t.Errorf("reputation %+v, want the 15 blocklist points lost", rep)
	}
}

// signed returns a raw message from news@example.com signed by the test
// key as example.com/mb1.
func signed(t *testing.T) []byte {
	t.Helper()
	msg := "From: Example News <news@example.com>\r\n" +
		"To: reader@example.net\r\n" +
		"Subject: Your monthly account summary\r\n" +
		"Date: Sun, 22 Nov 2026 06:00:00 +0000\r\n" +
		"Message-ID: <summary-1@example.com>\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"\r\n" +
		"Hello,\r\n\r\nyour account summary for November is ready. You sent 12 messages and\r\n" +
		"received 30. Nothing needs your attention.\r\n\r\nThe Example team\r\n"
	signer, err := dkimKey(t).Signer()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dkim.Sign([]byte(msg), domain, selector, signer)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestSubmitAuthenticated(t *testing.T) {
	_, cfg := publish(t, good)
	cfg.Selectors = []string{"default"} // the signature's selector is found from the message
	raw := signed(t)
	res, err := Submit(context.Background(), cfg, Submission{
		From:     "Example News <news@example.com>",
		To:       []string{"reader@example.net"},
		Subject:  "Your monthly account summary",
		SenderIP: senderIP,
		HELO:     heloName,
		MailFrom: "bounces@example.com",
		Raw:      raw,
	})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, res)
	ar := res.AuthenticationResults
	if ar == nil {
		t.Fatal("no authentication_results")
	}
	if ar.SPF != (SPFResult{"pass", "example.com"}) {
		t.Errorf("spf %+v", ar.SPF)
	}
	if len(ar.DKIM) != 1 || ar.DKIM[0] != (DKIMResult{"pass", "example.com", selector}) {
		t.Errorf("dkim %+v", ar.DKIM)
	}
	if ar.DMARC != (DMARCResult{Result: "pass", Policy: "reject", SPFAligned: true, DKIMAligned: true}) {
		t.Errorf("dmarc %+v", ar.DMARC)
	}
	if got := res.Breakdown[DimAuthentication]; got != (Score{100, 100}) {
		t.Errorf("authentication %+v, want 100/100", got)
	}
	if res.Breakdown[DimContentQuality].Max == 0 || res.Breakdown[DimSpamLikelihood].Max == 0 {
		t.Errorf("content dimensions not judged: %+v", res.Breakdown)
	}
	if res.Grade != "A" {
		t.Errorf("grade %s (%d): %+v", res.Grade, res.Score, res)
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"authentication_results":{"spf":{"result":"pass","domain":"example.com"}`, `"dkim":[{"result":"pass","domain":"example.com","selector":"mb1"}]`, `"dmarc":{"result":"pass","policy":"reject","spf_aligned":true,"dkim_aligned":true}`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}

	// The same message from an IP the SPF record does not authorize, with
	// a tampered body: SPF fails, DKIM fails, DMARC fails.
	bad := []byte(strings.Replace(string(raw), "12 messages", "13 messages", 1))
	res, err = Submit(context.Background(), cfg, Submission{
		From: "news@example.com", SenderIP: "198.51.100.7", HELO: heloName, MailFrom: "bounces@example.com", Raw: bad,
	})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, res)
	ar = res.AuthenticationResults
	if ar.SPF.Result != "fail" || len(ar.DKIM) != 1 || ar.DKIM[0].Result != "fail" || ar.DMARC.Result != "fail" || ar.DMARC.SPFAligned || ar.DMARC.DKIMAligned {
		t.Errorf("got %+v", ar)
	}
	if got := res.Breakdown[DimAuthentication]; got != (Score{0, 100}) {
		t.Errorf("authentication %+v, want 0/100", got)
	}
	hasFinding(t, res, SeverityCritical, DimAuthentication, "neither SPF nor DKIM")
}

func TestSubmitHELOIdentityAndNoRaw(t *testing.T) {
	z, cfg := publish(t, good)
	z.TXT(heloName, "v=spf1 a -all")
	res, err := Submit(context.Background(), cfg, Submission{
		From: "news@example.com", Subject: "Hello", BodyText: "Hello there, this is a plain note.",
		SenderIP: senderIP, HELO: heloName,
	})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, res)
	ar := res.AuthenticationResults
	if ar == nil || ar.SPF != (SPFResult{"pass", heloName}) || len(ar.DKIM) != 0 || ar.DKIM == nil {
		t.Fatalf("got %+v", ar)
	}
	// The HELO name is a subdomain: relaxed alignment holds.
	if ar.DMARC.Result != "pass" || !ar.DMARC.SPFAligned || ar.DMARC.DKIMAligned {
		t.Errorf("dmarc %+v", ar.DMARC)
	}
	hasFinding(t, res, SeverityWarning, DimAuthentication, "no raw message")
}

func TestSubmitReadinessOnly(t *testing.T) {
	_, cfg := publish(t, setup{spf: good.spf, dmarc: "v=DMARC1; p=none", dkim: true})
	res, err := Submit(context.Background(), cfg, Submission{
		From: "news@example.com", Subject: "Hello", BodyText: "Hello there, this is a plain note.",
	})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, res)
	if res.AuthenticationResults != nil {
		t.Errorf("readiness-only submission has authentication_results %+v", res.AuthenticationResults)
	}
	hasFinding(t, res, SeverityInfo, DimAuthentication, "DNS readiness only")
	hasFinding(t, res, SeverityWarning, DimAuthentication, "neither enforcing nor reporting")
	if got := res.Breakdown[DimAuthentication]; got != (Score{65, 100}) {
		t.Errorf("authentication %+v", got)
	}
}

// TestInvalidInput: every input the grader refuses is an *InputError
// naming the request field at fault, as the API reports it.
func TestInvalidInput(t *testing.T) {
	_, cfg := publish(t, good)
	field := func(err error) string {
		var ie *InputError
		if !errors.Is(err, ErrInvalidInput) || !errors.As(err, &ie) || ie.Reason == "" {
			return fmt.Sprintf("not an InputError with a reason: %v", err)
		}
		return ie.Field
	}
	for _, d := range []string{"", "localhost", "exa mple.com", "-bad.com", "a..b", "192.0.2.1", strings.Repeat("a", 64) + ".com"} {
		if _, err := Check(context.Background(), cfg, d, nil); field(err) != "domain" {
			t.Errorf("Check(%q): %v, want an InputError naming domain", d, err)
		}
	}
	if _, err := Check(context.Background(), cfg, domain, []string{"default", "bad selector"}); field(err) != "selectors[1]" {
		t.Errorf("bad selector: %v", err)
	}
	if _, err := Check(context.Background(), cfg, domain, make([]string, 21)); field(err) != "selectors" {
		t.Errorf("21 selectors: %v", err)
	}
	ok := Submission{From: "news@example.com", Subject: "Hi", BodyText: "text"}
	cases := []struct {
		name  string
		edit  func(*Submission)
		field string
	}{
		{"no from", func(s *Submission) { s.From = "" }, "from"},
		{"bad from", func(s *Submission) { s.From = "not an address" }, "from"},
		{"from without domain", func(s *Submission) { s.From = "news@localhost" }, "from"},
		{"subject CR", func(s *Submission) { s.Subject = "Hi\rBcc: x@example.net" }, "subject"},
		{"subject LF", func(s *Submission) { s.Subject = "Hi\nthere" }, "subject"},
		{"bad ip", func(s *Submission) { s.SenderIP = "192.0.2.300" }, "sender_ip"},
		{"bad helo", func(s *Submission) { s.SenderIP, s.HELO = senderIP, "bad helo" }, "helo_hostname"},
		{"bad to", func(s *Submission) { s.To = []string{"a@example.net", "nobody"} }, "to[1]"},
		{"bad mail_from", func(s *Submission) { s.MailFrom = "bounces" }, "mail_from"},
		{"mail_from without domain", func(s *Submission) { s.MailFrom = "bounces@localhost" }, "mail_from"},
		{"header injection", func(s *Submission) { s.Headers = map[string]string{"X-A": "b\r\nBcc: c@example.net"} }, "headers.X-A"},
		{"bad selector", func(s *Submission) { s.Selectors = []string{"x y"} }, "selectors[0]"},
	}
	for _, c := range cases {
		s := ok
		c.edit(&s)
		_, err := Submit(context.Background(), cfg, s)
		if got := field(err); got != c.field {
			t.Errorf("%s: %v names %q, want %q", c.name, err, got, c.field)
		}
	}
	if _, err := Submit(context.Background(), cfg, ok); err != nil {
		t.Errorf("valid submission: %v", err)
	}
}

func TestGradeAndWeights(t *testing.T) {
	for score, want := range map[int]string{100: "A", 90: "A", 89: "B", 80: "B", 79: "C", 70: "C", 69: "D", 60: "D", 59: "F", 0: "F"} {
		if got := Grade(score); got != want {
			t.Errorf("Grade(%d) = %s, want %s", score, got, want)
		}
	}
	sum := 0
	for _, d := range DimensionWeights {
		sum += d.Weight
	}
	if sum != 100 {
		t.Errorf("dimension weights sum to %d", sum)
	}
	for _, mode := range []string{ModeSubmission, ModeReadiness} {
		n := 0
		for _, r := range AuthRules {
			if r.Mode == mode {
				n += r.Weight
			}
		}
		if n != 100 {
			t.Errorf("%s rules sum to %d", mode, n)
		}
	}
	// Renormalisation: only dns_health (25) at 100% and authentication (30)
	// at 50% judged → (25 + 15) / 55.
	b := map[string]Score{DimDNSHealth: {10, 10}, DimAuthentication: {50, 100}, DimContentQuality: {}}
	if got := overall(b); got != 73 {
		t.Errorf("overall = %d, want 73", got)
	}
	if got := overall(map[string]Score{}); got != 0 {
		t.Errorf("overall of nothing = %d", got)
	}
}

func TestSubmitDKIMTempError(t *testing.T) {
	z, cfg := publish(t, good)
	z.ServFail(selector+"._domainkey."+domain, true)
	res, err := Submit(context.Background(), cfg, Submission{
		From: "news@example.com", SenderIP: senderIP, HELO: heloName, MailFrom: "bounces@example.com", Raw: signed(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, res)
	ar := res.AuthenticationResults
	if len(ar.DKIM) != 1 || ar.DKIM[0].Result != "temperror" {
		t.Fatalf("dkim %+v", ar.DKIM)
	}
	// SPF still aligns, so DMARC passes; the DKIM rule is left out of Max.
	if ar.DMARC.Result != "pass" || !ar.DMARC.SPFAligned {
		t.Errorf("dmarc %+v", ar.DMARC)
	}
	if got := res.Breakdown[DimAuthentication]; got != (Score{25 + 25 + 12, 75}) {
		t.Errorf("authentication %+v", got)
	}
	hasFinding(t, res, SeverityWarning, DimAuthentication, "temporary DNS failure")
}

// TestDocs keeps docs/grader.md in step with the rule tables and checks
// its worked example.
func TestDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/grader.md")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range dnscheck.Rules {
		ids = append(ids, fmt.Sprintf("| `%s` | %s | %d |", r.ID, r.Dimension, r.Weight))
	}
	for _, r := range content.Rules {
		dim := DimContentQuality
		if r.Dimension == content.DimSpam {
			dim = DimSpamLikelihood
		}
		ids = append(ids, fmt.Sprintf("| `%s` | %s | %d | %s |", r.ID, dim, r.Weight, r.Severity))
	}
	for _, r := range AuthRules {
		ids = append(ids, fmt.Sprintf("| `%s` | %d |", r.ID, r.Weight))
	}
	for _, d := range DimensionWeights {
		ids = append(ids, fmt.Sprintf("| `%s` | %d |", d.Dimension, d.Weight))
	}
	for _, b := range GradeBands {
		ids = append(ids, fmt.Sprintf("| %s | ≥ %d |", b.Letter, b.Min))
	}
	for _, id := range ids {
		if !strings.Contains(string(doc), id) {
			t.Errorf("docs/grader.md lacks the row %q", id)
		}
	}

	_, cfg := publish(t, good)
	if res := check(t, cfg); res.Score != 100 || res.Breakdown[DimDNSHealth] != (Score{75, 75}) || res.Breakdown[DimReputation] != (Score{15, 15}) {
		t.Errorf("worked example: %d %+v", res.Score, res.Breakdown)
	}
	_, cfg = publish(t, setup{spf: good.spf, dmarc: "v=DMARC1; p=none; rua=mailto:dmarc@example.com", dkim: true})
	if res := check(t, cfg); res.Score != 91 || res.Grade != "A" || res.Breakdown[DimDNSHealth] != (Score{70, 75}) {
		t.Errorf("worked example p=none: %d %s %+v", res.Score, res.Grade, res.Breakdown)
	}
}
