package message

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"path"
	"strings"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// mimePart is one node of the body tree Build writes: a leaf with content,
// or a multipart with parts.
type mimePart struct {
	mediaType   string
	params      map[string]string
	encoding    string // Content-Transfer-Encoding of a leaf
	disposition string
	dispParams  map[string]string
	contentID   string
	content     []byte // a leaf's content, not yet encoded
	parts       []*mimePart
}

// body builds the tree for m (the shape is drawn on Build).
func (m Message) body() (*mimePart, error) {
	if m.Text == "" && m.HTML == "" {
		return nil, ErrNoBody
	}
	var inline, files []*mimePart
	for i, a := range m.Attachments {
		p, err := a.part(i, m.HTML != "")
		if err != nil {
			return nil, err
		}
		if p.disposition == "inline" {
			inline = append(inline, p)
		} else {
			files = append(files, p)
		}
	}
	var html *mimePart
	if m.HTML != "" {
		html = newTextPart("html", m.HTML)
		if len(inline) > 0 {
			// RFC 2387 §3.1: type names the root part's type.
			html = newMultipart("related", m.boundary("related"), map[string]string{"type": "text/html"}, append([]*mimePart{html}, inline...))
		}
	}
	var body *mimePart
	switch {
	case m.Text != "" && html != nil:
		body = newMultipart("alternative", m.boundary("alternative"), nil, []*mimePart{newTextPart("plain", m.Text), html})
	case html != nil:
		body = html
	default:
		body = newTextPart("plain", m.Text)
	}
	if len(files) > 0 {
		body = newMultipart("mixed", m.boundary("mixed"), nil, append([]*mimePart{body}, files...))
	}
	return body, nil
}

// lineEndings turns CRLF, bare CR and bare LF alike into CRLF. Doing it
// before quoted-printable encoding matters: mime/quotedprintable treats a
// bare CR as a line break but then swallows the next LF even after other
// bytes, losing a line.
var lineEndings = strings.NewReplacer("\r\n", "\r\n", "\r", "\r\n", "\n", "\r\n")

func newTextPart(subtype, s string) *mimePart {
	return &mimePart{
		mediaType: "text/" + subtype,
		params:    map[string]string{"charset": "utf-8"},
		encoding:  "quoted-printable",
		content:   []byte(lineEndings.Replace(strings.ToValidUTF8(s, "\uFFFD"))),
	}
}

// boundary is the boundary of the message's multipart of this subtype
// (each subtype occurs at most once in the tree). A message with a
// MessageID gets boundaries derived from it, so building it again gives
// the same bytes (what GET /v1/messages/{id}/raw relies on, and a retry
// of a message stored without its built form); the id is made when the
// message is accepted, after its content is fixed, so the content cannot
// be made to hold it. Without a MessageID the boundary is go-message's
// random one.
func (m Message) boundary(subtype string) string {
	id := strings.TrimSpace(m.MessageID)
	if id == "" {
		return textproto.NewMultipartWriter(io.Discard).Boundary()
	}
	sum := sha256.Sum256([]byte("mailbolt boundary\x00" + id + "\x00" + subtype))
	return hex.EncodeToString(sum[:30]) // 60 characters, like go-message's random ones
}

// newMultipart makes a multipart node with the given boundary. Setting
// the boundary here, rather than letting the writer add it, keeps
// Content-Type where header put it.
func newMultipart(subtype, boundary string, params map[string]string, parts []*mimePart) *mimePart {
	if params == nil {
		params = map[string]string{}
	}
	params["boundary"] = boundary
	return &mimePart{mediaType: "multipart/" + subtype, params: params, parts: parts}
}

// maxFilenameLen is the usual file system limit. It also keeps an
// unquoted filename parameter short enough to never need a forced fold,
// which would insert a space into it.
const maxFilenameLen = 255

// part checks a and makes its leaf: inline (in multipart/related) when it
// has a ContentID and the message has HTML to show it in, else an
// attachment.
func (a Attachment) part(i int, hasHTML bool) (*mimePart, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: attachment %d: %s", ErrAttachment, i, fmt.Sprintf(format, args...))
	}
	if p := headerTextProblem(a.Filename); p != "" {
		return nil, bad("filename: %s", p)
	}
	name := headerText(a.Filename)
	if len(name) > maxFilenameLen {
		return nil, bad("filename longer than %d bytes", maxFilenameLen)
	}
	ct := a.ContentType
	if ct == "" {
		if ct = mime.TypeByExtension(path.Ext(name)); ct == "" {
			ct = "application/octet-stream"
		}
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, bad("content type %q: %v", ct, err)
	}
	if strings.HasPrefix(mt, "multipart/") || strings.HasPrefix(mt, "message/") {
		// RFC 2046 §5: composite types cannot be base64-encoded.
		return nil, bad("content type %s cannot be attached; use application/octet-stream", mt)
	}
	switch cs := strings.ToLower(params["charset"]); cs {
	case "", "utf-8", "us-ascii":
	default:
		// go-message's writer refuses any other charset, even for base64.
		return nil, bad("charset %q: only utf-8 and us-ascii are supported", params["charset"])
	}
	p := &mimePart{mediaType: mt, params: params, encoding: "base64", content: a.Content, disposition: "attachment", dispParams: map[string]string{}}
	if name != "" {
		params["name"] = name // for clients that ignore Content-Disposition
		p.dispParams["filename"] = name
	}
	if a.ContentID != "" {
		cid := strings.TrimSuffix(strings.TrimPrefix(a.ContentID, "<"), ">")
		if !validContentID(cid) {
			return nil, bad("content id %q: use letters, digits and !#$%%&'*+-/=?^_`{|}~.@", a.ContentID)
		}
		p.contentID = cid
		if hasHTML {
			p.disposition = "inline"
		}
	}
	return p, nil
}

// validContentID accepts the characters of an RFC 5322 msg-id (atext, '.'
// and '@', RFC 2392), without requiring the '@' that many senders omit.
func validContentID(cid string) bool {
	if cid == "" || len(cid) > 250 {
		return false
	}
	for i := 0; i < len(cid); i++ {
		c := cid[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-/=?^_`{|}~.@", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// setHeader sets p's content fields. go-message writes the field set last
// at the top, so Content-Type is set last.
func (p *mimePart) setHeader(h *gomessage.Header) {
	if p.contentID != "" {
		h.Set("Content-ID", "<"+p.contentID+">")
	}
	if p.disposition != "" {
		h.SetContentDisposition(p.disposition, p.dispParams)
	}
	if p.encoding != "" {
		h.Set("Content-Transfer-Encoding", p.encoding)
	}
	h.SetContentType(p.mediaType, p.params)
}

// write writes p's body to w, which was created with p's header, encoding
// leaves as their Content-Transfer-Encoding says.
func (p *mimePart) write(w *gomessage.Writer) error {
	if p.parts == nil {
		if _, err := w.Write(p.content); err != nil {
			return err
		}
		return w.Close()
	}
	for _, c := range p.parts {
		var h gomessage.Header
		c.setHeader(&h)
		cw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		if err := c.write(cw); err != nil {
			return err
		}
	}
	return w.Close()
}
