package message

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/google/uuid"
)

var testDate = time.Date(2026, 11, 22, 12, 0, 0, 0, time.FixedZone("CET", 3600))

// testMsg is a small valid message for tests to modify.
func testMsg() Message {
	return Message{
		From:    Address{"Sender", "sender@example.test"},
		To:      []Address{{"Rcpt", "rcpt@dest.test"}},
		Subject: "Hello",
		Text:    "Hi there.",
		Date:    testDate,
	}
}

var (
	testPNG  = Attachment{Filename: "logo.png", Content: []byte("\x89PNG\r\n\x1a\n\x00\x00binary"), ContentID: "logo@example.test"}
	testPDF  = Attachment{Filename: "invoice.pdf", ContentType: "application/pdf", Content: []byte("%PDF-1.7\n\x00\xff")}
	testHTML = `<p>Hi <img src="cid:logo@example.test"></p>`
)

// builtLeaf is one decoded non-multipart part of a parsed message.
type builtLeaf struct {
	typ    string
	header gomessage.Header
	body   []byte
}

// parse reads raw back with go-message after checking its wire form, and
// returns the top header, the MIME tree drawn as "type(child,child)" and
// the leaves in order.
func parseBuilt(t testing.TB, raw []byte) (mail.Header, string, []builtLeaf) {
	t.Helper()
	checkWire(t, raw)
	e, err := gomessage.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("read back: %v\n%s", err, raw)
	}
	var leaves []builtLeaf
	tree := walkParts(t, e, &leaves)
	return mail.Header{Header: e.Header}, tree, leaves
}

func walkParts(t testing.TB, e *gomessage.Entity, leaves *[]builtLeaf) string {
	t.Helper()
	typ, _, err := e.Header.ContentType()
	if err != nil {
		t.Fatalf("content type: %v", err)
	}
	mr := e.MultipartReader()
	if mr == nil {
		body, err := io.ReadAll(e.Body)
		if err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		*leaves = append(*leaves, builtLeaf{typ, e.Header, body})
		return typ
	}
	var kids []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next part of %s: %v", typ, err)
		}
		kids = append(kids, walkParts(t, p, leaves))
	}
	return typ + "(" + strings.Join(kids, ",") + ")"
}

// checkWire scans every byte: each CR is followed by LF, each LF follows a
// CR, no line is longer than 998 octets (RFC 5322 §2.1.1), the message
// ends with CRLF and no header line is only white space.
func checkWire(t testing.TB, raw []byte) {
	t.Helper()
	if err := wireError(raw); err != nil {
		t.Fatalf("%v\n%q", err, raw)
	}
}

func wireError(raw []byte) error {
	if !bytes.HasSuffix(raw, []byte("\r\n")) {
		return errors.New("message does not end with CRLF")
	}
	lineStart, inHeader := 0, true
	for i, c := range raw {
		switch c {
		case '\r':
			if i+1 >= len(raw) || raw[i+1] != '\n' {
				return fmt.Errorf("bare CR at %d", i)
			}
		case '\n':
			if i == 0 || raw[i-1] != '\r' {
				return fmt.Errorf("bare LF at %d", i)
			}
			line := raw[lineStart : i-1]
			if len(line) > 998 {
				return fmt.Errorf("line of %d octets at %d", len(line), lineStart)
			}
			if inHeader && len(line) > 0 && len(bytes.Trim(line, " \t")) == 0 {
				return fmt.Errorf("header line of only white space at %d", lineStart)
			}
			if len(line) == 0 {
				inHeader = false
			}
			lineStart = i + 1
		}
	}
	return nil
}

func mustBuild(t testing.TB, m Message) []byte {
	t.Helper()
	raw, err := Build(m)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return raw
}

func TestBuildMIMETree(t *testing.T) {
	inlineNoHTML := testPNG
	tests := []struct {
		name        string
		text, html  string
		attachments []Attachment
		tree        string
	}{
		{"text", "Hi", "", nil, "text/plain"},
		{"html", "", testHTML, nil, "text/html"},
		{"alternative", "Hi", testHTML, nil, "multipart/alternative(text/plain,text/html)"},
		{"html+inline", "", testHTML, []Attachment{testPNG}, "multipart/related(text/html,image/png)"},
		{"alternative+inline", "Hi", testHTML, []Attachment{testPNG}, "multipart/alternative(text/plain,multipart/related(text/html,image/png))"},
		{"text+file", "Hi", "", []Attachment{testPDF}, "multipart/mixed(text/plain,application/pdf)"},
		{"html+file", "", testHTML, []Attachment{testPDF}, "multipart/mixed(text/html,application/pdf)"},
		{"alternative+file", "Hi", testHTML, []Attachment{testPDF, testPDF}, "multipart/mixed(multipart/alternative(text/plain,text/html),application/pdf,application/pdf)"},
		{"html+inline+file", "", testHTML, []Attachment{testPDF, testPNG}, "multipart/mixed(multipart/related(text/html,image/png),application/pdf)"},
		{"everything", "Hi", testHTML, []Attachment{testPNG, testPDF}, "multipart/mixed(multipart/alternative(text/plain,multipart/related(text/html,image/png)),application/pdf)"},
		// An image with a Content-ID but no HTML to show it is a file.
		{"text+cid image", "Hi", "", []Attachment{inlineNoHTML}, "multipart/mixed(text/plain,image/png)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMsg()
			m.Text, m.HTML, m.Attachments = tt.text, tt.html, tt.attachments
			h, tree, leaves := parseBuilt(t, mustBuild(t, m))
			if tree != tt.tree {
				t.Fatalf("tree = %s, want %s", tree, tt.tree)
			}
			if v := h.Get("Mime-Version"); v != "1.0" {
				t.Errorf("MIME-Version = %q", v)
			}
			for _, l := range leaves {
				enc := l.header.Get("Content-Transfer-Encoding")
				_, params, _ := l.header.ContentType()
				disp, _, _ := l.header.ContentDisposition()
				switch l.typ {
				case "text/plain", "text/html":
					want := tt.text
					if l.typ == "text/html" {
						want = tt.html
					}
					if enc != "quoted-printable" || params["charset"] != "utf-8" || string(l.body) != want {
						t.Errorf("%s: encoding %q, charset %q, body %q", l.typ, enc, params["charset"], l.body)
					}
				case "image/png":
					wantDisp := "inline"
					if tt.html == "" {
						wantDisp = "attachment"
					}
					if enc != "base64" || disp != wantDisp || l.header.Get("Content-Id") != "<logo@example.test>" || !bytes.Equal(l.body, testPNG.Content) {
						t.Errorf("image: encoding %q, disposition %q, Content-ID %q, body %q", enc, disp, l.header.Get("Content-Id"), l.body)
					}
				case "application/pdf":
					ah := mail.AttachmentHeader{Header: l.header}
					name, _ := ah.Filename()
					if enc != "base64" || disp != "attachment" || name != "invoice.pdf" || !bytes.Equal(l.body, testPDF.Content) {
						t.Errorf("pdf: encoding %q, disposition %q, filename %q, body %q", enc, disp, name, l.body)
					}
				}
			}
		})
	}
}

func TestBuildInlineImageInRelated(t *testing.T) {
	m := testMsg()
	m.HTML = testHTML
	m.Attachments = []Attachment{{Filename: "logo.png", Content: testPNG.Content, ContentID: "<logo@example.test>"}}
	raw := mustBuild(t, m)
	e, err := gomessage.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	// alternative > [text/plain, related > [text/html, image]]
	alt := e.MultipartReader()
	if _, err := alt.NextPart(); err != nil {
		t.Fatal(err)
	}
	rel, err := alt.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	typ, params, _ := rel.Header.ContentType()
	if typ != "multipart/related" || params["type"] != "text/html" {
		t.Fatalf("second alternative is %s %v, want multipart/related; type=text/html", typ, params)
	}
	parts := rel.MultipartReader()
	root, _ := parts.NextPart()
	body, _ := io.ReadAll(root.Body)
	img, err := parts.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	cid := strings.Trim(img.Header.Get("Content-Id"), "<>")
	if !strings.Contains(string(body), `src="cid:`+cid+`"`) {
		t.Errorf("html %q does not reference Content-ID %q", body, cid)
	}
	if disp, params, _ := img.Header.ContentDisposition(); disp != "inline" || params["filename"] != "logo.png" {
		t.Errorf("image disposition = %s %v", disp, params)
	}
}

func TestBuildHeaders(t *testing.T) {
	m := testMsg()
	m.To = []Address{{"Rcpt One", "one@dest.test"}, {"", "two@dest.test"}}
	m.Cc = []Address{{"Copy", "cc@dest.test"}}
	m.ReplyTo = []Address{{"Support", "help@example.test"}}
	m.ListUnsubscribe = "<https://mail.example.test/u/1>, <mailto:u+1@example.test>"
	m.ListUnsubscribePost = "List-Unsubscribe=One-Click"
	h, _, _ := parseBuilt(t, mustBuild(t, m))

	for field, want := range map[string]string{
		"From":     `"Sender" <sender@example.test>`,
		"To":       `"Rcpt One" <one@dest.test>, <two@dest.test>`,
		"Cc":       `"Copy" <cc@dest.test>`,
		"Reply-To": `"Support" <help@example.test>`,
		"Subject":  "Hello",
		"Date":     "Sun, 22 Nov 2026 12:00:00 +0100",
		// List-Unsubscribe is written as given, never encoded.
		"List-Unsubscribe":      m.ListUnsubscribe,
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
	} {
		if got := h.Get(field); got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
	if d, err := h.Date(); err != nil || !d.Equal(testDate) {
		t.Errorf("Date = %v, %v", d, err)
	}
	id, err := h.MessageID()
	left, domain, _ := strings.Cut(id, "@")
	if u, uerr := uuid.Parse(left); err != nil || uerr != nil || u.Version() != 7 || domain != "example.test" {
		t.Errorf("generated Message-ID = %q, %v; want <uuidv7@example.test>", id, err)
	}
	for _, field := range []string{"Bcc", "Sender", "Return-Path", "DKIM-Signature", "Received"} {
		if h.Has(field) {
			t.Errorf("%s present: %q", field, h.Get(field))
		}
	}

	// Optional fields are absent when empty; a given Message-ID is kept.
	m = testMsg()
	m.Subject = ""
	m.MessageID = "<fixed.1@example.test>"
	h, _, _ = parseBuilt(t, mustBuild(t, m))
	for _, field := range []string{"Cc", "Reply-To", "Subject", "List-Unsubscribe", "List-Unsubscribe-Post"} {
		if h.Has(field) {
			t.Errorf("%s present though empty: %q", field, h.Get(field))
		}
	}
	if id, _ := h.MessageID(); id != "fixed.1@example.test" {
		t.Errorf("Message-ID = %q", id)
	}
	m.MessageID = "fixed.2@example.test"
	if h, _, _ = parseBuilt(t, mustBuild(t, m)); h.Get("Message-Id") != "<fixed.2@example.test>" {
		t.Errorf("Message-ID without brackets = %q", h.Get("Message-Id"))
	}
}

// TestBuildEncodedWords round-trips non-ASCII subjects and display names
// through RFC 2047 and checks the header itself stays ASCII.
func TestBuildEncodedWords(t *testing.T) {
	tests := []struct{ subject, name string }{
		{"Grüße aus Köln", "Jürgen Müller"},
		{"東京からのお知らせ 🚀 — ご注文ありがとうございます、ご注文番号は 12345 です", "山田 太郎"},
		{"Ünïcödé with \"quotes\", (parens) and commas", "Zoë, \"the\" (sender)"},
		{strings.Repeat("Ärger ", 60), strings.Repeat("é", 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMsg()
			m.Subject = tt.subject
			m.From.Name = tt.name
			m.To = []Address{{tt.name, "rcpt@dest.test"}}
			m.Headers = [][2]string{{"X-Note", tt.subject}}
			raw := mustBuild(t, m)
			head := raw[:bytes.Index(raw, []byte("\r\n\r\n"))]
			if !asciiOnly(string(head)) {
				t.Errorf("header is not ASCII:\n%s", head)
			}
			h, _, _ := parseBuilt(t, raw)
			want := headerText(tt.subject)
			if got, err := h.Subject(); err != nil || got != want {
				t.Errorf("Subject = %q, %v; want %q", got, err, want)
			}
			if got, err := h.Text("X-Note"); err != nil || got != want {
				t.Errorf("X-Note = %q, %v; want %q", got, err, want)
			}
			for _, field := range []string{"From", "To"} {
				as, err := h.AddressList(field)
				if err != nil || len(as) != 1 || as[0].Name != tt.name {
					t.Errorf("%s = %v, %v; want name %q", field, as, err, tt.name)
				}
			}
		})
	}
}

func TestBuildIDNDomain(t *testing.T) {
	m := testMsg()
	m.From = Address{"", "news@bücher.example"}
	m.To = []Address{{"", "ann@Bücher.example"}}
	h, _, _ := parseBuilt(t, mustBuild(t, m))
	if got := h.Get("From"); got != "<news@xn--bcher-kva.example>" {
		t.Errorf("From = %q", got)
	}
	if got := h.Get("To"); got != "<ann@xn--bcher-kva.example>" {
		t.Errorf("To = %q", got)
	}
	if id, _ := h.MessageID(); !strings.HasSuffix(id, "@xn--bcher-kva.example") {
		t.Errorf("Message-ID = %q", id)
	}
}

// TestBuildLongLines: a 5,000-character one-line HTML, a long subject and
// long header values stay within 998 octets a line and decode exactly.
func TestBuildLongLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("<html><body>")
	for b.Len() < 5000-len("</body></html>") {
		b.WriteString(`<a href="https://example.test/é?x=1&y=2">link</a> `)
	}
	b.WriteString("</body></html>")
	long := b.String()[:5000-14] + "</body></html>"
	if len([]rune(long)) > 5000 || strings.ContainsAny(long, "\r\n") {
		t.Fatalf("bad fixture")
	}
	word := strings.Repeat("x", maxHeaderWord) // the longest run allowed
	m := testMsg()
	m.HTML = long
	m.Text = long
	m.Subject = strings.Repeat("long subject ", 200)
	m.Headers = [][2]string{{"X-Long", strings.Repeat("value ", 500)}, {"X-Words", m.Subject}, {"X-Word", word}}
	m.ListUnsubscribe = "<https://mail.example.test/u/" + strings.Repeat("a", 850) + ">"
	raw := mustBuild(t, m) // checkWire in parse asserts the 998-octet limit
	h, _, leaves := parseBuilt(t, raw)
	for _, l := range leaves {
		if string(l.body) != long {
			t.Errorf("%s does not decode to the input (%d bytes, want %d)", l.typ, len(l.body), len(long))
		}
	}
	if got, _ := h.Subject(); got != headerText(m.Subject) {
		t.Errorf("long subject changed: %q", got)
	}
	if got := h.Get("List-Unsubscribe"); got != m.ListUnsubscribe {
		t.Errorf("List-Unsubscribe = %q", got)
	}
	if got := h.Get("X-Word"); got != word {
		t.Errorf("X-Word = %q", got)
	}
}

// TestBuildLineEndings feeds bare CR, bare LF and mixed line endings and
// checks that only CRLF reaches the output and the text decodes with CRLF.
func TestBuildLineEndings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\nb\nc", "a\r\nb\r\nc"},
		{"a\rb\rc", "a\r\nb\r\nc"},
		{"a\r\nb\n\rc\r\r\nd", "a\r\nb\r\n\r\nc\r\n\r\nd"},
		{"\n\n", "\r\n\r\n"},
		{"trailing \ntab\t\n", "trailing \r\ntab\t\r\n"},
		// mime/quotedprintable alone would lose the LF here.
		{"a\r=\nb", "a\r\n=\r\nb"},
		{"nul\x00 and del\x7f", "nul\x00 and del\x7f"},
		{"bad utf-8 \xff\xfe", "bad utf-8 \uFFFD"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			m := testMsg()
			m.Text, m.HTML = tt.in, "<p>"+tt.in+"</p>"
			m.Headers = [][2]string{{"X-Tab", "a\tb"}}
			_, _, leaves := parseBuilt(t, mustBuild(t, m))
			if string(leaves[0].body) != tt.want || string(leaves[1].body) != "<p>"+tt.want+"</p>" {
				t.Errorf("decoded %q and %q, want %q", leaves[0].body, leaves[1].body, tt.want)
			}
		})
	}
}

func TestCustomHeadersKeepOrder(t *testing.T) {
	m := testMsg()
	m.Headers = [][2]string{{"X-B", "1"}, {"X-A", "2"}, {"In-Reply-To", "<x@y.test>"}, {"X-B", "3"}, {"X-Spaced", "  a   b  "}}
	h, _, _ := parseBuilt(t, mustBuild(t, m))
	var got []string
	for fs := h.Fields(); fs.Next(); {
		if k := fs.Key(); strings.HasPrefix(k, "X-") || k == "In-Reply-To" {
			got = append(got, k+": "+fs.Value())
		}
	}
	want := []string{"X-B: 1", "X-A: 2", "In-Reply-To: <x@y.test>", "X-B: 3", "X-Spaced: a b"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("custom headers = %q, want %q", got, want)
	}
}

func TestValidateHeader(t *testing.T) {
	tests := []struct {
		name, value string
		err         error
	}{
		{"X-Campaign", "spring", nil},
		{"X-Unicode", "Grüße", nil},
		{"In-Reply-To", "<a@b.test>", nil},
		{"X-Empty", "", nil},
		{"X-A", "b\r\nBcc: evil@x", ErrHeaderValue},
		{"X-A", "b\nBcc: evil@x", ErrHeaderValue},
		{"X-A", "b\rc", ErrHeaderValue},
		{"X-A", "nul\x00", ErrHeaderValue},
		{"X-A", "esc\x1b", ErrHeaderValue},
		{"X-A", "bad \xff utf-8", ErrHeaderValue},
		{"X-Token", strings.Repeat("t", maxHeaderWord), nil},
		{"X-Token", strings.Repeat("t", maxHeaderWord+1), ErrHeaderValue},
		{"Bad Name", "v", ErrHeaderName},
		{"X-A:", "v", ErrHeaderName},
		{"X-\u00e9", "v", ErrHeaderName},
		{"", "v", ErrHeaderName},
		{strings.Repeat("X", 65), "v", ErrHeaderName},
		{"X-Line\r\nBcc", "v", ErrHeaderName},
		{"bcc", "evil@x", ErrReservedHeader},
		{"From", "a@b", ErrReservedHeader},
		{"message-id", "<a@b>", ErrReservedHeader},
		{"Content-Type", "text/html", ErrReservedHeader},
		{"DKIM-Signature", "v=1", ErrReservedHeader},
		{"List-Unsubscribe", "<https://x>", ErrReservedHeader},
		{"Return-Path", "<a@b>", ErrReservedHeader},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q: %q", tt.name, tt.value), func(t *testing.T) {
			err := ValidateHeader(tt.name, tt.value)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("ValidateHeader = %v, want %v", err, tt.err)
			}
			// Build refuses the same field.
			m := testMsg()
			m.Headers = [][2]string{{tt.name, tt.value}}
			if _, err := Build(m); !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Build = %v, want %v", err, tt.err)
			}
		})
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Message)
		err  error
	}{
		{"no body", func(m *Message) { m.Text = "" }, ErrNoBody},
		{"no from", func(m *Message) { m.From = Address{} }, ErrAddress},
		{"from without domain", func(m *Message) { m.From.Email = "sender@" }, ErrAddress},
		{"to with space", func(m *Message) { m.To[0].Email = "a b c" }, ErrAddress},
		{"to with bad domain", func(m *Message) { m.To[0].Email = "a@b..test" }, ErrAddress},
		{"to with domain literal garbage", func(m *Message) { m.To[0].Email = "a@[b" }, ErrAddress},
		{"name with LF", func(m *Message) { m.To[0].Name = "Eve\nBcc: x@y" }, ErrAddress},
		{"email with CR", func(m *Message) { m.Cc = []Address{{"", "x@y.test\r\nBcc: z@w"}} }, ErrAddress},
		{"subject with CRLF", func(m *Message) { m.Subject = "Hi\r\nBcc: evil@x" }, ErrHeaderValue},
		{"subject word too long", func(m *Message) { m.Subject = "a " + strings.Repeat("b", 901) }, ErrHeaderValue},
		{"name word too long", func(m *Message) { m.From.Name = strings.Repeat("n", 901) }, ErrAddress},
		{"email too long", func(m *Message) { m.To[0].Email = strings.Repeat("a", 250) + "@b.test" }, ErrAddress},
		{"message id too long", func(m *Message) { m.MessageID = strings.Repeat("a", 250) + "@b.test" }, ErrHeaderValue},
		{"unsubscribe URI too long", func(m *Message) { m.ListUnsubscribe = "<https://x.test/" + strings.Repeat("u", 900) + ">" }, ErrHeaderValue},
		{"subject with NUL", func(m *Message) { m.Subject = "Hi\x00" }, ErrHeaderValue},
		{"bad message id", func(m *Message) { m.MessageID = "no-at-sign" }, ErrHeaderValue},
		{"message id with space", func(m *Message) { m.MessageID = "a b@c" }, ErrHeaderValue},
		{"unicode message id", func(m *Message) { m.MessageID = "é@c.test" }, ErrHeaderValue},
		{"unsubscribe non-ASCII", func(m *Message) { m.ListUnsubscribe = "<https://é.test/u>" }, ErrHeaderValue},
		{"unsubscribe with LF", func(m *Message) { m.ListUnsubscribe = "<https://x.test/u>\nBcc: y" }, ErrHeaderValue},
		{"post without unsubscribe", func(m *Message) { m.ListUnsubscribePost = "List-Unsubscribe=One-Click" }, ErrHeaderValue},
		{"multipart attachment", func(m *Message) { m.Attachments = []Attachment{{Filename: "x", ContentType: "multipart/mixed"}} }, ErrAttachment},
		{"message attachment", func(m *Message) { m.Attachments = []Attachment{{Filename: "x.eml", ContentType: "message/rfc822"}} }, ErrAttachment},
		{"latin-1 attachment", func(m *Message) {
			m.Attachments = []Attachment{{Filename: "x.csv", ContentType: "text/csv; charset=iso-8859-1"}}
		}, ErrAttachment},
		{"bad content type", func(m *Message) { m.Attachments = []Attachment{{Filename: "x", ContentType: "not a type"}} }, ErrAttachment},
		{"filename with CR", func(m *Message) { m.Attachments = []Attachment{{Filename: "x\r.pdf"}} }, ErrAttachment},
		{"filename too long", func(m *Message) { m.Attachments = []Attachment{{Filename: strings.Repeat("f", 256)}} }, ErrAttachment},
		{"bad content id", func(m *Message) { m.Attachments = []Attachment{{Filename: "x.png", ContentID: "a b"}} }, ErrAttachment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMsg()
			tt.edit(&m)
			if raw, err := Build(m); !errors.Is(err, tt.err) {
				t.Fatalf("Build = %v (%q), want %v", err, raw, tt.err)
			}
		})
	}
}

func TestAttachmentContentType(t *testing.T) {
	tests := []struct {
		a        Attachment
		typ      string
		filename string
	}{
		{Attachment{Filename: "report.pdf"}, "application/pdf", "report.pdf"},
		{Attachment{Filename: "photo.JPG"}, "image/jpeg", "photo.JPG"},
		{Attachment{Filename: "data.unknownext"}, "application/octet-stream", "data.unknownext"},
		{Attachment{}, "application/octet-stream", ""},
		{Attachment{Filename: "invite.ics", ContentType: "text/calendar; method=REQUEST; charset=UTF-8"}, "text/calendar", "invite.ics"},
		{Attachment{Filename: "résumé  final.pdf"}, "application/pdf", "résumé final.pdf"},
	}
	for _, tt := range tests {
		t.Run(tt.a.Filename, func(t *testing.T) {
			m := testMsg()
			tt.a.Content = []byte("line one\nline two\r\n")
			m.Attachments = []Attachment{tt.a}
			_, _, leaves := parseBuilt(t, mustBuild(t, m))
			l := leaves[1]
			ah := mail.AttachmentHeader{Header: l.header}
			name, _ := ah.Filename()
			_, params, _ := l.header.ContentType()
			if l.typ != tt.typ || name != tt.filename || params["name"] != tt.filename {
				t.Errorf("type %s, filename %q, name %q; want %s, %q", l.typ, name, params["name"], tt.typ, tt.filename)
			}
			// Attachments keep their bytes, line endings included.
			if l.header.Get("Content-Transfer-Encoding") != "base64" || !bytes.Equal(l.body, tt.a.Content) {
				t.Errorf("body %q via %s", l.body, l.header.Get("Content-Transfer-Encoding"))
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	m := testMsg()
	m.Text = strings.Repeat("Your order has shipped. ", 40)
	m.HTML = strings.Repeat("<p>Your order has <b>shipped</b>.</p>\n", 30)
	m.MessageID = "bench@example.test"
	m.ListUnsubscribe = "<https://mail.example.test/u/1>"
	m.ListUnsubscribePost = "List-Unsubscribe=One-Click"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBuildIsDeterministicWithAMessageID: a message with a Message-ID and
// a Date builds to the same bytes every time (its multipart boundaries
// come from the id), which GET /v1/messages/{id}/raw relies on; another
// id gives other boundaries.
func TestBuildIsDeterministicWithAMessageID(t *testing.T) {
	m := testMsg()
	m.HTML = testHTML
	m.Attachments = []Attachment{testPNG, testPDF}
	m.MessageID = "<det.1@example.test>"
	first := mustBuild(t, m)
	if again := mustBuild(t, m); !bytes.Equal(first, again) {
		t.Fatalf("two builds differ:\n%s\n----\n%s", first, again)
	}
	if n := bytes.Count(first, []byte("boundary=")); n != 3 {
		t.Fatalf("want the mixed, alternative and related multiparts, got %d boundaries:\n%s", n, first)
	}
	other := m
	other.MessageID = "<det.2@example.test>"
	if bytes.Equal(first, bytes.ReplaceAll(mustBuild(t, other), []byte("det.2"), []byte("det.1"))) {
		t.Fatal("another Message-ID gave the same boundaries")
	}
}
