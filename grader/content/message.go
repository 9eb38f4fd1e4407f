package content

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message"
	"golang.org/x/net/html"
)

// Limits on what newMessage reads from Raw, so that a hostile message costs
// bounded work.
const (
	maxDepth     = 16      // multipart nesting
	maxParts     = 200     // entities visited
	maxPartBytes = 4 << 20 // bytes read from one body part
)

// Message is the email as the rules see it, built by Evaluate from an Input.
type Message struct {
	// Headers are the header fields, keys in lower case. Input.Headers
	// first, then the fields of Raw's header that Input.Headers lacks.
	Headers map[string][]string
	// HeadersKnown is true when Raw or Input.Headers was given.
	HeadersKnown bool

	From string // the From field as given
	// FromName and FromAddress are From parsed as one mailbox (RFC 2047
	// words decoded); FromValid says whether that succeeded.
	FromName, FromAddress string
	FromValid             bool
	Subject               string // decoded
	Text                  string // the text/plain body
	HTML                  string // the text/html body

	// HTMLText is the visible text of HTML (outside script, style, head),
	// whitespace collapsed.
	HTMLText string
	// Links are the URLs of HTML's <a href> and <area href>, and the
	// http(s) URLs written in Text.
	Links []string
	// HTMLLinks is the number of <a href> / <area href> in HTML; TextLinks
	// the number of http(s) URLs in Text.
	HTMLLinks, TextLinks int
	// Images is the number of <img> elements in HTML.
	Images int

	Bulk bool

	// Broken lists what could not be parsed or decoded in Raw.
	Broken []string
	// Charsets lists the declared charsets other than UTF-8 and US-ASCII.
	Charsets []string
}

// Header returns the first value of the named field, and whether there is
// one.
func (m *Message) Header(name string) (string, bool) {
	v := m.Headers[strings.ToLower(name)]
	if len(v) == 0 {
		return "", false
	}
	return v[0], true
}

func newMessage(in Input) *Message {
	m := &Message{
		Headers:      map[string][]string{},
		HeadersKnown: in.Headers != nil || in.Raw != nil,
		From:         in.From,
		Subject:      in.Subject,
		Text:         in.Text,
		HTML:         in.HTML,
		Bulk:         in.Bulk,
	}
	for k, v := range in.Headers {
		k = strings.ToLower(k)
		m.Headers[k] = append(m.Headers[k], v...)
	}
	if in.Raw != nil {
		m.readRaw(in.Raw, !in.Parsed)
	}
	for _, b := range in.Broken {
		m.broken(b)
	}
	for _, c := range in.Charsets {
		m.charset(strings.ToLower(c))
	}
	if m.From == "" {
		m.From, _ = m.Header("From")
	}
	if m.Subject == "" {
		m.Subject, _ = m.Header("Subject")
	}
	m.parseFrom()
	if p, ok := m.Header("Precedence"); ok {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "bulk", "list":
			m.Bulk = true
		}
	}
	if m.HTML != "" {
		m.readHTML()
	}
	for _, u := range textURL.FindAllString(m.Text, -1) {
		m.Links = append(m.Links, strings.TrimRight(u, ".,;:!?)]}'\""))
		m.TextLinks++
	}
	return m
}

var textURL = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"]+`)

// readRaw fills the header fields from raw, and the empty body fields when
// bodies is set.
func (m *Message) readRaw(raw []byte, bodies bool) {
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		m.broken("header: " + errString(err))
		return
	}
	// Header fields as written (unfolded); only the subject is decoded
	// here, as addresses are decoded word by word when parsed.
	fields := e.Header.Fields()
	rawFields := map[string][]string{}
	for fields.Next() {
		k := strings.ToLower(fields.Key())
		rawFields[k] = append(rawFields[k], fields.Value())
	}
	if m.Subject == "" {
		s, serr := e.Header.Text("Subject")
		if serr != nil {
			if message.IsUnknownCharset(serr) {
				m.charset("subject")
			}
			s = e.Header.Get("Subject")
		}
		m.Subject = s
	}
	for k, v := range rawFields {
		if _, ok := m.Headers[k]; !ok {
			m.Headers[k] = v
		}
	}
	if !bodies {
		return
	}
	var text, htm string
	var haveText, haveHTML bool
	parts := 0
	var walk func(e *message.Entity, err error, depth int)
	walk = func(e *message.Entity, err error, depth int) {
		parts++
		m.entityErr(e, err)
		if mr := e.MultipartReader(); mr != nil {
			if depth >= maxDepth {
				m.broken("multipart nested too deep")
				return
			}
			for parts < maxParts {
				p, perr := mr.NextPart()
				if errors.Is(perr, io.EOF) {
					return
				}
				if p == nil {
					m.broken("multipart: " + errString(perr))
					return
				}
				walk(p, perr, depth+1)
			}
			return
		}
		mt, params, cterr := e.Header.ContentType()
		if cterr != nil && e.Header.Get("Content-Type") != "" {
			m.broken("Content-Type: " + cterr.Error())
		}
		if mt == "" {
			mt = "text/plain"
		}
		if d, _, _ := e.Header.ContentDisposition(); strings.EqualFold(d, "attachment") {
			return
		}
		isText, isHTML := mt == "text/plain" && !haveText, mt == "text/html" && !haveHTML
		if !isText && !isHTML {
			return
		}
		b, rerr := io.ReadAll(io.LimitReader(e.Body, maxPartBytes))
		if rerr != nil {
			m.broken(mt + " body: " + rerr.Error())
		}
		s := m.decode(b, params["charset"], err)
		if isText {
			text, haveText = s, true
		} else {
			htm, haveHTML = s, true
		}
	}
	walk(e, err, 0)
	if parts >= maxParts {
		m.broken("too many MIME parts")
	}
	if m.Text == "" {
		m.Text = text
	}
	if m.HTML == "" {
		m.HTML = htm
	}
}

// entityErr records the error message.New gave for e.
func (m *Message) entityErr(e *message.Entity, err error) {
	switch {
	case err == nil:
	case message.IsUnknownCharset(err):
		// recorded by decode
	case message.IsUnknownEncoding(err):
		m.broken("unknown Content-Transfer-Encoding " + quote(e.Header.Get("Content-Transfer-Encoding")))
	default:
		m.broken(err.Error())
	}
}

// decode turns a text body into valid UTF-8. go-message has already
// converted UTF-8 and US-ASCII (no-op) and nothing else: other charsets
// arrive undecoded with an unknown-charset error.
func (m *Message) decode(b []byte, charset string, err error) string {
	cs := strings.ToLower(strings.TrimSpace(charset))
	if cs != "" && cs != "utf-8" && cs != "utf8" && cs != "us-ascii" {
		m.charset(cs)
	}
	if message.IsUnknownCharset(err) {
		switch cs {
		case "iso-8859-1", "latin1", "iso_8859-1", "windows-1252", "cp1252":
			// Windows-1252 differs from Latin-1 only in 0x80-0x9F, which
			// changes no rule's outcome.
			r := make([]rune, len(b))
			for i, c := range b {
				r[i] = rune(c)
			}
			return string(r)
		}
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	if !utf8.Valid(b) {
		m.broken("body is not valid UTF-8 for charset " + quote(orDefault(cs, "us-ascii")))
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(b)
}

func (m *Message) broken(s string) {
	for _, b := range m.Broken {
		if b == s {
			return
		}
	}
	m.Broken = append(m.Broken, s)
}

func (m *Message) charset(s string) {
	for _, c := range m.Charsets {
		if c == s {
			return
		}
	}
	m.Charsets = append(m.Charsets, s)
}

// readHTML extracts the visible text, links and images of m.HTML.
func (m *Message) readHTML() {
	z := html.NewTokenizer(strings.NewReader(m.HTML))
	var sb strings.Builder
	skip := 0 // depth inside script, style, head, title
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			m.HTMLText = strings.Join(strings.Fields(sb.String()), " ")
			return
		case html.TextToken:
			if skip == 0 {
				sb.Write(z.Text())
				sb.WriteByte(' ')
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			switch tag {
			case "script", "style", "head", "title", "noscript":
				if tt == html.StartTagToken {
					skip++
				}
			case "img":
				m.Images++
			}
			if hasAttr && (tag == "a" || tag == "area") {
				for {
					k, v, more := z.TagAttr()
					if string(k) == "href" {
						u := strings.TrimSpace(string(v))
						if u != "" {
							m.Links = append(m.Links, u)
							m.HTMLLinks++
						}
					}
					if !more {
						break
					}
				}
			}
			if tag == "br" || tag == "p" || tag == "div" || tag == "td" || tag == "li" {
				sb.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style", "head", "title", "noscript":
				if skip > 0 {
					skip--
				}
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "unreadable"
	}
	return err.Error()
}

func quote(s string) string { return `"` + s + `"` }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// parseFrom parses m.From as exactly one mailbox. Encoded words in a charset
// other than UTF-8 and US-ASCII are decoded as Latin-1 when they claim it,
// and otherwise kept as bytes made valid, so that a legacy charset never
// makes the address unreadable.
func (m *Message) parseFrom() {
	from := strings.TrimSpace(m.From)
	if from == "" {
		return
	}
	dec := &mime.WordDecoder{CharsetReader: func(cs string, r io.Reader) (io.Reader, error) {
		cs = strings.ToLower(cs)
		m.charset(cs)
		b, err := io.ReadAll(io.LimitReader(r, 1<<16))
		if err != nil {
			return nil, err
		}
		return strings.NewReader(m.decode(b, cs, message.UnknownCharsetError{})), nil
	}}
	a, err := (&mail.AddressParser{WordDecoder: dec}).Parse(from)
	if err != nil {
		return
	}
	m.FromName, m.FromAddress, m.FromValid = a.Name, a.Address, true
}
