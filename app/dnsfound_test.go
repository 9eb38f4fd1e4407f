package app

import (
	"strings"
	"testing"
	"unicode/utf8"

	"mailbolt/mta/dkim"
)

// The records view shows only what a check looked for: the server's
// resolver may see internal names and tokens that a tenant must not read
// by adding a domain and verifying it.
func TestFoundShowsOnlyRecordsOfTheKind(t *testing.T) {
	e := newDomainEnv(t, DomainOptions{TrackingHost: "track.mailbolt.test"})
	d := e.create("leak.test")
	other, _ := dkim.GenerateKey(dkim.AlgEd25519)
	longSPF := "v=spf1 " + strings.Repeat("ip4:192.0.2.1 ", 60) + "~all"
	e.zone.TXT("leak.test", "internal-api-token=s3cret-apex")
	e.zone.TXT("leak.test", "google-site-verification=s3cret-gsv")
	e.zone.LongTXT("leak.test", longSPF)
	e.zone.TXT("_dmarc.leak.test", "v=DMARC1; p=none")
	e.zone.TXT("_dmarc.leak.test", "vault=s3cret-dmarc")
	e.zone.TXT("_dmarc.leak.test", "v=DMARC1x s3cret-lookalike")
	sel := d.DKIMKeys[0].Selector
	e.zone.TXT(dkimName(sel, d.Name), other.RecordValue())
	e.zone.TXT(dkimName(sel, d.Name), "db-password=s3cret-dkim")
	e.zone.TXT(dkimName(sel, d.Name), "v=DKIM2; p=s3cret-version")
	e.zone.CNAME("bounces.leak.test", "s3cret-internal.corp.example")
	e.zone.CNAME("track.leak.test", "track.mailbolt.test")
	d = e.verify(d)

	want := map[string][]string{
		PurposeSPF:        {longSPF[:MaxFoundBytes]},
		PurposeDMARC:      {"v=DMARC1; p=none"},
		PurposeDKIM:       {other.RecordValue()},
		PurposeReturnPath: {OtherCNAMETarget},
		PurposeTracking:   {"track.mailbolt.test"},
	}
	for _, r := range e.app.Records(d) {
		if strings.Join(r.Found, "|") != strings.Join(want[r.Purpose], "|") {
			t.Errorf("%s found %q, want %q", r.Purpose, r.Found, want[r.Purpose])
		}
		for _, v := range r.Found {
			if len(v) > MaxFoundBytes {
				t.Errorf("%s: a found value of %d bytes", r.Purpose, len(v))
			}
		}
	}
	// Nor is any of it kept in the database.
	for _, c := range d.Checks {
		for _, v := range c.Found {
			if strings.Contains(v, "s3cret") {
				t.Errorf("%s check keeps %q", c.Purpose, v)
			}
		}
	}
	// The SPF suggestion still starts from the whole record.
	if r := e.record(d, PurposeSPF); r.Status != RecordMismatch || !strings.HasSuffix(r.Value, "a:mx.mailbolt.test ~all") ||
		!strings.HasPrefix(r.Value, longSPF[:len(longSPF)-len("~all")]) {
		t.Errorf("SPF suggestion %q (%s)", r.Value, r.Status)
	}
}

func TestTruncateUTF8(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"},                      // é is two bytes: not cut in half
		{"a€b", 3, "a"},                     // € is three
		{"\xff\xfe\xfd\xfc", 2, "\xff\xfe"}, // not UTF-8: cut at the byte
	} {
		got := truncateUTF8(c.in, c.n)
		if got != c.want || (utf8.ValidString(c.in) && !utf8.ValidString(got)) {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
