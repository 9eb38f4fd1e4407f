package mta

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	hard := func(c BounceCategory) Bounce { return Bounce{BounceHard, c} }
	soft := func(c BounceCategory) Bounce { return Bounce{BounceSoft, c} }
	block := func(c BounceCategory) Bounce { return Bounce{BounceBlock, c} }
	tests := []struct {
		code     int
		enhanced string
		text     string
		want     Bounce
	}{
		// Delivered is not a bounce.
		{250, "2.0.0", "OK: queued as 12345", Bounce{}},
		{250, "", "ok", Bounce{}},

		// The enhanced code decides (DESIGN.md's hard list).
		{550, "5.1.1", "<x@example.com>: Recipient address rejected: User unknown", hard(CategoryUnknownUser)},
		{550, "5.1.2", "Host or domain name not found", hard(CategoryBadDomain)},
		{553, "5.1.3", "Invalid address syntax", hard(CategoryBadAddress)},
		{550, "5.1.4", "Ambiguous address", hard(CategoryBadAddress)},
		{550, "5.1.6", "Mailbox has moved", hard(CategoryUnknownUser)},
		{0, "5.1.10", "example.com has a null MX", hard(CategoryNullMX)},
		{550, "5.2.1", "The email account that you tried to reach is disabled.", hard(CategoryMailboxDisabled)},
		{552, "5.2.2", "Mailbox full", soft(CategoryMailboxFull)},
		{452, "4.2.2", "The email account that you tried to reach is over quota.", soft(CategoryMailboxFull)},
		{552, "5.2.3", "Message exceeds local size limit", soft(CategoryMessageTooLarge)},
		{552, "5.3.4", "Message size exceeds fixed maximum message size", soft(CategoryMessageTooLarge)},
		{553, "5.1.8", "Sender address rejected: Domain not found", soft(CategorySenderRejected)},
		{554, "5.4.4", "Unable to route", soft(CategoryNoRoute)},
		{554, "5.4.7", "Delivery time expired", soft(CategoryExpired)},
		{552, "5.5.3", "Too many recipients", soft(CategoryProtocol)},
		{554, "5.6.1", "Media not supported", soft(CategoryContentRejected)},
		{554, "5.6.0", "Message rejected as spam", block(CategorySpamBlock)},
		{550, "5.2.9", "unassigned detail", soft(CategoryOther)},

		// Security and policy (X.7.x) is a block; the text names it.
		{554, "5.7.1", "Message rejected by policy", block(CategoryPolicy)},
		{554, "5.7.1", "Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org", block(CategorySpamBlock)},
		{550, "5.7.1", "Relaying denied", block(CategoryRelayDenied)},
		{554, "5.7.1", "<x@example.com>: Relay access denied", block(CategoryRelayDenied)},
		{535, "5.7.8", "Authentication credentials invalid", block(CategoryAuthFailed)},
		{502, "5.7.0", "Please authenticate first", block(CategoryAuthFailed)},
		{550, "5.7.26", "Unauthenticated email from example.com is not accepted due to domain's DMARC policy", block(CategoryPolicy)},
		{550, "5.7.0", "User unknown", block(CategoryPolicy)}, // X.7.x never becomes hard
		{550, "5.7.606", "Access denied, banned sending IP", block(CategoryPolicy)},

		// Every 4xx is soft, whatever it says.
		{421, "4.7.0", "Try again later, closing connection.", soft(CategoryPolicy)},
		{450, "4.7.1", "Client host rejected: blocked using bl.spamcop.net", soft(CategorySpamBlock)},
		{451, "4.3.0", "Temporary lookup failure", soft(CategoryTemporary)},
		{450, "4.1.1", "Recipient address rejected: unverified address", soft(CategoryUnknownUser)},
		{451, "4.4.1", "No answer from host", soft(CategoryNetwork)},
		{450, "4.2.0", "Greylisted, see https://postgrey.schweikert.ch/", soft(CategoryTemporary)},

		// Mailbolt's own failures (code 0): the class comes from the
		// enhanced code, and the text tells a timeout from the rest.
		{0, "4.4.1", "connect to 192.0.2.1:25: dial tcp 192.0.2.1:25: connect: connection refused", soft(CategoryNetwork)},
		{0, "4.4.1", "connect to 192.0.2.1:25: dial tcp 192.0.2.1:25: i/o timeout", soft(CategoryTimeout)},
		{0, "4.4.2", "timed out waiting for the server: read tcp: i/o timeout", soft(CategoryTimeout)},
		{0, "4.4.2", "connection lost: EOF", soft(CategoryNetwork)},
		{0, "4.4.3", "MX lookup failed", soft(CategoryTemporary)},
		{0, "4.4.4", "no address of the source's family", soft(CategoryNoRoute)},
		{0, "5.1.2", "example.test has no MX and no address records", hard(CategoryBadDomain)},
		{0, "5.4.4", "MX host has no address records", soft(CategoryNoRoute)},
		{0, "4.7.10", "STARTTLS with relay failed", soft(CategoryPolicy)},
		{0, "", "", soft(CategoryTemporary)},

		// "Other or undefined" details (X.Y.0) read the text.
		{550, "5.0.0", "User unknown", hard(CategoryUnknownUser)},
		{550, "5.1.0", "Address rejected: no such user here", hard(CategoryUnknownUser)},
		{550, "5.1.0", "Address rejected", soft(CategoryOther)},
		{550, "5.0.0", "Mailbox is full", soft(CategoryMailboxFull)},
		{554, "5.0.0", "Your message looks like SPAM", block(CategorySpamBlock)},

		// The enhanced code may sit in the text (RFC 2034), or in qmail's
		// "(#5.x.x)" form.
		{550, "", "5.1.1 <x@example.com>: Recipient address rejected", hard(CategoryUnknownUser)},
		{553, "", "sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)", block(CategoryRelayDenied)},
		{550, "", "5.1.1", hard(CategoryUnknownUser)},

		// No enhanced code: text patterns, then the basic code.
		{550, "", "No such user here", hard(CategoryUnknownUser)},
		{550, "", "Requested action not taken: mailbox unavailable", soft(CategoryOther)},
		{554, "", "Relay access denied", block(CategoryRelayDenied)},
		{550, "", "Message refused: sender IP listed at bl.example.org", block(CategorySpamBlock)},
		{552, "", "Message size exceeds maximum permitted", soft(CategoryMessageTooLarge)},
		{552, "", "Requested mail action aborted: exceeded storage allocation", soft(CategoryMailboxFull)},
		{550, "", "Account has been disabled", hard(CategoryMailboxDisabled)},
		{554, "", "Transaction failed", soft(CategoryOther)},
		{553, "", "Mailbox name not allowed", soft(CategoryOther)},
		{556, "", "Domain does not accept mail", soft(CategoryNoRoute)},
		{421, "", "Service not available", soft(CategoryTemporary)},
		{450, "", "Mailbox unavailable", soft(CategoryTemporary)},
		{452, "", "Insufficient system storage", soft(CategoryTemporary)},
		{550, "", "Helo command rejected: need fully-qualified hostname", block(CategoryPolicy)},

		// The basic code's class wins over a contradicting enhanced code.
		{550, "4.1.1", "User unknown", hard(CategoryUnknownUser)},
		{450, "5.1.1", "User unknown", soft(CategoryUnknownUser)},
		// A malformed enhanced code is ignored.
		{550, "5.1", "no such user", hard(CategoryUnknownUser)},
		{550, "9.1.1", "", soft(CategoryOther)},
	}
	for _, tt := range tests {
		if got := Classify(tt.code, tt.enhanced, tt.text); got != tt.want {
			t.Errorf("Classify(%d, %q, %q) = %+v, want %+v", tt.code, tt.enhanced, tt.text, got, tt.want)
		}
	}
}

// DESIGN.md: hard for 5.1.1–5.1.4, 5.1.6, 5.1.10, 5.2.1; block for 5.7.x;
// soft for the rest, every 4xx included — whatever the text says.
func TestClassifyFollowsDesign(t *testing.T) {
	hard := map[string]bool{"5.1.1": true, "5.1.2": true, "5.1.3": true, "5.1.4": true, "5.1.6": true, "5.1.10": true, "5.2.1": true}
	for subject := range 8 {
		for detail := range 30 {
			for _, class := range []int{4, 5} {
				enh := fmt.Sprintf("%d.%d.%d", class, subject, detail)
				for _, text := range []string{"", "user unknown", "blocked as spam", "relay denied", "mailbox full"} {
					got := Classify(class*100+50, enh, text).Type
					want := BounceSoft
					switch {
					case class == 4:
					case hard[enh]:
						want = BounceHard
					case subject == 7:
						want = BounceBlock
					case detail == 0:
						continue // "other or undefined": the text decides
					}
					if got != want {
						t.Errorf("Classify(%d, %s, %q) = %s, want %s", class*100+50, enh, text, got, want)
					}
				}
			}
		}
	}
}

func TestParseEnhanced(t *testing.T) {
	for s, ok := range map[string]bool{
		"5.1.1": true, "4.7.0": true, "2.0.0": true, "5.1.10": true, "5.7.606": true,
		"": false, "5.1": false, "5.1.1.1": false, "3.1.1": false, "55.1.1": false, "5.1234.1": false,
		"5.a.1": false, "5..1": false, "-5.1.1": false, "5.1.-1": false,
	} {
		if _, got := parseEnhanced(s); got != ok {
			t.Errorf("parseEnhanced(%q) ok = %v, want %v", s, got, ok)
		}
	}
	if e, rest := splitEnhanced("2.0.0 Ok: queued as 1A2B"); e != "2.0.0" || rest != "Ok: queued as 1A2B" {
		t.Errorf("splitEnhanced = %q, %q", e, rest)
	}
	if e, rest := splitEnhanced("Ok"); e != "" || rest != "Ok" {
		t.Errorf("splitEnhanced = %q, %q", e, rest)
	}
}

func FuzzClassify(f *testing.F) {
	f.Add(550, "5.1.1", "User unknown")
	f.Add(421, "", "4.7.0 try later")
	f.Add(0, "", "(#5.7.1)")
	f.Fuzz(func(t *testing.T, code int, enhanced, text string) {
		b := Classify(code, enhanced, text)
		if code/100 == 2 {
			if b != (Bounce{}) {
				t.Fatalf("2xx classified %+v", b)
			}
			return
		}
		switch b.Type {
		case BounceHard, BounceBlock:
			if code/100 == 4 {
				t.Fatalf("4xx classified %+v", b)
			}
		case BounceSoft:
		case "":
			// Only a 2xx, from the code or (code 0) from the enhanced code.
			if code != 0 || b.Category != "" {
				t.Fatalf("empty type %+v for %d %q", b, code, enhanced)
			}
			return
		default:
			t.Fatalf("type %q", b.Type)
		}
		if b.Category == "" {
			t.Fatalf("no category for %d %q %q", code, enhanced, text)
		}
	})
}

// docs/bounces.md prints the tables; this keeps it from drifting.
func TestBounceDocShowsTables(t *testing.T) {
	doc, err := os.ReadFile("../docs/bounces.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, r := range textRules {
		row := fmt.Sprintf("| `%s` | `%s` |", r.category, strings.ReplaceAll(r.pattern.String(), "|", `\|`))
		if !strings.Contains(text, row) {
			t.Errorf("docs/bounces.md lacks the text pattern row %s", row)
		}
	}
	for code, rule := range codeRules {
		if !strings.Contains(text, fmt.Sprintf("| X.%s |", code)) || !strings.Contains(text, fmt.Sprintf("| `%s` |", rule.category)) {
			t.Errorf("docs/bounces.md lacks X.%s → %s", code, rule.category)
		}
	}
	for code, cat := range basicRules {
		if !regexp.MustCompile(fmt.Sprintf(`\| %d \|[^\n]*\| `+"`%s`"+` \|`, code, cat)).MatchString(text) {
			t.Errorf("docs/bounces.md lacks basic code %d → %s", code, cat)
		}
	}
}
