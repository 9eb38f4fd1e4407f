package inbound

import (
	"strings"
	"testing"
)

func TestParseReceived(t *testing.T) {
	msg := "From: =?ISO-8859-1?Q?J=F6rg?= <jorg@example.test>\r\n" +
		"To: a@example.test, \"B\" <b@example.test>\r\n" +
		"Subject: =?UTF-8?B?w6l0w6k=?=\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nGr=FC=DFe\r\n" +
		"--b\r\nContent-Type: image/png; name=\"p.png\"\r\nContent-ID: <img1>\r\nContent-Disposition: inline\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8=\r\n" +
		"--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=big.bin\r\n\r\n" + strings.Repeat("z", 100) + "\r\n" +
		"--b--\r\n"
	r := ParseReceived([]byte(msg), 50)
	if r.From != "Jörg <jorg@example.test>" || r.Subject != "été" || len(r.To) != 2 || r.To[1] != "B <b@example.test>" {
		t.Errorf("header: %+v", r)
	}
	if r.Text != "Grüße\r\n" && r.Text != "Grüße" {
		t.Errorf("text %q", r.Text)
	}
	if len(r.Attachments) != 2 {
		t.Fatalf("attachments %+v", r.Attachments)
	}
	if a := r.Attachments[0]; a.Filename != "p.png" || string(a.Content) != "hello" || a.ContentID != "img1" || a.Disposition != "inline" {
		t.Errorf("inline image %+v", a)
	}
	if a := r.Attachments[1]; a.Content != nil || a.Size < 100 {
		t.Errorf("an attachment over the cap keeps its content: %+v", a)
	}
	if r.Problem != "" {
		t.Errorf("problem %q", r.Problem)
	}
	if len(r.Charsets) != 1 || r.Charsets[0] != "iso-8859-1" {
		t.Errorf("charsets %q", r.Charsets)
	}
}

// FuzzParseReceived: any bytes give a result, never a panic.
func FuzzParseReceived(f *testing.F) {
	f.Add([]byte("Subject: x\r\n\r\nbody"))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\r\nx\r\n--b"))
	f.Add([]byte("From: =?bogus?Q?x?= <a@b>\r\nContent-Type: text/plain; charset=bogus\r\n\r\n\xff\xfe"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseReceived(data, 16)
	})
}
