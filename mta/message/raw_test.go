package message

import (
	"bytes"
	"strings"
	"testing"
)

const rawMixed = "From: a@example.com\r\nSubject: t\r\n  folded\r\nMIME-Version: 1.0\r\n" +
	"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\nthe preamble\r\n--outer\r\n" +
	"Content-Type: multipart/alternative; boundary=inner\r\n\r\n--inner\r\n" +
	"Content-Type: text/plain\r\n\r\nsee https://example.com/a\r\n--inner\r\n" +
	"Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
	"<a href=3D\"https://example.com/a\">a</a>\r\n--inner--\r\n--outer\r\n" +
	"Content-Type: text/html\r\nContent-Disposition: attachment; filename=page.html\r\n\r\n<a href=\"https://example.com/b\">b</a>\r\n" +
	"--outer\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
	"PGEgaHJlZj0iaHR0cHM6Ly9leGFtcGxlLmNvbS9jIj5jPC9hPg==\r\n--outer--\r\nthe epilogue\r\n"

func TestSplitFields(t *testing.T) {
	fields, body, err := SplitFields([]byte(rawMixed))
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 4 || fields[1].Value() != "t  folded" || !bytes.HasPrefix(body, []byte("the preamble")) {
		t.Fatalf("fields %q, body %q", fields, body)
	}
	if got := JoinFields(fields, body); string(got) != rawMixed {
		t.Fatalf("JoinFields does not give the message back:\n%q", got)
	}
	for _, bad := range []string{" starts folded: x\r\n\r\n", "no colon here\r\n\r\n", "bad name: x\r\n\r\n"} {
		if _, _, err := SplitFields([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if f, b, err := SplitFields([]byte("Subject: only a header\r\n")); err != nil || len(f) != 1 || b != nil {
		t.Errorf("a message without body: %v %q %v", f, b, err)
	}
}

// TestRewriteHTML: each HTML part is given to fn decoded and written back
// in its own encoding; the attached HTML file, the text part, the
// preamble and the epilogue are kept byte for byte.
func TestRewriteHTML(t *testing.T) {
	fields, body, _ := SplitFields([]byte(rawMixed))
	var seen []string
	nf, nb, changed, err := RewriteHTML(fields, body, func(html string) string {
		seen = append(seen, html)
		return strings.ReplaceAll(html, "https://example.com/", "https://t.test/")
	})
	if err != nil || !changed {
		t.Fatal(err, changed)
	}
	if len(seen) != 2 || seen[0] != "<a href=\"https://example.com/a\">a</a>" || seen[1] != "<a href=\"https://example.com/c\">c</a>" {
		t.Fatalf("fn saw %q", seen)
	}
	out := string(JoinFields(nf, nb))
	for _, keep := range []string{"the preamble\r\n--outer\r\n", "see https://example.com/a\r\n--inner\r\n",
		"filename=page.html\r\n\r\n<a href=\"https://example.com/b\">b</a>\r\n--outer\r\n", "--outer--\r\nthe epilogue\r\n",
		"<a href=3D\"https://t.test/a\">a</a>"} {
		if !strings.Contains(out, keep) {
			t.Errorf("lost %q in\n%s", keep, out)
		}
	}
	if strings.Contains(out, "PGEgaHJlZj0iaHR0cHM6Ly9leGFtcGxlLmNvbS9jIj5jPC9hPg==") {
		t.Error("the base64 HTML part was not rewritten")
	}
	// Nothing to change: the same bytes, reported unchanged.
	_, nb, changed, _ = RewriteHTML(fields, body, func(s string) string { return s })
	if changed || !bytes.Equal(nb, body) {
		t.Error("an identity rewrite changed the message")
	}
}

// TestRewriteHTMLLongLine: an unencoded part whose lines grow past 998
// characters becomes quoted-printable.
func TestRewriteHTMLLongLine(t *testing.T) {
	msg := "Content-Type: text/html\r\n\r\n<p>x</p>\r\n"
	fields, body, _ := SplitFields([]byte(msg))
	nf, nb, _, _ := RewriteHTML(fields, body, func(string) string { return "<p>" + strings.Repeat("y", 2000) + "</p>" })
	if v, _ := Get(nf, "Content-Transfer-Encoding"); v != "quoted-printable" || longLine(nb) {
		t.Fatalf("encoding %q, long line %v", v, longLine(nb))
	}
}

// TestTo7Bit: 8-bit text becomes quoted-printable, 8-bit binary base64,
// 7-bit parts stay as they are; 8-bit in a part's header cannot be helped.
func TestTo7Bit(t *testing.T) {
	msg := "Content-Type: multipart/mixed; boundary=b\r\nContent-Transfer-Encoding: 8bit\r\n\r\n--b\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nnaïve\r\n--b\r\n" +
		"Content-Type: application/octet-stream\r\n\r\n\xff\xfe\r\n--b\r\nContent-Type: text/plain\r\n\r\nplain\r\n--b--\r\n"
	fields, body, _ := SplitFields([]byte(msg))
	nf, nb, err := To7Bit(fields, body)
	if err != nil {
		t.Fatal(err)
	}
	out := JoinFields(nf, nb)
	if Has8Bit(out) {
		t.Fatalf("8-bit left:\n%s", out)
	}
	for _, want := range []string{"Content-Transfer-Encoding: 7bit\r\n\r\n--b", "na=C3=AFve", "Content-Transfer-Encoding: base64\r\n\r\n//4=\r\n--b",
		"Content-Type: text/plain\r\n\r\nplain\r\n--b--"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	// A one-part message whose own header is UTF-8 (SMTPUTF8 carries
	// that): only its body is converted.
	fields, body, _ = SplitFields([]byte("Subject: Grüße\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nGrüße\r\n"))
	nf, nb, err = To7Bit(fields, body)
	if err != nil || Has8Bit(nb) || !bytes.Contains(JoinFields(nf, nb), []byte("Content-Transfer-Encoding: quoted-printable")) {
		t.Errorf("a UTF-8 header over a one-part body: %v\n%s", err, JoinFields(nf, nb))
	}
	bad := "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; name=\"é.txt\"\r\n\r\né\r\n--b--\r\n"
	fields, body, _ = SplitFields([]byte(bad))
	if _, _, err := To7Bit(fields, body); err == nil {
		t.Error("an 8-bit part header was converted")
	}
}

func TestCRLF(t *testing.T) {
	if got := string(CRLF([]byte("a\nb\r\nc\n"))); got != "a\r\nb\r\nc\r\n" {
		t.Fatalf("%q", got)
	}
}

func FuzzRaw(f *testing.F) {
	f.Add([]byte(rawMixed))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n\r\n--x--"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fields, body, err := SplitFields(CRLF(data))
		if err != nil {
			return
		}
		RewriteHTML(fields, body, func(s string) string { return s + "x" })
		To7Bit(fields, body)
		Summarize(data)
	})
}

func TestSummarize(t *testing.T) {
	s := Summarize([]byte(rawMixed))
	if s.Text != "see https://example.com/a" || s.HTML != "<a href=\"https://example.com/a\">a</a>" ||
		len(s.Attachments) != 1 || s.Attachments[0].Filename != "page.html" {
		t.Errorf("multipart: %+v", s)
	}
	s = Summarize([]byte("Subject: x\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nGrüße\r\n"))
	if s.Text != "Grüße\n" || s.HTML != "" {
		t.Errorf("one text part: %+v", s)
	}
	s = Summarize([]byte("Subject: x\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\nGr\xfc\xdfe\r\n"))
	if s.Text != "" {
		t.Errorf("Latin-1 shown as %q", s.Text)
	}
}
