package inbound

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// seedReports adds every DSN and ARF fixture to the corpus (each parser is
// also fed the other's reports), and a few small shapes that reach the
// walk's limits and the lenient field reader's corners.
func seedReports(f *testing.F) {
	for _, kind := range []string{"dsn", "arf"} {
		for _, name := range fixtureNames(f, kind) {
			f.Add(fixture(f, kind, name))
		}
	}
	for _, s := range []string{
		"Content-Type: message/delivery-status\n\nFinal-Recipient: a@b\nStatus: 5.1.1\n",
		"Content-Type: message/feedback-report\n\nFeedback-Type: abuse\n",
		"Content-Type: multipart/mixed; boundary=b\n\n" + strings.Repeat("--b\nContent-Type: multipart/mixed; boundary=b\n\n", 8),
		"Content-Type: multipart/report; boundary=\"b\"; boundary=c\n\n--b\nContent-Type: message/delivery-status\n" +
			"Content-Transfer-Encoding: base64\n\nRmluYWwtUmVjaXBpZW50OiBhQGIKQWN0aW9uOiBmYWlsZWQK\n--b--\n",
		"\n\n \t\nFrom x\n: v\nname : value\n continued\nno colon here\n\n\n",
	} {
		f.Add([]byte(s))
	}
}

func FuzzParseDSN(f *testing.F) {
	seedReports(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		d, err := ParseDSN(bytes.NewReader(msg))
		if err != nil {
			if d != nil || !errors.Is(err, ErrNotDSN) {
				t.Fatalf("got %+v with error %v; want nil and ErrNotDSN", d, err)
			}
			return
		}
		checkDSN(t, d)
		again, err := ParseDSN(bytes.NewReader(msg))
		if err != nil || !reflect.DeepEqual(d, again) {
			t.Fatalf("a second parse differs: %+v, %v", again, err)
		}
	})
}

func FuzzParseARF(f *testing.F) {
	seedReports(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		fb, err := ParseARF(bytes.NewReader(msg))
		if err != nil {
			if fb != nil || !errors.Is(err, ErrNotARF) {
				t.Fatalf("got %+v with error %v; want nil and ErrNotARF", fb, err)
			}
			return
		}
		checkARF(t, fb)
		again, err := ParseARF(bytes.NewReader(msg))
		if err != nil || !reflect.DeepEqual(fb, again) {
			t.Fatalf("a second parse differs: %+v, %v", again, err)
		}
	})
}

// FuzzParseVERP: any RCPT TO or quoted address reads without a panic, and
// what reads as a return path is lower case, names a UUID-shaped message id
// and a non-negative index, and an ASCII one reads the same in upper case.
func FuzzParseVERP(f *testing.F) {
	for _, s := range []string{
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com",
		"<B+0195A1B2C3D47E5F8A9B0C1D2E3F4A5B.12.ABCDEFGHIJKLMNOPQRSTUVWX@Bounces.Example.COM>",
		"rfc822; b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.0.aaaa@bounces.x",
		"fbl@bounces.example.com", "b+.1.a@bounces.x", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		v, ok := ParseVERP(addr)
		if !ok {
			if v != (VERP{}) {
				t.Fatalf("not a return path, yet %+v", v)
			}
			return
		}
		if len(v.MessageID) != 36 || v.Index < 0 || v.Legacy != (v.MAC == "") || v.Domain == "" ||
			strings.ToLower(v.MessageID+v.MAC+v.Domain) != v.MessageID+v.MAC+v.Domain {
			t.Fatalf("ParseVERP(%q) = %+v", addr, v)
		}
		for _, c := range []byte(addr) {
			if c >= 0x80 {
				return // Unicode case mapping is not ASCII's (ſ upper-cases to S)
			}
		}
		if up, ok := ParseVERP(strings.ToUpper(addr)); !ok || up != v {
			t.Fatalf("upper case reads %+v, %v; want %+v", up, ok, v)
		}
	})
}
