package message

import (
	"errors"
	"strings"
	"testing"
)

// FuzzBuild feeds arbitrary text into every free-form field. Build must
// either refuse with one of its named errors or produce a message whose
// every line ends in CRLF, is at most 998 octets, and that parses back to
// the same text and html (line endings normalised to CRLF).
func FuzzBuild(f *testing.F) {
	f.Add("Hello", "Hi\nthere", "<p>Hi</p>", "X-Tag", "value", "Zoë", "a.pdf", "logo")
	f.Add("Grüße\r\nBcc: x", "a\rb\r\nc\n", "", "Bad Name", "b\r\nBcc: evil@x", "A\x00", "x\ny", "a b")
	f.Add(strings.Repeat("long ", 300), strings.Repeat("x", 5000), strings.Repeat("é", 3000), strings.Repeat("N", 64), strings.Repeat("v", 2000), strings.Repeat("n", 900), strings.Repeat("f", 255), "c@d")
	f.Add("s", "t", "h", "X", "v", "n", strings.Repeat("é", 127), strings.Repeat("c", 250))
	f.Add("=?utf-8?q?x?=", "\r=\n", "\xff\xfe", "X-Spaces", "a"+strings.Repeat(" ", 200)+"b", "\t", " ", "")
	f.Fuzz(func(t *testing.T, subject, text, html, hname, hvalue, name, filename, cid string) {
		m := Message{
			From:    Address{name, "sender@example.test"},
			To:      []Address{{name, "rcpt@dest.test"}},
			Subject: subject,
			Text:    text,
			HTML:    html,
			Headers: [][2]string{{hname, hvalue}},
			Date:    testDate,
			Attachments: []Attachment{
				{Filename: filename, Content: []byte(text)},
				{Filename: filename, ContentID: cid, Content: []byte(html)},
			},
			MessageID: "fuzz@example.test",
		}
		raw, err := Build(m)
		if err != nil {
			for _, known := range []error{ErrHeaderName, ErrHeaderValue, ErrReservedHeader, ErrAddress, ErrAttachment, ErrNoBody} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("Build failed with an unnamed error (a check is missing): %v", err)
		}
		h, _, leaves := parseBuilt(t, raw) // asserts the wire form
		want := map[string]string{
			"text/plain": lineEndings.Replace(strings.ToValidUTF8(text, "\uFFFD")),
			"text/html":  lineEndings.Replace(strings.ToValidUTF8(html, "\uFFFD")),
		}
		for _, l := range leaves {
			if w, ok := want[l.typ]; ok && string(l.body) != w {
				t.Fatalf("%s decodes to %q, want %q", l.typ, l.body, w)
			}
		}
		// The subject survives (white space runs collapsed), unless it
		// looks like an encoded-word itself.
		if !strings.Contains(subject, "=?") {
			if got, err := h.Subject(); err != nil || got != headerText(subject) {
				t.Fatalf("Subject = %q, %v; want %q", got, err, headerText(subject))
			}
		}
	})
}
