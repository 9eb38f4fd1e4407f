package inbound

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"net/mail"
	"strings"
	"time"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// Limits on the work done for one message. The listener caps the size of
// a message it accepts; these bound what is read inside one.
const (
	maxDepth       = 5       // multipart levels looked into
	maxParts       = 100     // MIME parts visited
	maxReportBytes = 1 << 20 // body of a delivery-status or feedback-report part
	maxHeaderBytes = 1 << 20 // a header block: the report's own, or the returned message's
)

// Media types of the part that returns the original message or its
// header (RFC 3462/6522 text/rfc822-headers, RFC 6532 message/global and
// RFC 6533 message/global-headers). message/rfc822-headers is not a
// registered type but is sent by some systems.
var returnedTypes = map[string]bool{
	"message/rfc822":         true,
	"text/rfc822-headers":    true,
	"message/global":         true,
	"message/global-headers": true,
	"message/rfc822-headers": true,
}

// found is what a walk over a message found.
type found struct {
	header textproto.Header // the message's own header

	reportSeen bool
	report     []byte // body of the first report part, decoded

	// The header block of the returned message: the first returned part
	// after the report part, or failing that the first before it.
	returned, returnedBefore fields
	afterSeen, beforeSeen    bool
}

// returnedHeader is the header of the returned message, and whether the
// message had a part for it.
func (f *found) returnedHeader() (fields, bool) {
	if f.afterSeen {
		return f.returned, true
	}
	return f.returnedBefore, f.beforeSeen
}

// walk reads a message and looks through its MIME tree (depth first, up to
// maxDepth levels and maxParts parts) for the first part whose media type
// isReport accepts and for the returned message. It does not descend into
// message/rfc822 parts: a returned message's own parts are not the
// report's. A MIME structure that breaks midway ends the walk with what was
// found before the break, so a truncated report still yields its fields.
func walk(r io.Reader, isReport func(mediaType string) bool) *found {
	br := bufio.NewReader(io.LimitReader(r, maxHeaderBytes))
	top := readFields(br)
	f := &found{header: top.header()}
	// The header was read through a limit; the body is not. Whatever br
	// buffered past the header is the start of the body.
	body := io.MultiReader(br, r)
	e, _ := message.New(message.Header{Header: f.header}, body) // an unknown charset or encoding leaves the body as it is
	w := walker{found: f, isReport: isReport}
	w.visit(e, 0)
	return f
}

type walker struct {
	*found
	isReport func(string) bool
	parts    int
}

// visit looks at one entity and, for a multipart one, its parts. It
// returns false when the walk should stop.
func (w *walker) visit(e *message.Entity, depth int) bool {
	w.parts++
	if w.parts > maxParts {
		return false
	}
	mt, params := mediaType(e.Header.Get("Content-Type"))
	switch {
	case strings.HasPrefix(mt, "multipart/"):
		if depth >= maxDepth || params["boundary"] == "" {
			return true
		}
		mr := textproto.NewMultipartReader(e.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return true
			}
			if err != nil {
				return false // a broken structure: nothing after it can be trusted
			}
			pe, _ := message.New(message.Header{Header: p.Header}, p)
			if !w.visit(pe, depth+1) {
				return false
			}
		}
	case !w.reportSeen && w.isReport(mt):
		w.reportSeen = true
		w.report, _ = io.ReadAll(io.LimitReader(e.Body, maxReportBytes)) // a read error keeps what was read
	case returnedTypes[mt]:
		switch {
		case w.reportSeen && !w.afterSeen:
			w.afterSeen = true
			w.returned = readHeaderBlock(e.Body)
			return false // everything needed is found
		case !w.reportSeen && !w.beforeSeen:
			w.beforeSeen = true
			w.returnedBefore = readHeaderBlock(e.Body)
		}
	}
	return true
}

// mediaType returns the lower-case media type and the parameters of a
// Content-Type value. When the parameters do not parse (duplicates, stray
// characters), they are read one by one, so that a report whose
// Content-Type is slightly broken still has its boundary.
func mediaType(v string) (string, map[string]string) {
	mt, params, err := mime.ParseMediaType(v)
	if err == nil {
		return mt, params
	}
	t, rest, _ := strings.Cut(v, ";")
	params = map[string]string{}
	for _, p := range strings.Split(rest, ";") {
		k, val, ok := strings.Cut(p, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			continue
		}
		if _, dup := params[k]; !dup {
			params[k] = strings.Trim(strings.TrimSpace(val), `"`)
		}
	}
	return strings.ToLower(strings.TrimSpace(t)), params
}

// field is one "Name: value" field; the value is unfolded and trimmed.
type field struct{ name, value string }

// fields is a group of fields in the order they came.
type fields []field

// get returns the value of the first field called name (case-insensitive).
func (fs fields) get(name string) string {
	for _, f := range fs {
		if strings.EqualFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// all returns the values of every field called name, in order.
func (fs fields) all(name string) []string {
	var vs []string
	for _, f := range fs {
		if strings.EqualFold(f.name, name) {
			vs = append(vs, f.value)
		}
	}
	return vs
}

// has reports whether a field called name is present.
func (fs fields) has(name string) bool {
	for _, f := range fs {
		if strings.EqualFold(f.name, name) {
			return true
		}
	}
	return false
}

// header converts the group to a go-message header in which Get returns
// the first field of a name and Values lists them in order, as for a
// header that go-message read itself.
func (fs fields) header() textproto.Header {
	var h textproto.Header
	for i := len(fs) - 1; i >= 0; i-- { // go-message keeps fields last to first
		h.Add(fs[i].name, fs[i].value)
	}
	return h
}

// readHeaderBlock reads the header of a returned message.
func readHeaderBlock(r io.Reader) fields {
	return readFields(bufio.NewReader(io.LimitReader(r, maxHeaderBytes)))
}

// readGroups splits a report body into its groups of fields, which blank
// lines separate (RFC 3464 §2.1, RFC 5965 §3.1).
func readGroups(b []byte) []fields {
	br := bufio.NewReader(bytes.NewReader(b))
	var groups []fields
	for {
		g := readFields(br)
		if len(g) == 0 {
			return groups
		}
		groups = append(groups, g)
	}
}

// readFields reads header-style fields from br up to the first blank line
// that follows a field, or to the end. It is deliberately lenient, as
// reports from real MTAs need:
//   - lines end in CRLF or LF; a line of only spaces and tabs is blank;
//   - blank lines before the first field are skipped;
//   - a line that starts with a space or tab continues the field before it
//     (unfolded to one space);
//   - a line that is not a field (no colon, or a name with spaces, such as
//     an mbox "From " line or a fold that lost its indentation) continues
//     the field before it, or is dropped when no field came before;
//   - "Name : value" is read as "Name: value".
//
// It returns no fields at the end of the input.
func readFields(br *bufio.Reader) fields {
	var (
		fs    fields
		name  string
		value strings.Builder
		open  bool
	)
	flush := func() {
		if open {
			fs = append(fs, field{name, strings.TrimSpace(value.String())})
			value.Reset()
			open = false
		}
	}
	for {
		line, err := br.ReadString('\n')
		if line == "" && err != nil {
			break
		}
		line = strings.TrimRight(line, "\r\n")
		trimmed := strings.Trim(line, " \t\r")
		switch {
		case trimmed == "":
			if open {
				flush()
				return fs
			}
		case line[0] == ' ' || line[0] == '\t' || !isFieldLine(line):
			if open {
				value.WriteByte(' ')
				value.WriteString(trimmed)
			}
		default:
			flush()
			n, v, _ := strings.Cut(line, ":")
			name, open = strings.TrimSpace(n), true
			value.WriteString(strings.TrimSpace(v))
		}
		if err != nil {
			break
		}
	}
	flush()
	return fs
}

// isFieldLine reports whether line starts with a field name and a colon:
// printable ASCII other than the colon, optionally followed by spaces.
func isFieldLine(line string) bool {
	n, _, ok := strings.Cut(line, ":")
	if !ok {
		return false
	}
	n = strings.TrimRight(n, " \t")
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 33 || n[i] > 126 {
			return false
		}
	}
	return true
}

// typedValue splits a typed field value, "rfc822; ann@example.com" or
// "dns; mx.example.com" (RFC 3464 §2.1.2), into its lower-case type and
// the rest. A value without a type has an empty type.
func typedValue(v string) (typ, rest string) {
	t, r, ok := strings.Cut(v, ";")
	t = strings.TrimSpace(t)
	if !ok || !isTypeName(t) {
		return "", strings.TrimSpace(v)
	}
	return strings.ToLower(t), strings.TrimSpace(r)
}

// isTypeName reports whether s can be an address, MTA-name or diagnostic
// type: an atom of letters, digits and "-", "_", ".", "+".
func isTypeName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '+') {
			return false
		}
	}
	return true
}

// mtaName reads an MTA-name field ("dns; mx.example.org" or Google's
// "dns; mx.example.org. (192.0.2.1, the server for …)"): the host name
// without type, comment or trailing dot, in lower case.
func mtaName(v string) string {
	_, v = typedValue(v)
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(f[0], "."))
}

// bareAddress reduces an address field value to the address itself: the
// type ("rfc822;") is dropped, as are angle brackets, a display name and
// trailing comments, and the domain is lower-cased (the local part keeps
// its case: it belongs to the receiving system). "<>" gives "".
func bareAddress(v string) string {
	_, v = typedValue(v)
	if i := strings.IndexByte(v, '<'); i >= 0 {
		v = v[i+1:]
		if j := strings.IndexByte(v, '>'); j >= 0 {
			v = v[:j]
		}
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	a := strings.Trim(f[0], `"',;`)
	if at := strings.LastIndexByte(a, '@'); at >= 0 {
		a = a[:at+1] + strings.ToLower(a[at+1:])
	}
	return a
}

// messageID returns the first msg-id of a Message-ID value in angle
// brackets, "<id@host>", with any whitespace inside removed. A value
// without brackets (RFC 5965's own example has one) is bracketed; "" when
// there is none.
func messageID(v string) string {
	if i := strings.IndexByte(v, '<'); i >= 0 {
		inner, _, ok := strings.Cut(v[i+1:], ">")
		inner = strings.Join(strings.Fields(inner), "")
		if !ok || inner == "" {
			return ""
		}
		return "<" + inner + ">"
	}
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, " \t>") {
		return ""
	}
	return "<" + v + ">"
}

// parseDate reads an RFC 5322 date and returns it in UTC; the zero time
// when it does not parse. A comment after the date ("(PST)") is ignored,
// and the obsolete zone names of RFC 5322 §4.3 ("EDT") get their offsets
// (Go's parser would give an unknown name a zero offset).
func parseDate(v string) time.Time {
	if i := strings.IndexByte(v, '('); i >= 0 {
		v = v[:i]
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return time.Time{}
	}
	if off, ok := obsZones[strings.ToUpper(f[len(f)-1])]; ok {
		f[len(f)-1] = off
	}
	t, err := mail.ParseDate(strings.Join(f, " "))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// obsZones are the zone names RFC 5322 §4.3 gives meanings to.
var obsZones = map[string]string{
	"UT": "+0000", "GMT": "+0000", "Z": "+0000",
	"EST": "-0500", "EDT": "-0400", "CST": "-0600", "CDT": "-0500",
	"MST": "-0700", "MDT": "-0600", "PST": "-0800", "PDT": "-0700",
}
