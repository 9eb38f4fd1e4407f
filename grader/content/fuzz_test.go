package content

import "testing"

func FuzzEvaluate(f *testing.F) {
	f.Add([]byte(clean), false)
	f.Add([]byte(single("multipart/mixed; boundary=x", "--x\r\nContent-Type: multipart/alternative; boundary=y\r\n\r\n--y\r\nContent-Type: text/html; charset=koi8-r\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<a href=3D\"http://bit.ly\">=C1</a>\r\n--y--\r\n--x--\r\n")), true)
	f.Add([]byte("From: =?x?q?a?= <@>\r\nSubject: =?utf-8?b?!!?=\r\n\r\n"), true)
	f.Add([]byte(""), false)
	f.Fuzz(func(t *testing.T, raw []byte, bulk bool) {
		r := Evaluate(Input{Raw: raw, Bulk: bulk})
		if r.Content.Score < 0 || r.Content.Score > r.Content.Max || r.Spam.Score < 0 || r.Spam.Score > r.Spam.Max {
			t.Fatalf("scores out of range: %+v %+v", r.Content, r.Spam)
		}
		for _, f := range r.Findings {
			if f.Rule == "" || f.Message == "" {
				t.Fatalf("empty finding %+v", f)
			}
		}
	})
}
