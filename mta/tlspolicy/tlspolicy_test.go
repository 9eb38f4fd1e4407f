package tlspolicy

import (
	"errors"
	"testing"
	"time"
)

func TestSelect(t *testing.T) {
	rec, err := Select([]string{"google-site-verification=x", " v=STSv1; id=1 "}, STSVersion)
	if err != nil || rec != "v=STSv1; id=1" {
		t.Fatalf("Select = %q, %v", rec, err)
	}
	if _, err := Select([]string{"v=STSv10; id=1", "v=spf1 -all"}, STSVersion); !errors.Is(err, ErrNoRecord) {
		t.Errorf("v=STSv10 taken for a record: %v", err)
	}
	if _, err := Select([]string{"v=STSv1; id=1", "v=STSv1; id=2"}, STSVersion); err == nil || errors.Is(err, ErrNoRecord) {
		t.Errorf("two records: %v", err)
	}
}

func TestParseSTSRecord(t *testing.T) {
	for rec, want := range map[string]string{
		"v=STSv1; id=20240101T000000": "20240101T000000",
		"v=STSv1;id=abc;ext=1":        "abc",
		"V=STSV1; id=x":               "x",
		"v=STSv1; id=":                "",
		"v=STSv1":                     "",
		"v=STSv1; id=a-b":             "",
		"v=STSv1; id=a; id=b":         "",
		"v=STSv1; id=123456789012345678901234567890123": "",
		"id=1; v=STSv1": "",
	} {
		r, err := ParseSTSRecord(rec)
		if want == "" {
			if err == nil {
				t.Errorf("%q: no error, id %q", rec, r.ID)
			}
			continue
		}
		if err != nil || r.ID != want {
			t.Errorf("%q: %q, %v; want %q", rec, r.ID, err, want)
		}
	}
}

func TestParseTLSRPTRecord(t *testing.T) {
	r, err := ParseTLSRPTRecord("v=TLSRPTv1; rua=mailto:tls@example.com,https://reports.example.com/tls, ftp://x")
	if err != nil || len(r.RUA) != 2 || MailtoAddress(r.RUA[0]) != "tls@example.com" || r.RUA[1].Host != "reports.example.com" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"v=TLSRPTv1", "v=TLSRPTv1; rua=ftp://x", "v=TLSRPTv1; rua=mailto:nobody", "v=TLSRPTv1; rua=mailto:a@b; rua=mailto:c@d", "v=STSv1; rua=mailto:a@b"} {
		if _, err := ParseTLSRPTRecord(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy([]byte("version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.Example.net.\r\nmax_age: 604800\r\nextension: x\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeEnforce || p.MaxAge != 7*24*time.Hour || len(p.MX) != 2 {
		t.Fatalf("%+v", p)
	}
	for host, want := range map[string]bool{
		"mail.example.com": true, "MAIL.example.com.": true, "mx1.example.net": true,
		"example.net": false, "a.b.example.net": false, "other.example.com": false,
	} {
		if p.Matches(host) != want {
			t.Errorf("Matches(%q) = %v", host, !want)
		}
	}
	again, err := ParsePolicy([]byte(p.String()))
	if err != nil || again.String() != p.String() {
		t.Errorf("round trip: %v\n%s", err, again)
	}
	if p, err := ParsePolicy([]byte("version: STSv1\nmode: none\nmax_age: 9999999999\n")); err != nil || p.MaxAge != MaxMaxAge {
		t.Errorf("mode none without mx: %+v %v", p, err)
	}
	for _, bad := range []string{
		"mode: enforce\nmx: a.example\nmax_age: 1\n",
		"version: STSv2\nmode: enforce\nmx: a.example\nmax_age: 1\n",
		"version: STSv1\nmode: strict\nmx: a.example\nmax_age: 1\n",
		"version: STSv1\nmode: enforce\nmax_age: 1\n",
		"version: STSv1\nmode: enforce\nmx: a.example\n",
		"version: STSv1\nmode: enforce\nmx: a.example\nmax_age: -1\n",
		"version: STSv1\nmode: enforce\nmx: a..example\nmax_age: 1\n",
		"version: STSv1\nmode: enforce\nmode: testing\nmx: a.example\nmax_age: 1\n",
		"version: STSv1\ngarbage\n",
	} {
		if _, err := ParsePolicy([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := ParsePolicy(make([]byte, MaxPolicySize+1)); err == nil {
		t.Error("oversized policy accepted")
	}
}
