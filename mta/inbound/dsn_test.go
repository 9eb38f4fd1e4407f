package inbound

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/textproto"
)

func fixture(t testing.TB, kind, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", kind, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureNames(t testing.TB, kind string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "..", "testdata", kind, "*.eml"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no %s fixtures: %v", kind, err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// dsnWant is a DSN without its header block, which is checked through one
// field (subject).
type dsnWant struct {
	dsn     DSN
	subject string // Subject of the returned header
	verp    string // message id from OriginalSender; "" for none
}

var dsnCases = map[string]dsnWant{
	"postfix-user-unknown.eml": {
		dsn: DSN{
			ReportingMTA: "mail.example.net",
			ArrivalDate:  utc("2025-03-04T10:14:58Z"),
			Recipients: []DSNRecipient{{
				FinalRecipient:    "nobody@example.org",
				OriginalRecipient: "nobody@example.org",
				Action:            "failed",
				Status:            "5.1.1",
				DiagnosticCode:    "smtp; 550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown in virtual mailbox table",
				RemoteMTA:         "mx.example.org",
				SMTPCode:          550,
			}},
			OriginalMessageID: "<0195a1b2-aaaa-7bbb-8ccc-000000001042@example.com>",
			OriginalSender:    "b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com",
		},
		subject: "Your order #1042 has shipped",
		verp:    "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
	},
	"exim-no-such-user.eml": {
		dsn: DSN{
			ReportingMTA: "mx.example.net",
			Recipients: []DSNRecipient{{
				FinalRecipient: "gone@example.net",
				Action:         "failed",
				Status:         "5.0.0",
				DiagnosticCode: "smtp; 550 No Such User Here",
				RemoteMTA:      "mail.example.net",
				SMTPCode:       550,
			}},
			OriginalMessageID: "<0195a1b3-1111-7222-8333-444455556666@example.com>",
		},
		subject: "Reset your password",
	},
	"gmail-no-such-user.eml": {
		dsn: DSN{
			ReportingMTA: "googlemail.com",
			ArrivalDate:  utc("2025-03-04T10:13:05Z"),
			Recipients: []DSNRecipient{{
				FinalRecipient: "ghost@example.org",
				Action:         "failed",
				Status:         "5.1.1",
				DiagnosticCode: "smtp; 550-5.1.1 The email account that you tried to reach does not exist. Please try " +
					"550-5.1.1 double-checking the recipient's email address for typos or " +
					"550-5.1.1 unnecessary spaces. For more information, go to " +
					"550 5.1.1  https://support.google.com/mail/?p=NoSuchUser a1b2c3d4e5f6-7a8b9c0d1e2sor1234567a12.2 - gsmtp",
				RemoteMTA:       "mx.example.org",
				SMTPCode:        550,
				LastAttemptDate: utc("2025-03-04T10:13:07Z"),
			}},
			OriginalMessageID: "<0195a1b4-2222-7333-8444-555566667777@example.com>",
		},
		subject: "Welcome to Example Shop",
	},
	"outlook-recipient-not-found.eml": {
		dsn: DSN{
			ReportingMTA: "am9pr01mb1234.eurprd01.prod.outlook.com",
			ArrivalDate:  utc("2025-03-04T12:01:43Z"),
			Recipients: []DSNRecipient{{
				FinalRecipient: "Ghost@example.org",
				Action:         "failed",
				Status:         "5.1.10",
				DiagnosticCode: "smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient Ghost@Example.ORG not found by SMTP address lookup",
				SMTPCode:       550,
			}},
			OriginalMessageID: "<0195a1b5-3333-7444-8555-666677778888@example.com>",
			OriginalSender:    "b+0195a1b5deadbeef8000000000002087@bounces.example.com",
		},
		subject: "Your order #2087 has shipped",
		verp:    "0195a1b5-dead-beef-8000-000000002087",
	},
	"yahoo-mailbox-disabled.eml": {
		dsn: DSN{
			ReportingMTA: "atlas320.free.mail.ne1.yahoo.com",
			ArrivalDate:  utc("2025-03-04T12:45:09Z"),
			Recipients: []DSNRecipient{{
				FinalRecipient: "closed@example.net",
				Action:         "failed",
				Status:         "5.0.0",
				DiagnosticCode: "smtp; 554 delivery error: dd Sorry, your message to closed@example.net cannot be delivered. " +
					"This mailbox is disabled (554.30). - atlas320.free.mail.ne1.yahoo.com",
				RemoteMTA: "mta7.am0.yahoodns.net",
				SMTPCode:  554,
			}},
			OriginalMessageID: "<0195a1b6-4444-7555-8666-777788889999@example.com>",
		},
		subject: "Your receipt",
	},
	"postfix-delayed.eml": {
		dsn: DSN{
			ReportingMTA: "relay.example.net",
			ArrivalDate:  utc("2025-03-04T08:00:12Z"),
			Recipients: []DSNRecipient{{
				FinalRecipient:    "slow@example.org",
				OriginalRecipient: "slow@example.org",
				Action:            "delayed",
				Status:            "4.4.1",
				DiagnosticCode:    "X-Postfix; connect to mx.example.org[192.0.2.30]:25: Connection timed out",
				WillRetryUntil:    utc("2025-03-09T08:00:12Z"),
			}},
			OriginalMessageID: "<0195a1b7-5555-7666-8777-88889999aaaa@example.com>",
			OriginalSender:    "b+0195a1b7000071118222333344445555@bounces.example.com",
		},
		subject: "Your invoice for March",
		verp:    "0195a1b7-0000-7111-8222-333344445555",
	},
	"sendmail-multi-recipient.eml": {
		dsn: DSN{
			ReportingMTA: "smtp.example.net",
			ArrivalDate:  utc("2025-03-04T13:03:30Z"),
			Recipients: []DSNRecipient{{
				FinalRecipient:  "ann@example.org",
				Action:          "failed",
				Status:          "5.1.1",
				DiagnosticCode:  "SMTP; 550 5.1.1 <ann@example.org>... User unknown",
				RemoteMTA:       "mx.example.org",
				SMTPCode:        550,
				LastAttemptDate: utc("2025-03-04T13:03:37Z"),
			}, {
				FinalRecipient:  "Bob@example.org",
				Action:          "failed",
				Status:          "5.2.2",
				DiagnosticCode:  "SMTP; 552 5.2.2 Mailbox full",
				RemoteMTA:       "mx.example.org",
				SMTPCode:        552,
				LastAttemptDate: utc("2025-03-04T13:03:37Z"),
			}, {
				FinalRecipient:    "carol@example.org",
				OriginalRecipient: "carol@example.org",
				Action:            "failed",
				Status:            "5.7.1",
				DiagnosticCode:    "SMTP; 550 5.7.1 Message rejected due to content restrictions",
				RemoteMTA:         "mx.example.org",
				SMTPCode:          550,
				LastAttemptDate:   utc("2025-03-04T13:03:37Z"),
			}},
			OriginalMessageID: "<0195a1b8-6666-7777-8888-9999aaaabbbb@example.com>",
			OriginalSender:    "b+0195a1b8aaaa7bbb8ccc0000000000c3@bounces.example.com",
		},
		subject: "Team meeting notes",
		verp:    "0195a1b8-aaaa-7bbb-8ccc-0000000000c3",
	},
	"rfc3464-simple.eml": {
		dsn: DSN{
			ReportingMTA: "cs.utk.edu",
			Recipients: []DSNRecipient{{
				FinalRecipient:    "louisl@larry.slip.umd.edu",
				OriginalRecipient: "louisl@larry.slip.umd.edu",
				Action:            "failed",
				Status:            "4.0.0",
				DiagnosticCode:    "smtp; 426 connection timed out",
				SMTPCode:          426,
				LastAttemptDate:   utc("1994-07-07T21:15:49Z"),
			}},
		},
	},
	"nested-text-delivery-status.eml": {
		dsn: DSN{
			ReportingMTA: "gw.example.net",
			ArrivalDate:  utc("2025-03-04T14:09:50Z"),
			Recipients: []DSNRecipient{{
				FinalRecipient: "Dora@example.net",
				Action:         "failed",
				Status:         "5.2.2",
				DiagnosticCode: "smtp; 552 5.2.2 Postfach voll / mailbox full, quota exceeded for this user",
				SMTPCode:       552,
			}, {
				FinalRecipient: "ed@example.net",
				Action:         "failed",
				Status:         "5.1.1", // no Status field: from the diagnostic
				DiagnosticCode: "smtp; 550 5.1.1 <ed@example.net>: Benutzer unbekannt / user unknown",
				RemoteMTA:      "mx2.example.net",
				SMTPCode:       550,
			}},
			OriginalMessageID: "<0195a1b9-7777-7888-8999-aaaabbbbcccc@example.com>",
		},
		subject: "Ihre Bestellung \xfcber 42 \x80", // Latin-1 bytes, kept as they came
	},
}

func TestParseDSNFixtures(t *testing.T) {
	for _, name := range fixtureNames(t, "dsn") {
		want, ok := dsnCases[name]
		if !ok {
			t.Errorf("fixture %s has no test case", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			d, err := ParseDSN(bytes.NewReader(fixture(t, "dsn", name)))
			if err != nil {
				t.Fatal(err)
			}
			if got := d.OriginalHeaders.Get("Subject"); got != want.subject {
				t.Errorf("returned Subject = %q, want %q", got, want.subject)
			}
			got := *d
			got.OriginalHeaders = textproto.Header{}
			if !reflect.DeepEqual(got, want.dsn) {
				t.Errorf("got  %+v\nwant %+v", got, want.dsn)
			}
			id, ok := d.VERPMessageID()
			if id != want.verp || ok != (want.verp != "") {
				t.Errorf("VERPMessageID = %q, %v; want %q", id, ok, want.verp)
			}
			checkDSN(t, d)
		})
	}
}

// checkDSN asserts what every successful ParseDSN result must satisfy.
func checkDSN(t testing.TB, d *DSN) {
	t.Helper()
	if len(d.Recipients) == 0 {
		t.Fatalf("DSN without recipients: %+v", d)
	}
	for i, r := range d.Recipients {
		if r.FinalRecipient == "" {
			t.Errorf("recipient %d without an address: %+v", i, r)
		}
		if !actions[r.Action] {
			t.Errorf("recipient %d: action %q", i, r.Action)
		}
		if findStatus(r.Status) != r.Status {
			t.Errorf("recipient %d: status %q is not an enhanced status code", i, r.Status)
		}
		if r.SMTPCode != 0 && (r.SMTPCode < 200 || r.SMTPCode > 599) {
			t.Errorf("recipient %d: SMTP code %d", i, r.SMTPCode)
		}
	}
	if id := d.OriginalMessageID; id != "" && (!strings.HasPrefix(id, "<") || !strings.HasSuffix(id, ">") || len(id) < 3) {
		t.Errorf("OriginalMessageID %q is not bracketed", id)
	}
	if id, ok := d.VERPMessageID(); ok && len(id) != 36 {
		t.Errorf("VERP message id %q", id)
	}
}

func TestParseDSNNotADSN(t *testing.T) {
	cases := map[string]string{
		"empty":      "",
		"plain mail": "From: a@example.com\r\nTo: b@example.org\r\nSubject: hi\r\n\r\nHello.\r\n",
		"garbage":    "\x00\x01 not a message at all",
		"no recipient": "Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n" +
			"--b\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.net\n\n--b--\n",
		"recipient without action, status or code": "Content-Type: message/delivery-status\n\n" +
			"Reporting-MTA: dns; mx.example.net\n\nFinal-Recipient: rfc822; a@example.org\nDiagnostic-Code: x-local; gone\n",
		"plain-text bounce": "From: MAILER-DAEMON@example.net\nSubject: failure notice\n\n" +
			"Hi. This is the qmail-send program at example.net.\n<a@example.org>:\nSorry, no mailbox here by that name. (#5.1.1)\n",
	}
	for _, name := range fixtureNames(t, "arf") {
		cases["ARF "+name] = string(fixture(t, "arf", name))
	}
	for name, msg := range cases {
		d, err := ParseDSN(strings.NewReader(msg))
		if !errors.Is(err, ErrNotDSN) || d != nil {
			t.Errorf("%s: got %+v, %v; want ErrNotDSN", name, d, err)
		}
	}
}

func TestParseDSNVariants(t *testing.T) {
	cases := []struct {
		name, msg string
		want      []DSNRecipient
	}{{
		// A bare status part as the whole message, blank lines doubled,
		// whitespace-only separator lines, Original-Recipient alone.
		name: "bare part",
		msg: "Content-Type: message/delivery-status\n\n\n" +
			"Reporting-MTA: dns; mx.example.net\n \n\n" +
			"Original-Recipient: rfc822; <A@Example.Org>\nStatus: 5.1.1\n\t\n" +
			"Final-Recipient: rfc822; b@example.org\nAction: DELAYED (will retry)\nStatus: 4.2.2\n",
		want: []DSNRecipient{
			{FinalRecipient: "A@example.org", OriginalRecipient: "A@example.org", Action: "failed", Status: "5.1.1"},
			{FinalRecipient: "b@example.org", Action: "delayed", Status: "4.2.2"},
		},
	}, {
		name: "status from the SMTP code, qmail code, folding without indentation, spaces before the colon",
		msg: "Content-Type: message/delivery-status\n\n" +
			"Final-Recipient: rfc822;a@example.org\nDiagnostic-Code: smtp; 552 over quota\n\n" +
			"Final-Recipient: rfc822;b@example.org\nDiagnostic-Code: smtp; 553 sorry, that domain isn't in\nmy list of allowed rcpthosts (#5.7.1)\n\n" +
			"Final-Recipient: rfc822;c@example.org\nAction: failed\n\n" +
			"final-recipient : rfc822;d@example.org\nSTATUS : 4.4.7\n",
		want: []DSNRecipient{
			{FinalRecipient: "a@example.org", Action: "failed", Status: "5.0.0", DiagnosticCode: "smtp; 552 over quota", SMTPCode: 552},
			{FinalRecipient: "b@example.org", Action: "failed", Status: "5.7.1", DiagnosticCode: "smtp; 553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)", SMTPCode: 553},
			{FinalRecipient: "c@example.org", Action: "failed", Status: "5.0.0"},
			{FinalRecipient: "d@example.org", Action: "delayed", Status: "4.4.7"},
		},
	}, {
		name: "an IP address is not a status; broken Content-Type parameters",
		msg: "Content-Type: multipart/report; report-type=delivery-status; boundary=\"b\"; boundary=\"b\"\n\n" +
			"--b\nContent-Type: message/delivery-status\n\n" +
			"Final-Recipient: rfc822;a@example.org\nAction: failed\nStatus: failed\n" +
			"Diagnostic-Code: smtp; 550 host [5.1.1.1] said no\n--b--\n",
		want: []DSNRecipient{
			{FinalRecipient: "a@example.org", Action: "failed", Status: "5.0.0", DiagnosticCode: "smtp; 550 host [5.1.1.1] said no", SMTPCode: 550},
		},
	}, {
		name: "base64 status part",
		msg: "Content-Type: multipart/report; boundary=b\n\n--b\nContent-Type: message/delivery-status\n" +
			"Content-Transfer-Encoding: base64\n\nRmluYWwtUmVjaXBpZW50OiBhQGIKQWN0aW9uOiBmYWlsZWQK\n--b--\n",
		want: []DSNRecipient{{FinalRecipient: "a@b", Action: "failed", Status: "5.0.0"}},
	}}
	for _, c := range cases {
		d, err := ParseDSN(strings.NewReader(c.msg))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(d.Recipients, c.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", c.name, d.Recipients, c.want)
		}
		checkDSN(t, d)
	}
}

func TestDiagnosticText(t *testing.T) {
	for in, want := range map[string]string{
		"smtp; 550 5.1.1 user unknown": "550 5.1.1 user unknown",
		"SMTP;552 Mailbox full":        "552 Mailbox full",
		"550 no type":                  "550 no type",
		"":                             "",
	} {
		if got := (DSNRecipient{DiagnosticCode: in}).DiagnosticText(); got != want {
			t.Errorf("DiagnosticText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDSNTruncated(t *testing.T) {
	// MTAs cut long returned messages, and mail can be cut in transit: what
	// came before the cut is still read.
	full := string(fixture(t, "dsn", "postfix-user-unknown.eml"))
	for _, cut := range []string{"Your order #1042 is on its way.", "MIME-Version: 1.0\nContent-Type: text/plain", "Received: from mta.example.com"} {
		msg := full[:strings.Index(full, cut)]
		d, err := ParseDSN(strings.NewReader(msg))
		if err != nil {
			t.Fatalf("cut before %q: %v", cut, err)
		}
		checkDSN(t, d)
		if d.Recipients[0].Status != "5.1.1" {
			t.Errorf("cut before %q: %+v", cut, d.Recipients)
		}
	}
	// Cut inside the status part: the groups read so far count.
	msg := full[:strings.Index(full, "Remote-MTA: dns; mx.example.org")]
	d, err := ParseDSN(strings.NewReader(msg))
	if err != nil || d.Recipients[0].Action != "failed" || d.OriginalMessageID != "" {
		t.Errorf("cut in the status part: %+v, %v", d, err)
	}
}
