package inbound

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"
)

// ErrNotARF is returned (wrapped) by ParseARF for mail that is not an
// abuse feedback report.
var ErrNotARF = errors.New("inbound: not an abuse feedback report")

// Feedback is an abuse feedback report (RFC 5965 ARF): most often a
// recipient's "this is spam" complaint forwarded by their mailbox provider
// through a feedback loop.
type Feedback struct {
	// FeedbackID identifies the report. ARF defines no report identifier,
	// so it is the report's own Message-ID header, in angle brackets; ""
	// when the report has none. The same report delivered twice has the
	// same FeedbackID.
	FeedbackID string
	// FeedbackType is the Feedback-Type in lower case: "abuse", "fraud",
	// "virus", "other", "not-spam", "auth-failure" (RFC 6591)… "other" when
	// the field is missing.
	FeedbackType string
	// UserAgent and Version are the generator's fields, as given.
	UserAgent string
	Version   string
	// OriginalMailFrom is the original envelope sender as the reporter
	// received it, a bare address; "" when not given.
	OriginalMailFrom string
	// OriginalRcptTo lists the original envelope recipients, bare
	// addresses; many providers leave them out or redact them.
	OriginalRcptTo []string
	// OriginalEnvelopeID is the Original-Envelope-Id field, as given.
	OriginalEnvelopeID string
	// ArrivalDate is when the reporter received the original message
	// (Arrival-Date, or the older Received-Date), in UTC; zero when absent
	// or unreadable.
	ArrivalDate time.Time
	// ReportingMTA is the host name in Reporting-MTA, without its type,
	// in lower case.
	ReportingMTA string
	// SourceIP is the address the original message came from, as given.
	SourceIP string
	// Incidents is the number of incidents the report stands for; 1 when
	// the field is absent or unreadable (RFC 5965 §3.2).
	Incidents int
	// ReportedDomains, ReportedURIs and AuthenticationResults list those
	// fields' values in order.
	ReportedDomains       []string
	ReportedURIs          []string
	AuthenticationResults []string
	// Fields holds every field of the feedback-report part, including the
	// ones above and extensions (RFC 6591's Auth-Failure, Delivery-Result,
	// DKIM-Domain…). Get returns a field's first value.
	Fields textproto.Header

	// OriginalMessageID is the Message-ID of the returned message or
	// header, in angle brackets; "" when there is none.
	OriginalMessageID string
	// OriginalTo lists the bare addresses of the returned header's To
	// field (providers that redact recipients replace them; then it may be
	// empty or hold the redacted form).
	OriginalTo []string
	// OriginalReturnPath is the returned header's Return-Path, a bare
	// address; "" when absent.
	OriginalReturnPath string
	// OriginalHeaders is the header block of the returned message
	// (message/rfc822 or text/rfc822-headers part), read leniently; empty
	// when the report returned neither.
	OriginalHeaders textproto.Header
}

// VERPMessageID returns the message id carried by a VERP envelope sender
// (see ParseVERP), looked for in Original-Mail-From and then in the
// returned header's Return-Path.
func (f *Feedback) VERPMessageID() (string, bool) {
	if v, ok := ParseVERP(f.OriginalMailFrom); ok {
		return v.MessageID, true
	}
	v, ok := ParseVERP(f.OriginalReturnPath)
	return v.MessageID, ok
}

// ParseARF reads an abuse feedback report: a message with a
// message/feedback-report part, normally the second part of a
// multipart/report; report-type=feedback-report with the original message
// or its header as the third, possibly nested in another multipart. The
// report-type parameter is not required. Blank lines inside the
// feedback-report part are tolerated.
//
// Mail without a feedback-report part, or whose part holds no field, gives
// an error wrapping ErrNotARF.
func ParseARF(r io.Reader) (*Feedback, error) {
	f := walk(r, func(mt string) bool { return mt == "message/feedback-report" })
	if !f.reportSeen {
		return nil, fmt.Errorf("%w: no feedback-report part", ErrNotARF)
	}
	var g fields
	for _, grp := range readGroups(f.report) {
		g = append(g, grp...)
	}
	if len(g) == 0 {
		return nil, fmt.Errorf("%w: empty feedback-report part", ErrNotARF)
	}
	fb := &Feedback{
		FeedbackID:            messageID(f.header.Get("Message-Id")),
		FeedbackType:          strings.ToLower(strings.TrimSpace(g.get("Feedback-Type"))),
		UserAgent:             g.get("User-Agent"),
		Version:               g.get("Version"),
		OriginalMailFrom:      bareAddress(g.get("Original-Mail-From")),
		OriginalEnvelopeID:    g.get("Original-Envelope-Id"),
		SourceIP:              g.get("Source-Ip"),
		Incidents:             1,
		ReportedDomains:       g.all("Reported-Domain"),
		ReportedURIs:          g.all("Reported-Uri"),
		AuthenticationResults: g.all("Authentication-Results"),
		Fields:                g.header(),
	}
	if fb.FeedbackType == "" {
		fb.FeedbackType = "other"
	}
	for _, v := range g.all("Original-Rcpt-To") {
		if a := bareAddress(v); a != "" {
			fb.OriginalRcptTo = append(fb.OriginalRcptTo, a)
		}
	}
	fb.ArrivalDate = parseDate(g.get("Arrival-Date"))
	if fb.ArrivalDate.IsZero() {
		fb.ArrivalDate = parseDate(g.get("Received-Date"))
	}
	fb.ReportingMTA = mtaName(g.get("Reporting-Mta"))
	if n, err := strconv.Atoi(strings.TrimSpace(g.get("Incidents"))); err == nil && n > 0 {
		fb.Incidents = n
	}
	if h, ok := f.returnedHeader(); ok {
		fb.OriginalHeaders = h.header()
		fb.OriginalMessageID = messageID(h.get("Message-Id"))
		fb.OriginalReturnPath = bareAddress(h.get("Return-Path"))
		fb.OriginalTo = addressList(h.get("To"))
	}
	return fb, nil
}

// looseAddress finds address-like words in a field that does not parse as
// an address list.
var looseAddress = regexp.MustCompile(`[^\s<>,;:"()\[\]]+@[^\s<>,;:"()\[\]]+`)

// addressList returns the bare addresses of an address-list field, with
// the domains lower-cased. A field that does not parse (redacted or broken
// by the reporter) gives whatever looks like an address in it.
func addressList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out []string
	if list, err := mail.ParseAddressList(v); err == nil {
		for _, a := range list {
			if b := bareAddress(a.Address); b != "" {
				out = append(out, b)
			}
		}
		return out
	}
	for _, a := range looseAddress.FindAllString(v, -1) {
		out = append(out, bareAddress(a))
	}
	return out
}
