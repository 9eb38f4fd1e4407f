package inbound

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/emersion/go-message/textproto"
)

// arfWant is a Feedback without its two header values, which are checked
// through a few fields.
type arfWant struct {
	fb     Feedback
	fields map[string]string // feedback-report fields by name
	verp   string
}

var arfCases = map[string]arfWant{
	"rfc5965-example.eml": {
		fb: Feedback{
			FeedbackType:          "abuse",
			UserAgent:             "SomeGenerator/1.0",
			Version:               "1",
			OriginalMailFrom:      "somespammer@example.net",
			OriginalRcptTo:        []string{"user@example.com"},
			ArrivalDate:           utc("2005-03-08T18:00:00Z"), // 14:00 EDT
			ReportingMTA:          "mail.example.com",
			SourceIP:              "192.0.2.1",
			Incidents:             1,
			ReportedDomains:       []string{"example.net"},
			ReportedURIs:          []string{"http://example.net/earn_money.html", "mailto:user@example.com"},
			AuthenticationResults: []string{"mail.example.com; spf=fail smtp.mail=somespammer@example.com"},
			OriginalMessageID:     "<8787KJKJ3K4J3K4J3K4J3.mail@example.net>",
		},
		fields: map[string]string{"Removal-Recipient": "user@example.com", "reported-uri": "http://example.net/earn_money.html"},
	},
	"yahoo-abuse.eml": {
		fb: Feedback{
			FeedbackID:       "<1741105204.3391.1a2b3c4d@arf.mail.yahoo.com>",
			FeedbackType:     "abuse",
			UserAgent:        "Yahoo!-Mail-Feedback/2.0",
			Version:          "0.1",
			OriginalMailFrom: "b+0195a1c0abcdef0123456789abcdef01@bounces.example.com",
			OriginalRcptTo:   []string{"reader@yahoo.example"},
			ArrivalDate:      utc("2025-03-04T16:02:11Z"),
			SourceIP:         "198.51.100.7",
			Incidents:        1,
			ReportedDomains:  []string{"example.com"},
			AuthenticationResults: []string{"atlas210.free.mail.bf1.yahoo.com; dkim=pass header.i=@example.com header.s=mb1; " +
				"spf=pass smtp.mailfrom=bounces.example.com; dmarc=pass(p=REJECT) header.from=example.com;"},
			OriginalMessageID: "<0195a1c0-aaaa-7bbb-8ccc-dddd00000001@example.com>",
			OriginalTo:        []string{"reader@yahoo.example"},
		},
		verp: "0195a1c0-abcd-ef01-2345-6789abcdef01",
	},
	"aol-redacted.eml": {
		fb: Feedback{
			FeedbackID:         "<202503042231.7e2d1f4a9b@scomp.aol.net>",
			FeedbackType:       "abuse",
			UserAgent:          "AOL SComp",
			Version:            "0.1",
			ArrivalDate:        utc("2025-03-04T22:20:40Z"),
			SourceIP:           "198.51.100.7",
			Incidents:          1,
			ReportedDomains:    []string{"example.com"},
			OriginalMessageID:  "<0195a1c1-bbbb-7ccc-8ddd-eeee00000002@example.com>",
			OriginalTo:         []string{"redacted@aol.com"},
			OriginalReturnPath: "b+0195a1c1000070008000feedbac00042@bounces.example.com",
		},
		fields: map[string]string{"Redacted-Address": "redacted@"},
		verp:   "0195a1c1-0000-7000-8000-feedbac00042",
	},
	"microsoft-jmrp.eml": {
		fb: Feedback{
			FeedbackID:         "<JMRP-7b1e0d44-93a5-4c1f-8e2b-5d6c7a8b9c0d@hotmail.com>",
			FeedbackType:       "abuse",
			UserAgent:          "Hotmail FBL",
			Version:            "0.1",
			OriginalMailFrom:   "b+0195a1c2111172228333444455556666@bounces.example.com",
			OriginalRcptTo:     []string{"reader@outlook.example"},
			ArrivalDate:        utc("2025-03-05T02:12:55Z"),
			SourceIP:           "198.51.100.7",
			Incidents:          1,
			ReportedDomains:    []string{"example.com"},
			OriginalMessageID:  "<0195a1c2-cccc-7ddd-8eee-ffff00000003@example.com>",
			OriginalTo:         []string{"reader@outlook.example"},
			OriginalReturnPath: "b+0195a1c2111172228333444455556666@bounces.example.com",
		},
		verp: "0195a1c2-1111-7222-8333-444455556666",
	},
	"auth-failure-headers.eml": {
		fb: Feedback{
			FeedbackID:         "<ruf-20250304190500-0042@mx.example.org>",
			FeedbackType:       "auth-failure",
			UserAgent:          "ExampleFilter/3.2",
			Version:            "1",
			OriginalMailFrom:   "b+0195A1C3DDDD7EEE8FFF000000000004@bounces.example.com",
			OriginalRcptTo:     []string{"first@example.org", "second@example.org"},
			OriginalEnvelopeID: "0195a1c3-envid",
			ArrivalDate:        utc("2025-03-04T19:04:31Z"),
			ReportingMTA:       "mx.example.org",
			SourceIP:           "203.0.113.99",
			Incidents:          3,
			ReportedDomains:    []string{"example.com"},
			AuthenticationResults: []string{"mx.example.org; dkim=fail header.d=example.com; " +
				"spf=fail smtp.mailfrom=bounces.example.com; dmarc=fail header.from=example.com"},
			OriginalMessageID: "<0195a1c3-dddd-7eee-8fff-000000000004@example.com>",
			OriginalTo:        []string{"first@example.org", "second@example.org"},
		},
		fields: map[string]string{"Auth-Failure": "dmarc", "Delivery-Result": "reject", "DKIM-Selector": "mb1"},
		verp:   "0195a1c3-dddd-7eee-8fff-000000000004",
	},
}

func TestParseARFFixtures(t *testing.T) {
	for _, name := range fixtureNames(t, "arf") {
		want, ok := arfCases[name]
		if !ok {
			t.Errorf("fixture %s has no test case", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			fb, err := ParseARF(bytes.NewReader(fixture(t, "arf", name)))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range want.fields {
				if got := fb.Fields.Get(k); got != v {
					t.Errorf("field %s = %q, want %q", k, got, v)
				}
			}
			if got, want := fb.Fields.Get("Feedback-Type"), want.fb.FeedbackType; !strings.EqualFold(got, want) {
				t.Errorf("Fields Feedback-Type = %q, want %q", got, want)
			}
			if fb.OriginalHeaders.Get("From") == "" {
				t.Errorf("returned header has no From")
			}
			got := *fb
			got.Fields, got.OriginalHeaders = textproto.Header{}, textproto.Header{}
			if !reflect.DeepEqual(got, want.fb) {
				t.Errorf("got  %+v\nwant %+v", got, want.fb)
			}
			id, ok := fb.VERPMessageID()
			if id != want.verp || ok != (want.verp != "") {
				t.Errorf("VERPMessageID = %q, %v; want %q", id, ok, want.verp)
			}
			checkARF(t, fb)
		})
	}
}

// checkARF asserts what every successful ParseARF result must satisfy.
func checkARF(t testing.TB, fb *Feedback) {
	t.Helper()
	if fb.FeedbackType == "" || fb.FeedbackType != strings.ToLower(fb.FeedbackType) {
		t.Errorf("feedback type %q", fb.FeedbackType)
	}
	if fb.Incidents < 1 {
		t.Errorf("incidents %d", fb.Incidents)
	}
	if fb.Fields.Len() == 0 {
		t.Errorf("no fields")
	}
	for _, id := range []string{fb.FeedbackID, fb.OriginalMessageID} {
		if id != "" && (!strings.HasPrefix(id, "<") || !strings.HasSuffix(id, ">") || len(id) < 3) {
			t.Errorf("message id %q is not bracketed", id)
		}
	}
	for _, a := range append(append([]string{}, fb.OriginalRcptTo...), fb.OriginalTo...) {
		if a == "" {
			t.Errorf("empty address in %+v", fb)
		}
	}
}

func TestParseARFNotARF(t *testing.T) {
	cases := map[string]string{
		"empty":      "",
		"plain mail": "From: a@example.com\nTo: b@example.org\nSubject: spam?\n\nThis looks like spam to me.\n",
		"forwarded without a report": "Content-Type: multipart/mixed; boundary=b\n\n" +
			"--b\nContent-Type: text/plain\n\nsee attached\n--b\nContent-Type: message/rfc822\n\nFrom: x@example.com\nSubject: spam\n\nbuy\n--b--\n",
		"empty report part": "Content-Type: multipart/report; report-type=feedback-report; boundary=b\n\n" +
			"--b\nContent-Type: message/feedback-report\n\n\n--b--\n",
	}
	for _, name := range fixtureNames(t, "dsn") {
		cases["DSN "+name] = string(fixture(t, "dsn", name))
	}
	for name, msg := range cases {
		fb, err := ParseARF(strings.NewReader(msg))
		if !errors.Is(err, ErrNotARF) || fb != nil {
			t.Errorf("%s: got %+v, %v; want ErrNotARF", name, fb, err)
		}
	}
}

func TestParseARFNested(t *testing.T) {
	// A report forwarded inside multipart/mixed, without Feedback-Type,
	// with an unreadable Incidents and a To that does not parse.
	msg := "Message-ID: <outer@example.net>\nContent-Type: multipart/mixed; boundary=o\n\n" +
		"--o\nContent-Type: text/plain\n\nforwarded\n" +
		"--o\nContent-Type: multipart/report; boundary=i\n\n" +
		"--i\nContent-Type: message/feedback-report\n\nUser-Agent: x/1\nIncidents: many\n\nOriginal-Rcpt-To: R@Example.ORG\n" +
		"--i\nContent-Type: text/rfc822-headers\n\nTo: broken <<a@Example.COM>, b@example.com\nMessage-Id: <m@example.com>\n" +
		"--i--\n--o--\n"
	fb, err := ParseARF(strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	checkARF(t, fb)
	if fb.FeedbackID != "<outer@example.net>" || fb.FeedbackType != "other" || fb.Incidents != 1 ||
		!reflect.DeepEqual(fb.OriginalRcptTo, []string{"R@example.org"}) || fb.OriginalMessageID != "<m@example.com>" ||
		!reflect.DeepEqual(fb.OriginalTo, []string{"a@example.com", "b@example.com"}) {
		t.Errorf("got %+v", fb)
	}
}
