package inbound

import (
	"bytes"
	"io"
	"mime"
	"net/mail"
	"strings"

	"github.com/emersion/go-message"
	"golang.org/x/text/encoding/htmlindex"
)

// Received is a message taken for an inbound domain, read for the
// email.received event: its header fields in order, the addresses and
// subject decoded, the first text and HTML bodies, and the other parts as
// attachments.
type Received struct {
	Headers   []HeaderField
	From      string // the From field, decoded ("Name <addr>")
	To, Cc    []string
	ReplyTo   []string
	Subject   string
	MessageID string
	Date      string
	Text      string
	HTML      string

	Attachments []Attachment
	// Charsets are the charsets the text and HTML bodies declare, other
	// than UTF-8 and US-ASCII (lower case).
	Charsets []string
	// Problem says what could not be read (a broken MIME structure, too
	// many parts); what was read before it is kept. Empty when none.
	Problem string
}

// HeaderField is one header field as received, unfolded.
type HeaderField struct {
	Name, Value string
}

// Attachment is one part that is not a body. Content holds the decoded
// bytes, or nil when the part is larger than the cap ParseReceived was
// given (Size still says how large it is).
type Attachment struct {
	Filename    string
	ContentType string
	ContentID   string
	Disposition string // attachment or inline
	Size        int
	Content     []byte
}

// ParseReceived reads a received message. It never fails: whatever cannot
// be read is named in Problem. Attachments larger than maxAttachment bytes
// (decoded) are counted but not kept. It looks into at most maxDepth
// levels of multipart and maxParts parts.
func ParseReceived(data []byte, maxAttachment int) *Received {
	r := &Received{}
	e, err := message.Read(bytes.NewReader(data))
	if e == nil {
		r.Problem = "the message header could not be read: " + errString(err)
		return r
	}
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		r.Problem = errString(err)
	}
	r.readHeader(e.Header)
	p := partWalker{r: r, max: maxAttachment}
	p.visit(e, 0)
	return r
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// charsetReader decodes the charsets mail uses (by their IANA or WHATWG
// names) to UTF-8. It is this parser's own: go-message's global
// CharsetReader stays unset, so the report parsers keep bytes as they are.
func charsetReader(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
		return r, nil
	}
	enc, err := htmlindex.Get(label)
	if err != nil {
		return nil, err
	}
	return enc.NewDecoder().Reader(r), nil
}

var wordDecoder = mime.WordDecoder{CharsetReader: charsetReader}

// decodeWords decodes RFC 2047 encoded words, leaving the text as it is
// when they cannot be.
func decodeWords(s string) string {
	if d, err := wordDecoder.DecodeHeader(s); err == nil {
		return d
	}
	return s
}

func (r *Received) readHeader(h message.Header) {
	for f := h.Fields(); f.Next(); {
		r.Headers = append(r.Headers, HeaderField{Name: f.Key(), Value: strings.TrimSpace(unfold(f.Value()))})
	}
	r.From = strings.Join(addresses(h.Get("From")), ", ")
	if l := addresses(h.Get("To")); l != nil {
		r.To = l
	}
	r.Cc = addresses(h.Get("Cc"))
	r.ReplyTo = addresses(h.Get("Reply-To"))
	r.Subject = decodeWords(unfold(h.Get("Subject")))
	r.MessageID = strings.TrimSpace(h.Get("Message-Id"))
	r.Date = strings.TrimSpace(h.Get("Date"))
}

func unfold(s string) string {
	return strings.NewReplacer("\r\n", "", "\n", "").Replace(s)
}

var addressParser = mail.AddressParser{WordDecoder: &wordDecoder}

// addresses parses an address list into "Name <addr>" or bare addresses;
// a list that does not parse is kept whole, decoded.
func addresses(v string) []string {
	v = unfold(v)
	if strings.TrimSpace(v) == "" {
		return nil
	}
	list, err := addressParser.ParseList(v)
	if err != nil {
		return []string{decodeWords(strings.TrimSpace(v))}
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Address
		if a.Name != "" {
			out[i] = a.Name + " <" + a.Address + ">"
		}
	}
	return out
}

type partWalker struct {
	r     *Received
	max   int
	parts int
}

func (p *partWalker) visit(e *message.Entity, depth int) {
	if p.parts++; p.parts > maxParts {
		p.r.Problem = "more than 100 MIME parts: the rest were not read"
		return
	}
	if mr := e.MultipartReader(); mr != nil {
		if depth >= maxDepth {
			p.r.Problem = "multipart nested deeper than 5 levels: the deeper parts were not read"
			return
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				return
			}
			if part == nil {
				p.r.Problem = "the MIME structure is broken: " + errString(err)
				return
			}
			p.visit(part, depth+1)
			if p.parts > maxParts {
				return
			}
		}
	}
	mediaType, params, _ := e.Header.ContentType()
	if mediaType == "" {
		mediaType = "text/plain"
	}
	disp, dparams, _ := e.Header.ContentDisposition()
	filename := dparams["filename"]
	if filename == "" {
		filename = params["name"]
	}
	filename = decodeWords(filename)
	isBody := disp != "attachment" && filename == ""
	switch {
	case isBody && mediaType == "text/plain" && p.r.Text == "":
		p.charset(params["charset"])
		p.r.Text = readText(e.Body, params["charset"])
		return
	case isBody && mediaType == "text/html" && p.r.HTML == "":
		p.charset(params["charset"])
		p.r.HTML = readText(e.Body, params["charset"])
		return
	}
	if disp == "" {
		disp = "attachment"
	}
	a := Attachment{Filename: filename, ContentType: mediaType, Disposition: disp,
		ContentID: strings.Trim(strings.TrimSpace(e.Header.Get("Content-Id")), "<>")}
	var buf bytes.Buffer
	n, _ := io.Copy(&buf, io.LimitReader(e.Body, int64(p.max)+1))
	if n > int64(p.max) {
		rest, _ := io.Copy(io.Discard, e.Body)
		a.Size = int(n + rest)
	} else {
		a.Size, a.Content = int(n), buf.Bytes()
		if a.Content == nil {
			a.Content = []byte{}
		}
	}
	p.r.Attachments = append(p.r.Attachments, a)
}

// charset records a body's declared charset when it is not UTF-8 or
// US-ASCII.
func (p *partWalker) charset(cs string) {
	cs = strings.ToLower(strings.TrimSpace(cs))
	switch cs {
	case "", "utf-8", "utf8", "us-ascii", "ascii":
		return
	}
	for _, c := range p.r.Charsets {
		if c == cs {
			return
		}
	}
	p.r.Charsets = append(p.r.Charsets, cs)
}

// readText reads a text body (transfer encoding already undone) in its
// charset as UTF-8; an unknown charset leaves the bytes as they are, and
// bytes that break the encoding midway end it.
func readText(r io.Reader, charset string) string {
	if dr, err := charsetReader(charset, r); err == nil {
		r = dr
	}
	b, _ := io.ReadAll(r)
	return string(b)
}
