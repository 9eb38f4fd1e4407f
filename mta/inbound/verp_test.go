package inbound

import "testing"

func TestParseVERP(t *testing.T) {
	const id = "0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	legacy := VERP{MessageID: id, Legacy: true, Domain: "example.com"}
	mac := VERP{MessageID: id, Index: 3, MAC: "abcdefghijklmnopqrstuvwx", Domain: "example.com"}
	for in, want := range map[string]VERP{
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com":                              legacy,
		"<b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com>":                            legacy,
		"rfc822; b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.mail.example":                     {MessageID: id, Legacy: true, Domain: "mail.example"},
		"B+0195A1B2C3D47E5F8A9B0C1D2E3F4A5B@Bounces.Example.COM":                              legacy,
		" b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com ":                            legacy,
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.3.abcdefghijklmnopqrstuvwx@bounces.example.com":   mac,
		"B+0195A1B2C3D47E5F8A9B0C1D2E3F4A5B.3.ABCDEFGHIJKLMNOPQRSTUVWX@BOUNCES.EXAMPLE.COM":   mac, // case changed on the way
		"<b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.3.abcdefghijklmnopqrstuvwx@bounces.example.com>": mac,
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.03.abcdefghijklmnopqrstuvwx@bounces.example.com":  {}, // index not canonical
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.-1.abcdefghijklmnopqrstuvwx@bounces.example.com":  {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.3.abcdefgh1jklmnopqrstuvwx@bounces.example.com":   {}, // 1 is not base32
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.3.@bounces.example.com":                           {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.3@bounces.example.com":                            {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b..abc@bounces.example.com":                         {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5bx3.abc@bounces.example.com":                        {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b.3.abc.def@bounces.example.com":                    {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5@bounces.example.com":                               {}, // 31 digits
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b0@bounces.example.com":                             {}, // 33
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5g@bounces.example.com":                              {}, // not hex
		"b+0195a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b@bounces.example.com":                          {}, // dashed
		"x+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com":                              {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@example.com":                                      {}, // not the bounce domain
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.":                                         {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bouncesexample.com":                               {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com@evil.test":                    {},
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b":                                                  {},
		"":                                                                                    {},
		"<>":                                                                                  {},
	} {
		got, ok := ParseVERP(in)
		if got != want || ok != (want != VERP{}) {
			t.Errorf("ParseVERP(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
}

func TestAddressAndIDHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"rfc822; Ann@Example.ORG":            "Ann@example.org",
		"RFC822;<ann@example.org>":           "ann@example.org",
		"Ann <ann@EXAMPLE.org>":              "ann@example.org",
		"ann@example.org (Ann)":              "ann@example.org",
		"<>":                                 "",
		"":                                   "",
		"x400; /C=us/ADMD=att/PRMD=example/": "/C=us/ADMD=att/PRMD=example/",
	} {
		if got := bareAddress(in); got != want {
			t.Errorf("bareAddress(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"<a@b>":            "<a@b>",
		"  <a@b> (note)":   "<a@b>",
		"<a@b> <c@d>":      "<a@b>",
		"a@b":              "<a@b>",
		"<a\r\n @b>":       "<a@b>",
		"<>":               "",
		"<a@b":             "",
		"a b@c":            "",
		"":                 "",
		"junk <> and more": "",
	} {
		if got := messageID(in); got != want {
			t.Errorf("messageID(%q) = %q, want %q", in, got, want)
		}
	}
}
