package message

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode/utf8"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/google/uuid"
	"golang.org/x/net/idna"
)

// Errors returned by Build and ValidateHeader, each wrapped with the field it
// concerns. The API layer maps all of them to 400 VALIDATION_ERROR.
var (
	ErrHeaderName     = errors.New("invalid header field name")
	ErrHeaderValue    = errors.New("invalid header field value")
	ErrReservedHeader = errors.New("reserved header field")
	ErrAddress        = errors.New("invalid address")
	ErrAttachment     = errors.New("invalid attachment")
	ErrNoBody         = errors.New("message has neither text nor html")
)

// Address is a mailbox: an optional display name and an addr-spec. Email is
// the unquoted form net/mail returns; Build quotes the local part and
// RFC 2047-encodes the name as needed, and writes an internationalised
// domain in its ASCII (A-label) form. A non-ASCII local part stays UTF-8
// and needs SMTPUTF8 on the wire (RFC 6531).
type Address struct {
	Name, Email string
}

// Attachment is a file carried by the message, always base64-encoded so
// its bytes arrive unchanged. With a ContentID it is an inline image for
// the HTML part, referenced there as "cid:<ContentID>"; without HTML it
// falls back to an ordinary attachment.
type Attachment struct {
	Filename string
	// ContentType may carry parameters; empty means a guess from the
	// Filename's extension, else application/octet-stream. Composite types
	// (multipart/*, message/*) and a charset other than UTF-8 or US-ASCII
	// are refused (the latter is a go-message limitation).
	ContentType string
	Content     []byte
	ContentID   string // with or without the angle brackets
}

// Message is an outgoing email as the sending API describes it. Bcc
// recipients are not part of it: they exist only in the SMTP envelope and
// never in the header (RFC 5322 §3.6.3 allows either; leaking them is the
// classic bug).
type Message struct {
	From    Address
	To, Cc  []Address
	ReplyTo []Address
	// Subject, display names, custom header values and filenames are
	// header text: valid UTF-8, no control characters but tab, no run of
	// more than 900 octets without a space. Runs of spaces and tabs in them
	// collapse to one space and the ends are trimmed.
	Subject string
	// Text and HTML are the two renditions; at least one is required
	// (ErrNoBody), even when there are attachments. Any line ending (CRLF,
	// CR or LF) becomes CRLF and invalid UTF-8 becomes U+FFFD, since the
	// parts are declared charset=utf-8.
	Text, HTML string
	// Headers are extra fields written in order, each checked by
	// ValidateHeader.
	Headers     [][2]string
	Attachments []Attachment
	// MessageID is the msg-id with or without angle brackets; empty means
	// a fresh "<UUIDv7@from-domain>". Set it when the message may be built
	// more than once (retries) so every copy carries the same id.
	MessageID string
	Date      time.Time // written with its own zone; zero means now
	// ListUnsubscribe and ListUnsubscribePost are the complete field values
	// of RFC 2369 and RFC 8058, e.g. "<https://…/u/1>, <mailto:…>" and
	// "List-Unsubscribe=One-Click". They must be ASCII: URIs are
	// percent-encoded, never RFC 2047-encoded.
	ListUnsubscribe, ListUnsubscribePost string
}

// ReservedHeaders are the field names a caller's Headers may not contain:
// those Build writes from Message fields or the MIME structure, those the
// MTA adds on the way out (Return-Path, Received, DKIM-Signature), and the
// trace and authentication results a receiver writes and trusts
// (RFC 8601, RFC 8617). Bcc is here so it can never reach a header.
var ReservedHeaders = []string{
	"From", "Sender", "Reply-To", "To", "Cc", "Bcc", "Subject", "Date",
	"Message-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding",
	"Content-Disposition", "Content-ID", "List-Unsubscribe",
	"List-Unsubscribe-Post", "Return-Path", "Received", "DKIM-Signature",
	"DomainKey-Signature", "ARC-Seal", "ARC-Message-Signature",
	"ARC-Authentication-Results", "Authentication-Results", "Received-SPF",
}

// maxHeaderNameLen keeps a field name short enough that the name, ": " and
// some of the value fit on the 76-octet first line go-message folds to; its
// folding panics when the name alone is longer than that.
const maxHeaderNameLen = 64

// ValidateHeader checks one custom header field: the name is 1 to 64
// printable ASCII characters other than ':' (RFC 5322 §3.6.8) and not
// reserved; the value is valid UTF-8 without control characters other than
// tab, so CR, LF and NUL (header injection) are refused.
func ValidateHeader(name, value string) error {
	if name == "" || len(name) > maxHeaderNameLen {
		return fmt.Errorf("%w: %q: must be 1 to %d characters", ErrHeaderName, name, maxHeaderNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < '!' || c > '~' || c == ':' {
			return fmt.Errorf("%w: %q: only printable ASCII other than ':' is allowed", ErrHeaderName, name)
		}
	}
	for _, r := range ReservedHeaders {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("%w: %s is set by the service", ErrReservedHeader, r)
		}
	}
	return checkHeaderText(name, value)
}

// maxHeaderWord is the longest run without white space a header value may
// hold. Folding can only break a line at white space; a longer run would
// be split by go-message with an inserted space, silently changing the
// value (a token, a URI), so it is refused instead. 900 octets fit on a
// line after the longest field name.
const maxHeaderWord = 900

// checkHeaderText refuses values that cannot be written as header text.
func checkHeaderText(field, v string) error {
	if p := headerTextProblem(v); p != "" {
		return fmt.Errorf("%w: %s: %s", ErrHeaderValue, field, p)
	}
	return nil
}

// headerTextProblem says why v cannot be header text, or "" if it can.
func headerTextProblem(v string) string {
	if !utf8.ValidString(v) {
		return "not valid UTF-8"
	}
	word := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < ' ' && c != '\t' || c == 0x7f {
			return fmt.Sprintf("control character %q", c)
		}
		if word++; c == ' ' || c == '\t' {
			word = 0
		}
		if word > maxHeaderWord {
			return fmt.Sprintf("more than %d characters without a space", maxHeaderWord)
		}
	}
	return ""
}

// headerText collapses runs of spaces and tabs to one space and trims the
// ends. Folding then never produces a line of only white space: RFC 5322
// FWS (§3.2.2) cannot make one, only the obsolete syntax that must not be
// generated (§4.2), and a parser that strips lines would read it as the
// end of the header.
func headerText(v string) string {
	return strings.Join(strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' }), " ")
}

// Build renders m as a complete RFC 5322 message with CRLF line endings
// and no line longer than 998 octets (§2.1.1), ready for Sign and DATA.
// The body is text/plain, text/html, or multipart/alternative of both
// (text first, RFC 2046 §5.1.4); inline images wrap the HTML in
// multipart/related (RFC 2387) and attachments wrap the whole body in
// multipart/mixed:
//
//	mixed > [alternative > [text/plain, related > [text/html, image…]], file…]
//
// The related part sits inside the alternative because only the HTML
// rendition uses the images. Text parts are quoted-printable UTF-8,
// attachments base64.
func Build(m Message) ([]byte, error) {
	root, err := m.body()
	if err != nil {
		return nil, err
	}
	h, err := m.header(root)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(m.sizeHint())
	w, err := gomessage.CreateWriter(&buf, h)
	if err != nil {
		return nil, fmt.Errorf("build message: %w", err)
	}
	if err := root.write(w); err != nil {
		return nil, fmt.Errorf("build message: %w", err)
	}
	// A single quoted-printable part can end mid-line: close it with a soft
	// line break (RFC 2045 §6.7 rule 5) so that the last line ends in CRLF
	// too, without adding a character to the decoded text.
	if !bytes.HasSuffix(buf.Bytes(), []byte("\r\n")) {
		buf.WriteString("=\r\n")
	}
	return buf.Bytes(), nil
}

// header assembles the top-level fields. go-message writes the field added
// last at the top, so fields are added bottom-up: the root part's content
// fields first, then custom fields in reverse, and From last. The result
// reads From, Reply-To, To, Cc, Subject, Date, Message-Id, MIME-Version,
// List-Unsubscribe(-Post), the custom fields, Content-*.
func (m Message) header(root *mimePart) (gomessage.Header, error) {
	from, err := mailAddress("From", m.From)
	if err != nil {
		return gomessage.Header{}, err
	}
	to, err := mailAddresses("To", m.To)
	if err != nil {
		return gomessage.Header{}, err
	}
	cc, err := mailAddresses("Cc", m.Cc)
	if err != nil {
		return gomessage.Header{}, err
	}
	replyTo, err := mailAddresses("Reply-To", m.ReplyTo)
	if err != nil {
		return gomessage.Header{}, err
	}
	if err := checkHeaderText("Subject", m.Subject); err != nil {
		return gomessage.Header{}, err
	}
	id, err := m.messageID(from.Address[strings.LastIndexByte(from.Address, '@')+1:])
	if err != nil {
		return gomessage.Header{}, err
	}
	unsub, unsubPost := headerText(m.ListUnsubscribe), headerText(m.ListUnsubscribePost)
	for _, f := range [][2]string{{"List-Unsubscribe", unsub}, {"List-Unsubscribe-Post", unsubPost}} {
		if err := checkHeaderText(f[0], f[1]); err != nil {
			return gomessage.Header{}, err
		}
		if !asciiOnly(f[1]) {
			return gomessage.Header{}, fmt.Errorf("%w: %s: must be ASCII (percent-encode the URI)", ErrHeaderValue, f[0])
		}
	}
	if unsubPost != "" && unsub == "" {
		// RFC 8058 §3.1: the POST field means nothing without the URI.
		return gomessage.Header{}, fmt.Errorf("%w: List-Unsubscribe-Post needs List-Unsubscribe", ErrHeaderValue)
	}
	for _, f := range m.Headers {
		if err := ValidateHeader(f[0], f[1]); err != nil {
			return gomessage.Header{}, err
		}
	}
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}

	var h mail.Header
	root.setHeader(&h.Header)
	for i := len(m.Headers) - 1; i >= 0; i-- {
		// Add, not SetText: a name may repeat. Non-ASCII values become
		// RFC 2047 encoded-words, as SetText would make them.
		h.Add(m.Headers[i][0], mime.QEncoding.Encode("utf-8", headerText(m.Headers[i][1])))
	}
	if unsubPost != "" {
		h.Set("List-Unsubscribe-Post", unsubPost)
	}
	if unsub != "" {
		h.Set("List-Unsubscribe", unsub)
	}
	h.Set("MIME-Version", "1.0")
	h.SetMessageID(id)
	h.SetDate(date)
	if s := headerText(m.Subject); s != "" {
		h.SetSubject(s)
	}
	h.SetAddressList("Cc", cc)
	h.SetAddressList("To", to)
	h.SetAddressList("Reply-To", replyTo)
	h.SetAddressList("From", []*mail.Address{from})
	return h.Header, nil
}

// messageID returns m.MessageID without its angle brackets, checked, or a
// new UUIDv7 at the From domain (RFC 5322 §3.6.4: the right side names the
// host that made it unique).
func (m Message) messageID(domain string) (string, error) {
	id := strings.TrimSpace(m.MessageID)
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("message id: %w", err)
		}
		return u.String() + "@" + strings.ToLower(domain), nil
	}
	id = strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">")
	if len(id) > 250 {
		return "", fmt.Errorf("%w: Message-ID longer than 250 characters", ErrHeaderValue)
	}
	var h mail.Header
	h.SetMessageID(id)
	if got, err := h.MessageID(); err != nil || got != id || !asciiOnly(id) {
		return "", fmt.Errorf("%w: Message-ID %q: want local@domain in ASCII", ErrHeaderValue, m.MessageID)
	}
	return id, nil
}

func mailAddresses(field string, as []Address) ([]*mail.Address, error) {
	out := make([]*mail.Address, len(as))
	for i, a := range as {
		ma, err := mailAddress(fmt.Sprintf("%s[%d]", field, i), a)
		if err != nil {
			return nil, err
		}
		out[i] = ma
	}
	return out, nil
}

// maxEmailLen is the longest address that fits in an SMTP path (RFC 5321
// §4.5.3.1.3: 256 octets with the angle brackets).
const maxEmailLen = 254

// mailAddress checks a and converts its domain to ASCII. The address must
// survive a format and parse round trip, so nothing that net/mail would
// read differently reaches the header.
func mailAddress(field string, a Address) (*mail.Address, error) {
	if p := headerTextProblem(a.Name); p != "" {
		return nil, fmt.Errorf("%w: %s: name: %s", ErrAddress, field, p)
	}
	if p := headerTextProblem(a.Email); p != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrAddress, field, p)
	}
	if len(a.Email) > maxEmailLen {
		return nil, fmt.Errorf("%w: %s: longer than %d octets", ErrAddress, field, maxEmailLen)
	}
	at := strings.LastIndexByte(a.Email, '@')
	if at <= 0 || at == len(a.Email)-1 {
		return nil, fmt.Errorf("%w: %s: %q is not local@domain", ErrAddress, field, a.Email)
	}
	domain := a.Email[at+1:]
	if !asciiOnly(domain) {
		d, err := idna.Lookup.ToASCII(domain)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: domain %q: %v", ErrAddress, field, domain, err)
		}
		domain = d
	}
	ma := &mail.Address{Name: headerText(a.Name), Address: a.Email[:at] + "@" + domain}
	back, err := mail.ParseAddress(ma.String())
	if err != nil || back.Address != ma.Address {
		return nil, fmt.Errorf("%w: %s: %q", ErrAddress, field, a.Email)
	}
	return ma, nil
}

func (m Message) sizeHint() int {
	n := 2048 + (len(m.Text)+len(m.HTML))*11/10
	for _, a := range m.Attachments {
		n += 512 + len(a.Content)*140/100
	}
	return n
}

func asciiOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
