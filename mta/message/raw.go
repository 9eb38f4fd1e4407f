package message

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"strings"
)

// Submitted mail (SMTP submission, RFC 6409) arrives already MIME. The
// functions here read and change it at the byte level: the header as a
// list of fields kept as written, the HTML parts' bodies rewritten in
// place, every other byte kept. Building it again from parsed fields
// (go-message's writer) would re-encode parts and break what the client
// signed or meant.

// ErrMalformed is a submitted message whose header cannot be read.
var ErrMalformed = errors.New("malformed message")

// Field is one header field as it was written: Raw is the whole field,
// continuation lines included, ending in CRLF.
type Field struct {
	Name string
	Raw  []byte
}

// Value is the field's unfolded value, without surrounding blanks.
func (f Field) Value() string {
	v := f.Raw[len(f.Name)+1:]
	v = bytes.ReplaceAll(v, []byte("\r\n"), nil)
	return strings.TrimSpace(string(v))
}

// Is reports whether the field has this name (case-insensitive).
func (f Field) Is(name string) bool { return strings.EqualFold(f.Name, name) }

// NewField writes a field "Name: value" ending in CRLF. value must be one
// line: the caller checked it.
func NewField(name, value string) Field {
	return Field{Name: name, Raw: []byte(name + ": " + value + "\r\n")}
}

// CRLF returns data with every bare LF turned into CRLF: the form SMTP
// carries and DKIM signs (RFC 5321 §2.3.8).
func CRLF(data []byte) []byte {
	bare := false
	for i, c := range data {
		if c == '\n' && (i == 0 || data[i-1] != '\r') {
			bare = true
			break
		}
	}
	if !bare {
		return data
	}
	out := make([]byte, 0, len(data)+len(data)/40)
	for i, c := range data {
		if c == '\n' && (i == 0 || data[i-1] != '\r') {
			out = append(out, '\r')
		}
		out = append(out, c)
	}
	return out
}

// SplitFields reads the header of data (CRLF line endings) into its
// fields and returns the body after the blank line (nil when there is
// none). A header line that is neither a field nor a continuation is
// ErrMalformed.
func SplitFields(data []byte) ([]Field, []byte, error) {
	var fields []Field
	var starts []int // where each field starts in data
	for pos := 0; pos < len(data); {
		next := len(data)
		if end := bytes.Index(data[pos:], []byte("\r\n")); end == 0 { // the blank line
			return fields, data[pos+2:], nil
		} else if end > 0 {
			next = pos + end + 2
		}
		line := data[pos:next]
		if line[0] == ' ' || line[0] == '\t' {
			if len(fields) == 0 {
				return nil, nil, fmt.Errorf("%w: the header starts with a continuation line", ErrMalformed)
			}
			i := len(fields) - 1
			fields[i].Raw = data[starts[i]:next:next]
		} else {
			colon := bytes.IndexByte(line, ':')
			if colon <= 0 || !validFieldName(line[:colon]) {
				return nil, nil, fmt.Errorf("%w: header line %q is not a field", ErrMalformed, truncate(line, 40))
			}
			fields = append(fields, Field{Name: string(line[:colon]), Raw: data[pos:next:next]})
			starts = append(starts, pos)
		}
		pos = next
	}
	return fields, nil, nil
}

func validFieldName(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.TrimRight(string(b), "\r\n")
}

// JoinFields writes fields and body back as one message.
func JoinFields(fields []Field, body []byte) []byte {
	n := len(body) + 2
	for _, f := range fields {
		n += len(f.Raw)
	}
	out := make([]byte, 0, n)
	for _, f := range fields {
		out = append(out, f.Raw...)
	}
	out = append(out, '\r', '\n')
	return append(out, body...)
}

// Get is the value of the first field with this name, and whether there
// is one.
func Get(fields []Field, name string) (string, bool) {
	for _, f := range fields {
		if f.Is(name) {
			return f.Value(), true
		}
	}
	return "", false
}

// Has8Bit reports whether b holds a byte outside US-ASCII: a body that
// needs 8BITMIME (RFC 6152), or a header that needs SMTPUTF8 (RFC 6532).
func Has8Bit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// HeaderHas8Bit reports whether any field holds a byte outside US-ASCII.
func HeaderHas8Bit(fields []Field) bool {
	for _, f := range fields {
		if Has8Bit(f.Raw) {
			return true
		}
	}
	return false
}

// maxDepth bounds how deep multiparts are followed.
const maxDepth = 20

// entity is one MIME entity: its fields and its body.
type entity struct {
	fields []Field
	body   []byte
}

func (e entity) mediaType() (string, map[string]string) {
	v, ok := Get(e.fields, "Content-Type")
	if !ok {
		return "text/plain", map[string]string{}
	}
	t, params, err := mime.ParseMediaType(v)
	if err != nil {
		return "application/octet-stream", map[string]string{} // unreadable: left alone
	}
	return t, params
}

func (e entity) encoding() string {
	v, _ := Get(e.fields, "Content-Transfer-Encoding")
	return strings.ToLower(strings.TrimSpace(v))
}

func (e entity) attachment() bool {
	v, ok := Get(e.fields, "Content-Disposition")
	if !ok {
		return false
	}
	d, _, err := mime.ParseMediaType(v)
	return err == nil && d == "attachment"
}

// setEncoding replaces (or adds) the Content-Transfer-Encoding field.
func (e *entity) setEncoding(enc string) {
	f := NewField("Content-Transfer-Encoding", enc)
	for i := range e.fields {
		if e.fields[i].Is("Content-Transfer-Encoding") {
			e.fields[i] = f
			return
		}
	}
	e.fields = append(e.fields, f)
}

// part is a multipart's child: body[start:end] of the parent.
type part struct{ start, end int }

// parts finds the children of a multipart body: each one lies between
// the end of its delimiter line and the CRLF before the next delimiter
// (RFC 2046 §5.1.1). The preamble and epilogue are not parts.
func parts(body []byte, boundary string) []part {
	delim := []byte("--" + boundary)
	var out []part
	open := -1 // start of the part being read
	for i := 0; i < len(body); {
		end := bytes.Index(body[i:], []byte("\r\n"))
		next := len(body)
		if end >= 0 {
			next = i + end + 2
		}
		line := body[i:next]
		if bytes.HasPrefix(line, delim) {
			rest := bytes.TrimRight(line[len(delim):], "\r\n")
			closing := bytes.HasPrefix(rest, []byte("--"))
			if closing {
				rest = rest[2:]
			}
			if len(bytes.Trim(rest, " \t")) == 0 {
				if open >= 0 {
					out = append(out, part{open, max(i-2, open)})
				}
				if closing {
					return out
				}
				open = next
			}
		}
		i = next
	}
	return out // no closing delimiter: the last part is not taken as whole
}

// walk calls leaf for every leaf entity of e, depth first, and returns e
// rewritten with what leaf returned for each (leaf returns its entity
// unchanged, or a new one and true). Bytes outside changed leaves are kept.
func walk(e entity, depth int, leaf func(entity) (entity, bool, error)) (entity, bool, error) {
	t, params := e.mediaType()
	if !strings.HasPrefix(t, "multipart/") || params["boundary"] == "" || depth >= maxDepth {
		return leaf(e)
	}
	var out []byte
	last, changed := 0, false
	for _, p := range parts(e.body, params["boundary"]) {
		fields, body, err := SplitFields(e.body[p.start:p.end])
		if err != nil {
			continue // an unreadable part is kept as it is
		}
		if fields == nil && body == nil { // a part without header or body
			continue
		}
		if body == nil {
			body = []byte{}
		}
		ne, ok, err := walk(entity{fields, body}, depth+1, leaf)
		if err != nil {
			return e, false, err
		}
		if !ok {
			continue
		}
		out = append(out, e.body[last:p.start]...)
		out = append(out, JoinFields(ne.fields, ne.body)...)
		last, changed = p.end, true
	}
	if !changed {
		return e, false, nil
	}
	out = append(out, e.body[last:]...)
	return entity{e.fields, out}, true, nil
}

// decode undoes a transfer encoding.
func decode(enc string, body []byte) ([]byte, error) {
	switch enc {
	case "quoted-printable":
		return io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
	case "base64":
		clean := bytes.Map(func(r rune) rune {
			if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, body)
		out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
		n, err := base64.StdEncoding.Decode(out, clean)
		return out[:n], err
	}
	return body, nil
}

// encodeQP writes b as quoted-printable with CRLF line ends.
func encodeQP(b []byte) []byte {
	var buf bytes.Buffer
	w := quotedprintable.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// encodeBase64 writes b as base64 in lines of 76 characters, the last
// one without its CRLF (in a multipart, that belongs to the delimiter).
func encodeBase64(b []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(b)
	out := make([]byte, 0, len(enc)+len(enc)/76*2+2)
	for len(enc) > 76 {
		out = append(out, enc[:76]...)
		out = append(out, '\r', '\n')
		enc = enc[76:]
	}
	return append(out, enc...)
}

// longLine reports a line over RFC 5322's 998 characters.
func longLine(b []byte) bool {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return len(b) > 998
		}
		if i > 999 {
			return true
		}
		b = b[i+1:]
	}
	return false
}

// RewriteHTML calls fn with the decoded text of each HTML part of a
// message (text/html, not an attachment, not inside an attached message),
// in order, and writes what fn returns back in the part's own transfer
// encoding; a part sent unencoded whose lines grow past 998 characters
// becomes quoted-printable. Parts in UTF-16 or UTF-32 are skipped (links
// in them cannot be found byte-wise). Every other byte of the message is
// kept. It reports whether anything changed.
func RewriteHTML(fields []Field, body []byte, fn func(html string) string) ([]Field, []byte, bool, error) {
	e, changed, err := walk(entity{fields, body}, 0, func(e entity) (entity, bool, error) {
		t, params := e.mediaType()
		cs := strings.ToLower(params["charset"])
		if t != "text/html" || e.attachment() || strings.HasPrefix(cs, "utf-16") || strings.HasPrefix(cs, "utf-32") {
			return e, false, nil
		}
		enc := e.encoding()
		text, err := decode(enc, e.body)
		if err != nil {
			return e, false, nil // undecodable: left as it came
		}
		html := fn(string(text))
		if html == string(text) {
			return e, false, nil
		}
		switch enc {
		case "quoted-printable":
			e.body = encodeQP([]byte(html))
		case "base64":
			e.body = encodeBase64([]byte(html))
		default:
			e.body = CRLF([]byte(html))
			if longLine(e.body) {
				e.body = encodeQP([]byte(html))
				e.setEncoding("quoted-printable")
			}
		}
		return e, true, nil
	})
	return e.fields, e.body, changed, err
}

// ErrNotDowngradable is a message that cannot be made 7-bit: a part's
// header holds 8-bit bytes, which only SMTPUTF8 carries.
var ErrNotDowngradable = errors.New("8-bit header in a MIME part")

// To7Bit converts a message whose body holds 8-bit data into one that a
// next hop without 8BITMIME takes (RFC 6152 §3): each leaf with 8-bit
// bytes in its body is re-encoded, quoted-printable for text, base64 for
// anything else, and a multipart or message declared 8bit is declared
// 7bit. The top-level header is the caller's (it needs SMTPUTF8 if 8-bit).
// Leaves already 7-bit are kept byte for byte.
func To7Bit(fields []Field, body []byte) ([]Field, []byte, error) {
	e, _, err := walk(entity{fields, body}, 0, func(e entity) (entity, bool, error) {
		if !Has8Bit(e.body) {
			return e, false, nil
		}
		// The top-level header is the caller's to judge (SMTPUTF8 carries
		// it); a part's 8-bit header cannot be made 7-bit.
		top := len(fields) > 0 && len(e.fields) > 0 && &e.fields[0] == &fields[0]
		switch enc := e.encoding(); enc {
		case "quoted-printable", "base64":
			return e, false, nil // 8-bit bytes in an encoded body are the sender's error; kept
		}
		t, _ := e.mediaType()
		switch {
		case t == "message/rfc822" || t == "message/global":
			inner, ib, err := SplitFields(e.body)
			if err != nil || HeaderHas8Bit(inner) {
				return e, false, fmt.Errorf("%w: an attached message", ErrNotDowngradable)
			}
			inner, ib, err = To7Bit(inner, ib)
			if err != nil {
				return e, false, err
			}
			e.body = JoinFields(inner, ib)
			e.setEncoding("7bit")
			return e, true, nil
		case strings.HasPrefix(t, "text/"):
			e.body = encodeQP(e.body)
			e.setEncoding("quoted-printable")
		default:
			e.body = encodeBase64(e.body)
			e.setEncoding("base64")
		}
		if !top && HeaderHas8Bit(e.fields) {
			return e, false, fmt.Errorf("%w: %s", ErrNotDowngradable, t)
		}
		return e, true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	// A multipart declared 8bit (its children are 7-bit now).
	if enc := e.encoding(); enc == "8bit" || enc == "binary" {
		e.setEncoding("7bit")
	}
	if Has8Bit(e.body) {
		return nil, nil, fmt.Errorf("%w: 8-bit bytes left outside the MIME parts", ErrNotDowngradable)
	}
	return e.fields, e.body, nil
}
