package message

import (
	"bytes"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	gomessage "github.com/emersion/go-message"
)

// Summary is what a submitted message says, read for display: its first
// plain-text and HTML bodies, decoded, and its attachments.
type Summary struct {
	Text, HTML  string
	Attachments []AttachmentInfo
}

// AttachmentInfo describes one attachment of a submitted message.
type AttachmentInfo struct {
	Filename    string
	ContentType string
	Size        int
	ContentID   string
}

// maxSummaryParts bounds how many parts Summarize reads.
const maxSummaryParts = 200

// Summarize reads a submitted message for display. It never fails: what it
// cannot read is left out. Bodies in a charset other than UTF-8 or
// US-ASCII are shown only when they are valid UTF-8 anyway.
func Summarize(data []byte) Summary {
	var s Summary
	if fields, body, err := SplitFields(data); err == nil && body != nil {
		// The common case, one text part in UTF-8 or ASCII, unencoded:
		// read without a MIME parser.
		e := entity{fields, body}
		t, params := e.mediaType()
		cs := strings.ToLower(params["charset"])
		if enc := e.encoding(); (t == "text/plain" || t == "text/html") && !e.attachment() &&
			(enc == "" || enc == "7bit" || enc == "8bit") && (cs == "" || cs == "utf-8" || cs == "us-ascii") {
			if len(body) > 1<<20 || !utf8.Valid(body) {
				return s
			}
			text := strings.ReplaceAll(string(body), "\r\n", "\n")
			if t == "text/html" {
				s.HTML = text
			} else {
				s.Text = text
			}
			return s
		}
	}
	e, err := gomessage.Read(bytes.NewReader(data))
	if e == nil || (err != nil && !gomessage.IsUnknownCharset(err) && !gomessage.IsUnknownEncoding(err)) {
		return s
	}
	n := 0
	e.Walk(func(_ []int, p *gomessage.Entity, err error) error {
		if n++; n > maxSummaryParts {
			return io.EOF
		}
		if err != nil && !gomessage.IsUnknownCharset(err) {
			return nil
		}
		t, params, _ := p.Header.ContentType()
		if strings.HasPrefix(t, "multipart/") {
			return nil
		}
		disp, dparams, _ := p.Header.ContentDisposition()
		name := dparams["filename"]
		if name == "" {
			name = params["name"]
		}
		if disp != "attachment" && name == "" && (t == "text/plain" || t == "text/html" || t == "") {
			b, err := io.ReadAll(io.LimitReader(p.Body, 1<<20))
			if err != nil || !utf8.Valid(b) {
				return nil
			}
			text := strings.ReplaceAll(string(b), "\r\n", "\n")
			if t == "text/html" && s.HTML == "" {
				s.HTML = text
			} else if t != "text/html" && s.Text == "" {
				s.Text = text
			}
			return nil
		}
		size, _ := io.Copy(io.Discard, p.Body)
		if name != "" {
			if dec, err := new(mime.WordDecoder).DecodeHeader(name); err == nil {
				name = dec
			}
		}
		s.Attachments = append(s.Attachments, AttachmentInfo{Filename: name, ContentType: t, Size: int(size),
			ContentID: strings.Trim(p.Header.Get("Content-Id"), "<> ")})
		return nil
	})
	return s
}
