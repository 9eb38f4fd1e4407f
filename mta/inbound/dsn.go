package inbound

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-message/textproto"
)

// ErrNotDSN is returned (wrapped) by ParseDSN for mail that is not a
// delivery status notification, or one without a usable recipient.
var ErrNotDSN = errors.New("inbound: not a delivery status notification")

// DSN is a delivery status notification (RFC 3464).
type DSN struct {
	// ReportingMTA is the host name of the MTA that wrote the report, from
	// Reporting-MTA without its type, comments or trailing dot, in lower
	// case ("mx1.example.net").
	ReportingMTA string
	// ArrivalDate is when the reporting MTA received the original message;
	// zero when absent or unreadable.
	ArrivalDate time.Time
	// OriginalEnvelopeID is the ENVID the sender gave (RFC 3461), as given.
	OriginalEnvelopeID string
	// Recipients has one entry per recipient the report is about, in
	// order; never empty.
	Recipients []DSNRecipient

	// OriginalMessageID is the Message-ID of the returned message or
	// header, in angle brackets as in the header ("<id@example.com>"); ""
	// when the report returned neither or the header had none.
	OriginalMessageID string
	// OriginalSender is the original envelope sender when the report shows
	// it, as a bare address: the returned header's Return-Path, or else
	// Postfix's per-message X-Postfix-Sender field. "" when not shown (most
	// MTAs return the header as it was sent, before a Return-Path was
	// added).
	OriginalSender string
	// OriginalHeaders is the header block of the returned message
	// (message/rfc822 or text/rfc822-headers part), read leniently; empty
	// when the report returned neither. Get returns a field's first value.
	OriginalHeaders textproto.Header
}

// DSNRecipient is one recipient's group of fields in a DSN.
type DSNRecipient struct {
	// FinalRecipient is the address the reporting MTA tried, and
	// OriginalRecipient the one the sender gave (often absent): bare
	// addresses, the "rfc822;" type removed, the domain in lower case.
	// When a report has only an Original-Recipient, it is used for both.
	FinalRecipient    string
	OriginalRecipient string
	// Action is "failed", "delayed", "delivered", "relayed" or
	// "expanded". When the field is absent or holds anything else, it is
	// derived from Status's class: 5 failed, 4 delayed, 2 delivered.
	Action string
	// Status is the enhanced status code, "5.1.1". When the field is
	// absent or unreadable, it is the code found in the diagnostic
	// ("550 5.1.1 …"), else the class of the diagnostic's SMTP code
	// ("5.0.0"), else the class Action implies.
	Status string
	// DiagnosticCode is the Diagnostic-Code field as given, type included
	// ("smtp; 550 5.1.1 user unknown"), unfolded.
	DiagnosticCode string
	// RemoteMTA is the host name in Remote-MTA, read like ReportingMTA
	// ("mx.example.org"); "" when absent.
	RemoteMTA string
	// SMTPCode is the basic reply code at the start of a diagnostic of
	// type smtp (or of no type); 0 when there is none.
	SMTPCode int
	// LastAttemptDate and WillRetryUntil are zero when absent or
	// unreadable. WillRetryUntil comes with delayed reports.
	LastAttemptDate time.Time
	WillRetryUntil  time.Time
}

// DiagnosticText is the diagnostic without its type: "550 5.1.1 user
// unknown" for "smtp; 550 5.1.1 user unknown".
func (r DSNRecipient) DiagnosticText() string {
	_, text := typedValue(r.DiagnosticCode)
	return text
}

// VERPMessageID returns the message id carried by the original envelope
// sender when the report shows it (see OriginalSender and ParseVERP). The
// listener's first source of the id is the DSN's own envelope recipient,
// which is the original message's envelope sender.
func (d *DSN) VERPMessageID() (string, bool) {
	v, ok := ParseVERP(d.OriginalSender)
	return v.MessageID, ok
}

// dsnTypes are the media types of a delivery-status part: RFC 3464's,
// RFC 6533's for internationalized addresses, and text/delivery-status,
// which some MTAs send instead.
var dsnTypes = map[string]bool{
	"message/delivery-status":        true,
	"message/global-delivery-status": true,
	"text/delivery-status":           true,
}

// ParseDSN reads a delivery status notification: a message with a
// delivery-status part, normally the second part of a
// multipart/report; report-type=delivery-status, possibly nested in
// another multipart. The report-type parameter is not required.
//
// The first group of fields is the per-message one; every group that has a
// Final-Recipient or an Original-Recipient is a recipient (a report that
// puts its first recipient's fields in the per-message group, without a
// blank line between, is read too). A recipient group is dropped when
// neither an action nor a status can be found for it.
//
// Mail without a delivery-status part, or whose part has no recipient,
// gives an error wrapping ErrNotDSN.
func ParseDSN(r io.Reader) (*DSN, error) {
	f := walk(r, func(mt string) bool { return dsnTypes[mt] })
	if !f.reportSeen {
		return nil, fmt.Errorf("%w: no delivery-status part", ErrNotDSN)
	}
	groups := readGroups(f.report)
	d := &DSN{}
	if len(groups) > 0 {
		msg := groups[0]
		d.ReportingMTA = mtaName(msg.get("Reporting-MTA"))
		d.ArrivalDate = parseDate(msg.get("Arrival-Date"))
		d.OriginalEnvelopeID = msg.get("Original-Envelope-Id")
		d.OriginalSender = bareAddress(msg.get("X-Postfix-Sender"))
	}
	for _, g := range groups {
		if !g.has("Final-Recipient") && !g.has("Original-Recipient") {
			continue
		}
		if rc, ok := dsnRecipient(g); ok {
			d.Recipients = append(d.Recipients, rc)
		}
	}
	if len(d.Recipients) == 0 {
		return nil, fmt.Errorf("%w: no recipient in the delivery-status part", ErrNotDSN)
	}
	if h, ok := f.returnedHeader(); ok {
		d.OriginalHeaders = h.header()
		d.OriginalMessageID = messageID(h.get("Message-Id"))
		if rp := bareAddress(h.get("Return-Path")); rp != "" {
			d.OriginalSender = rp
		}
	}
	return d, nil
}

// dsnRecipient reads one recipient group.
func dsnRecipient(g fields) (DSNRecipient, bool) {
	rc := DSNRecipient{
		FinalRecipient:    bareAddress(g.get("Final-Recipient")),
		OriginalRecipient: bareAddress(g.get("Original-Recipient")),
		DiagnosticCode:    g.get("Diagnostic-Code"),
		LastAttemptDate:   parseDate(g.get("Last-Attempt-Date")),
		WillRetryUntil:    parseDate(g.get("Will-Retry-Until")),
	}
	if rc.FinalRecipient == "" {
		rc.FinalRecipient = rc.OriginalRecipient
	}
	if rc.FinalRecipient == "" {
		return rc, false
	}
	rc.RemoteMTA = mtaName(g.get("Remote-MTA"))

	diagType, diag := typedValue(rc.DiagnosticCode)
	if diagType == "smtp" || diagType == "" {
		if m := smtpCode.FindStringSubmatch(diag); m != nil {
			rc.SMTPCode, _ = strconv.Atoi(m[1])
		}
	}

	rc.Status = findStatus(g.get("Status"))
	if rc.Status == "" {
		rc.Status = findStatus(diag)
	}
	if rc.Status == "" && rc.SMTPCode > 0 {
		rc.Status = strconv.Itoa(rc.SMTPCode/100) + ".0.0"
	}

	action, _, _ := strings.Cut(strings.TrimSpace(g.get("Action")), " ")
	rc.Action = strings.ToLower(action)
	if !actions[rc.Action] {
		rc.Action = actionOfClass[classOf(rc.Status)]
	}
	if rc.Status == "" {
		rc.Status = classOfAction[rc.Action]
	}
	return rc, rc.Action != "" && rc.Status != ""
}

// actions are RFC 3464's action values (§2.3.3).
var actions = map[string]bool{"failed": true, "delayed": true, "delivered": true, "relayed": true, "expanded": true}

var (
	actionOfClass = map[byte]string{'5': "failed", '4': "delayed", '2': "delivered"}
	classOfAction = map[string]string{"failed": "5.0.0", "delayed": "4.0.0", "delivered": "2.0.0", "relayed": "2.0.0", "expanded": "2.0.0"}
)

func classOf(status string) byte {
	if status == "" {
		return 0
	}
	return status[0]
}

var (
	// smtpCode is a basic reply code at the start of a reply, with the
	// separator of a last ("550 ") or continued ("550-") line.
	smtpCode = regexp.MustCompile(`^([245][0-9][0-9])(?:[ \-]|$)`)
	// statusCode is an enhanced status code (RFC 3463) standing alone,
	// after a continued reply's "550-" or after "#" as qmail writes it; not
	// part of an IP address or a longer dotted number.
	statusCode = regexp.MustCompile(`(?:^|[\s#(\[\-])([245]\.[0-9]{1,3}\.[0-9]{1,3})(?:$|[^0-9.]|\.(?:$|[^0-9]))`)
)

// findStatus returns the first enhanced status code in s.
func findStatus(s string) string {
	if m := statusCode.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}
