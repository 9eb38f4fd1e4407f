package content

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// clean is a well-formed transactional message: it must score Max/Max with
// no findings.
const clean = "From: Acme Billing <billing@mail.acme.com>\r\n" +
	"To: jane@example.net\r\n" +
	"Subject: Your invoice for March is ready\r\n" +
	"Date: Mon, 02 Mar 2026 10:15:00 +0000\r\n" +
	"Message-ID: <20260302101500.1234@mail.acme.com>\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: multipart/alternative; boundary=\"b1\"\r\n" +
	"\r\n" +
	"--b1\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"\r\n" +
	"Hello Jane,\r\n" +
	"\r\n" +
	"your invoice for March is ready. The total of 42.00 EUR will be charged to the\r\n" +
	"card ending in 4242 on 5 March. You can read and download the invoice in your\r\n" +
	"account: https://acme.com/billing/invoices/2026-03\r\n" +
	"\r\n" +
	"Questions about this invoice? Reply to this message and our billing team will\r\n" +
	"answer within one working day.\r\n" +
	"\r\n" +
	"Acme Inc., 1 Main Street, Springfield\r\n" +
	"--b1\r\n" +
	"Content-Type: text/html; charset=utf-8\r\n" +
	"\r\n" +
	"<html><head><title>Invoice</title><style>p{margin:0}</style></head><body>\r\n" +
	"<img src=\"https://acme.com/logo.png\" alt=\"Acme\">\r\n" +
	"<p>Hello Jane,</p>\r\n" +
	"<p>your invoice for March is ready. The total of 42.00&nbsp;EUR will be charged to the\r\n" +
	"card ending in 4242 on 5 March. You can <a href=\"https://acme.com/billing/invoices/2026-03\">read and\r\n" +
	"download the invoice</a> in your account.</p>\r\n" +
	"<p>Questions about this invoice? Reply to this message and our billing team will\r\n" +
	"answer within one working day.</p>\r\n" +
	"<p>Acme Inc., 1 Main Street, Springfield</p>\r\n" +
	"</body></html>\r\n" +
	"--b1--\r\n"

// variant returns clean with each old replaced by its new (pairs).
func variant(t testing.TB, pairs ...string) string {
	s := clean
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("variant: %q not in the clean message", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], -1)
	}
	return s
}

const cleanText = "Hello Jane,\r\n\r\nyour invoice for March is ready."

func single(ctype, body string) string {
	return "From: Acme Billing <billing@mail.acme.com>\r\n" +
		"Subject: Your invoice for March is ready\r\n" +
		"Date: Mon, 02 Mar 2026 10:15:00 +0000\r\n" +
		"Message-ID: <1@mail.acme.com>\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: " + ctype + "\r\n\r\n" + body
}

func ruleIDs(r Result) []string {
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, f.Rule)
	}
	return ids
}

func TestRulesInIsolation(t *testing.T) {
	htmlPart := "<html><body><p>Hello Jane, your invoice for March is ready.</p></body></html>"
	tests := []struct {
		name string
		in   Input
		want []string // rule IDs that fire; nil for none
	}{
		{"clean", Input{Raw: []byte(clean)}, nil},
		{"clean bulk with one-click", Input{Bulk: true, Raw: []byte(variant(t, "MIME-Version: 1.0\r\n",
			"MIME-Version: 1.0\r\nList-Unsubscribe: <mailto:u@acme.com>, <https://acme.com/u/abc>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"))}, nil},
		{"display name is the address itself", Input{Raw: []byte(variant(t, "From: Acme Billing <billing@mail.acme.com>",
			`From: "billing@mail.acme.com" <billing@mail.acme.com>`))}, nil},
		{"display name names the parent domain", Input{Raw: []byte(variant(t, "From: Acme Billing", "From: acme.com Billing"))}, nil},
		{"display name with initials", Input{Raw: []byte(variant(t, "From: Acme Billing", "From: J.R.R. Tolkien"))}, nil},
		{"winners is not winner", Input{Raw: []byte(variant(t, "Subject: Your invoice", "Subject: Winners: your invoice"))}, nil},

		{"date missing", Input{Raw: []byte(variant(t, "Date: Mon, 02 Mar 2026 10:15:00 +0000\r\n", ""))}, []string{"DATE_MISSING_OR_INVALID"}},
		{"date invalid", Input{Raw: []byte(variant(t, "Date: Mon, 02 Mar 2026 10:15:00 +0000", "Date: yesterday"))}, []string{"DATE_MISSING_OR_INVALID"}},
		{"message-id missing", Input{Raw: []byte(variant(t, "Message-ID: <20260302101500.1234@mail.acme.com>\r\n", ""))}, []string{"MESSAGE_ID_MISSING_OR_INVALID"}},
		{"message-id invalid", Input{Raw: []byte(variant(t, "<20260302101500.1234@mail.acme.com>", "20260302101500.1234"))}, []string{"MESSAGE_ID_MISSING_OR_INVALID"}},
		{"from invalid", Input{Raw: []byte(variant(t, "From: Acme Billing <billing@mail.acme.com>", "From: Acme Billing"))}, []string{"FROM_MISSING_OR_INVALID"}},
		{"subject empty", Input{Raw: []byte(variant(t, "Subject: Your invoice for March is ready", "Subject: "))}, []string{"SUBJECT_EMPTY"}},
		{"body empty", Input{Raw: []byte(single("text/plain; charset=utf-8", "\r\n"))}, []string{"BODY_EMPTY"}},
		{"html only", Input{Raw: []byte(single("text/html; charset=utf-8", htmlPart))}, []string{"HTML_ONLY"}},
		{"text part short", Input{Raw: []byte(variant(t, "Hello Jane,\r\n\r\nyour invoice for March is ready. The total", "See HTML.\r\n\r\nThe total",
			"charged to the\r\ncard ending in 4242 on 5 March. You can read and download the invoice in your\r\naccount: https://acme.com/billing/invoices/2026-03\r\n\r\nQuestions about this invoice? Reply to this message and our billing team will\r\nanswer within one working day.\r\n\r\nAcme Inc., 1 Main Street, Springfield", ""))},
			[]string{"TEXT_PART_SHORT"}},
		{"image heavy", Input{Raw: []byte(single("multipart/alternative; boundary=x",
			"--x\r\nContent-Type: text/plain\r\n\r\nSpring sale\r\n--x\r\nContent-Type: text/html\r\n\r\n"+
				`<p>Spring sale</p><img src="https://acme.com/1.png"><img src="https://acme.com/2.png"><img src="https://acme.com/3.png">`+
				"\r\n--x--\r\n"))}, []string{"HTML_IMAGE_HEAVY"}},
		{"image only", Input{Raw: []byte(single("multipart/alternative; boundary=x",
			"--x\r\nContent-Type: text/plain\r\n\r\nSpring sale\r\n--x\r\nContent-Type: text/html\r\n\r\n"+
				`<img src="https://acme.com/1.png">`+"\r\n--x--\r\n"))}, []string{"HTML_IMAGE_HEAVY"}},
		{"mime unknown transfer encoding", Input{Raw: []byte(variant(t, "--b1\r\nContent-Type: text/plain; charset=utf-8\r\n",
			"--b1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: x-weird\r\n"))}, []string{"MIME_BROKEN"}},
		{"mime unterminated multipart", Input{Raw: []byte(strings.TrimSuffix(clean, "--b1--\r\n"))}, []string{"MIME_BROKEN"}},
		{"mime invalid utf-8", Input{Raw: []byte(variant(t, "Hello Jane,\r\n\r\nyour", "Hello Jane\xff\xfe,\r\n\r\nyour"))}, []string{"MIME_BROKEN"}},
		{"mime bad base64", Input{Raw: []byte(single("text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64", "SGVsbG8gSmFuZQ==!!!%%%\r\n"))}, []string{"MIME_BROKEN"}},
		{"charset latin-1", Input{Raw: []byte(variant(t, "Content-Type: text/plain; charset=utf-8\r\n\r\nHello Jane,",
			"Content-Type: text/plain; charset=iso-8859-1\r\n\r\nHello Ren\xe9e,"))}, []string{"CHARSET_NOT_UTF8"}},
		{"charset in from and subject", Input{Raw: []byte(variant(t, "From: Acme Billing", "From: =?koi8-r?q?=E1=C3=CD=C5?=",
			"Subject: Your invoice for March is ready", "Subject: =?windows-1252?q?Your_invoice_for_March_is_ready?="))}, []string{"CHARSET_NOT_UTF8"}},
		{"subject all caps", Input{Raw: []byte(variant(t, "Subject: Your invoice for March is ready", "Subject: YOUR INVOICE IS READY"))}, []string{"SUBJECT_ALL_CAPS"}},
		{"subject punctuation", Input{Raw: []byte(variant(t, "Subject: Your invoice for March is ready", "Subject: Your invoice for March is ready!!"))}, []string{"SUBJECT_EXCESS_PUNCTUATION"}},
		{"subject dollars", Input{Raw: []byte(variant(t, "Subject: Your invoice for March is ready", "Subject: Your invoice $$$"))}, []string{"SUBJECT_EXCESS_PUNCTUATION"}},
		{"url shortener", Input{Raw: []byte(variant(t, "https://acme.com/billing/invoices/2026-03", "https://bit.ly/3xYz"))}, []string{"URL_SHORTENER"}},
		{"link ratio", Input{Raw: []byte(single("text/plain; charset=utf-8",
			"Links: https://acme.com/1 https://acme.com/2 https://acme.com/3\r\n"))}, []string{"LINK_TEXT_RATIO_HIGH"}},
		{"spam phrase in subject", Input{Raw: []byte(variant(t, "Subject: Your invoice", "Subject: Act now: your invoice"))}, []string{"SPAM_PHRASES"}},
		{"spam phrase in html", Input{Raw: []byte(variant(t, "download the invoice</a>", "download the invoice</a> (100% FREE)"))}, []string{"SPAM_PHRASES"}},
		{"bulk without list-unsubscribe", Input{Bulk: true, Raw: []byte(clean)}, []string{"BULK_NO_LIST_UNSUBSCRIBE"}},
		{"precedence bulk without list-unsubscribe", Input{Raw: []byte(variant(t, "MIME-Version: 1.0\r\n", "MIME-Version: 1.0\r\nPrecedence: bulk\r\n"))}, []string{"BULK_NO_LIST_UNSUBSCRIBE"}},
		{"bulk without one-click post", Input{Bulk: true, Raw: []byte(variant(t, "MIME-Version: 1.0\r\n",
			"MIME-Version: 1.0\r\nList-Unsubscribe: <https://acme.com/u/abc>\r\n"))}, []string{"BULK_NO_ONE_CLICK"}},
		{"bulk with mailto only", Input{Bulk: true, Raw: []byte(variant(t, "MIME-Version: 1.0\r\n",
			"MIME-Version: 1.0\r\nList-Unsubscribe: <mailto:u@acme.com>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"))}, []string{"BULK_NO_ONE_CLICK"}},
		{"display name address", Input{Raw: []byte(variant(t, "From: Acme Billing <billing@mail.acme.com>", `From: "support@paypal.com" <billing@mail.acme.com>`))}, []string{"FROM_DISPLAY_NAME_SPOOF"}},
		{"display name domain", Input{Raw: []byte(variant(t, "From: Acme Billing", "From: PayPal.com Security"))}, []string{"FROM_DISPLAY_NAME_SPOOF"}},
		{"display name encoded", Input{Raw: []byte(variant(t, "From: Acme Billing", "From: =?utf-8?q?service=40paypal=2Ecom?="))}, []string{"FROM_DISPLAY_NAME_SPOOF"}},

		// Fields instead of Raw; fields win over Raw.
		{"fields override raw", Input{Subject: "FREE MONEY!!!", Raw: []byte(clean)}, []string{"SUBJECT_ALL_CAPS", "SUBJECT_EXCESS_PUNCTUATION", "SPAM_PHRASES"}},
		{"headers override raw", Input{Headers: map[string][]string{"Message-Id": {"nope"}}, Raw: []byte(clean)}, []string{"MESSAGE_ID_MISSING_OR_INVALID"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(tc.in)
			if got := ruleIDs(r); !slices.Equal(got, tc.want) {
				t.Fatalf("rules fired %v, want %v\nfindings: %+v", got, tc.want, r.Findings)
			}
			wantContent, wantSpam := Max(DimContent), Max(DimSpam)
			for _, id := range tc.want {
				rule := ruleByID(t, id)
				if rule.Dimension == DimContent {
					wantContent -= rule.Weight
				} else {
					wantSpam -= rule.Weight
				}
			}
			if r.Content != (Score{wantContent, Max(DimContent)}) || r.Spam != (Score{wantSpam, Max(DimSpam)}) {
				t.Errorf("scores content %+v spam %+v, want %d and %d", r.Content, r.Spam, wantContent, wantSpam)
			}
			for _, f := range r.Findings {
				rule := ruleByID(t, f.Rule)
				if f.Severity != rule.Severity || f.Category != rule.Dimension || !strings.HasPrefix(f.Message, rule.Describe) {
					t.Errorf("finding %+v does not match its rule", f)
				}
			}
			if len(tc.want) > 0 && len(r.Recommendations) == 0 {
				t.Errorf("no recommendation")
			}
		})
	}
}

func ruleByID(t *testing.T, id string) Rule {
	t.Helper()
	for _, r := range Rules {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no rule %s", id)
	return Rule{}
}

func TestFieldsOnly(t *testing.T) {
	r := Evaluate(Input{
		From:    "Acme Billing <billing@mail.acme.com>",
		Subject: "Your invoice for March is ready",
		Text:    cleanText,
		HTML:    "<p>Hello Jane,</p><p>your invoice for March is ready.</p>",
	})
	if r.Content != (Score{100, 100}) || r.Spam != (Score{100, 100}) {
		t.Fatalf("scores %+v %+v", r.Content, r.Spam)
	}
	want := []string{"DATE_MISSING_OR_INVALID", "MESSAGE_ID_MISSING_OR_INVALID"}
	if got := ruleIDs(r); !slices.Equal(got, want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
	for _, f := range r.Findings {
		if f.Severity != Info || !strings.HasPrefix(f.Message, "not checked") {
			t.Errorf("finding %+v, want an info 'not checked'", f)
		}
	}
	if len(r.Recommendations) != 0 {
		t.Errorf("recommendations %v", r.Recommendations)
	}
	// With Headers, they are checked.
	r = Evaluate(Input{From: "a@acme.com", Subject: "Hello there", Text: cleanText, Headers: map[string][]string{"X-Any": {"1"}}})
	if got := ruleIDs(r); !slices.Equal(got, want) || r.Content.Score != 80 {
		t.Fatalf("with headers: findings %v, content %+v", got, r.Content)
	}
}

func TestEverythingWrong(t *testing.T) {
	r := Evaluate(Input{Bulk: true, Raw: []byte("From: \"ceo@bank.com\" <x@evil.test>\r\nSubject: ACT NOW WINNER!!!\r\nContent-Type: text/html\r\n\r\n" +
		`<a href="http://bit.ly/a">click here</a> <a href="http://t.co/b"><img src="x"></a> <a href="http://goo.gl/c">x</a>`)})
	if r.Spam.Score != 0 && r.Spam.Score != Max(DimSpam)-95 {
		t.Errorf("spam score %+v", r.Spam)
	}
	if r.Spam.Score < 0 || r.Content.Score < 0 {
		t.Errorf("negative score %+v %+v", r.Content, r.Spam)
	}
	if len(r.Findings) < 8 {
		t.Errorf("findings %v", ruleIDs(r))
	}
}

func TestWeightsSumToMax(t *testing.T) {
	sums := map[string]int{}
	ids := map[string]bool{}
	for _, r := range Rules {
		if ids[r.ID] {
			t.Errorf("duplicate rule %s", r.ID)
		}
		ids[r.ID] = true
		if r.Dimension != DimContent && r.Dimension != DimSpam {
			t.Errorf("%s: dimension %q", r.ID, r.Dimension)
		}
		if r.Severity != Info && r.Severity != Warning && r.Severity != Critical {
			t.Errorf("%s: severity %q", r.ID, r.Severity)
		}
		if r.Weight < 0 || r.Check == nil || r.Describe == "" {
			t.Errorf("%s: incomplete rule", r.ID)
		}
		if r.Weight > 0 && r.Recommend == "" {
			t.Errorf("%s: no recommendation", r.ID)
		}
		sums[r.Dimension] += r.Weight
	}
	for _, d := range []string{DimContent, DimSpam} {
		if sums[d] != 100 || Max(d) != 100 {
			t.Errorf("%s: weights sum to %d, Max %d, want 100", d, sums[d], Max(d))
		}
	}
}

func TestHasPhrase(t *testing.T) {
	for _, tc := range []struct {
		s, p string
		want bool
	}{
		{"you are a winner", "winner", true},
		{"winners all", "winner", false},
		{"the-winner.", "winner", true},
		{"100% free!", "100% free", true},
		{"1100% free", "100% free", false},
		{"act\n  now", "act now", true},
		{"react now", "act now", false},
		{"clickhere", "click here", false},
		{"é winner é", "winner", true},
		{"éwinner", "winner", false},
	} {
		if got := hasPhrase(normalize(tc.s), tc.p); got != tc.want {
			t.Errorf("hasPhrase(%q, %q) = %v", tc.s, tc.p, got)
		}
	}
}

// TestLargeInputIsLinear guards against quadratic work on a large body.
func TestLargeInputIsLinear(t *testing.T) {
	body := strings.Repeat("winnerx click herex é ", 60000) // ~1.3 MB of near misses
	start := time.Now()
	r := Evaluate(Input{Raw: []byte(single("text/plain; charset=utf-8", body))})
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Evaluate took %v on %d bytes", d, len(body))
	}
	if got := ruleIDs(r); len(got) != 0 {
		t.Errorf("findings %v", got)
	}
}

func BenchmarkEvaluate(b *testing.B) {
	raw := []byte(clean)
	for b.Loop() {
		Evaluate(Input{Raw: raw})
	}
}

// TestParsedBodiesAreJudged: with Parsed, the rules judge the bodies the
// caller read, not the ones this package's own walk would pick. A text/html
// part with a file name is an attachment to the inbound parser; walked
// here, its spam phrase and shortened link would count.
func TestParsedBodiesAreJudged(t *testing.T) {
	raw := []byte("From: Ann <ann@sender.test>\r\nTo: b@example.test\r\nSubject: Your order\r\n" +
		"Date: Mon, 02 Mar 2026 10:15:00 +0000\r\nMessage-ID: <1@sender.test>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour order has shipped and will arrive on Monday.\r\n" +
		"--b\r\nContent-Type: text/html; name=\"offer.html\"\r\n\r\n<p>Act now: <a href=\"https://bit.ly/x\">offer</a></p>\r\n" +
		"--b--\r\n")
	walked := Evaluate(Input{Raw: raw})
	if walked.Spam.Score == walked.Spam.Max {
		t.Fatalf("the walk should have judged the named HTML part: %+v", walked.Spam)
	}
	parsed := Evaluate(Input{Raw: raw, Text: "Your order has shipped and will arrive on Monday.\r\n", Parsed: true,
		Broken: []string{"broken here"}, Charsets: []string{"ISO-8859-1"}})
	if parsed.Spam.Score != parsed.Spam.Max {
		t.Errorf("the parsed bodies have no spam signs, yet: %+v %+v", parsed.Spam, parsed.Findings)
	}
	var rules []string
	for _, f := range parsed.Findings {
		rules = append(rules, f.Rule)
	}
	if !slices.Contains(rules, "MIME_BROKEN") || !slices.Contains(rules, "CHARSET_NOT_UTF8") {
		t.Errorf("the caller's findings were not judged: %v", rules)
	}
}
