package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

func TestSpecialRanges(t *testing.T) {
	refused := map[string]string{
		"0.0.0.0":             "0.0.0.0/8",
		"0.1.2.3":             "0.0.0.0/8",
		"10.1.2.3":            "10.0.0.0/8",
		"100.64.0.1":          "100.64.0.0/10",
		"100.127.255.254":     "100.64.0.0/10",
		"127.0.0.1":           "127.0.0.0/8",
		"127.9.9.9":           "127.0.0.0/8",
		"169.254.169.254":     "169.254.0.0/16",
		"172.16.0.1":          "172.16.0.0/12",
		"192.168.1.1":         "192.168.0.0/16",
		"198.18.0.1":          "198.18.0.0/15",
		"198.19.255.255":      "198.18.0.0/15",
		"224.0.0.1":           "224.0.0.0/4",
		"255.255.255.255":     "240.0.0.0/4",
		"::":                  "::/128",
		"::1":                 "::1/128",
		"fe80::1":             "fe80::/10",
		"fe80::1%eth0":        "fe80::/10",
		"fc00::1":             "fc00::/7",
		"fd12:3456::1":        "fc00::/7",
		"ff02::1":             "ff00::/8",
		"::ffff:127.0.0.1":    "127.0.0.0/8", // IPv4-mapped forms are judged as IPv4
		"::ffff:10.0.0.1":     "10.0.0.0/8",
		"::ffff:100.64.0.1":   "100.64.0.0/10",
		"::ffff:198.18.0.1":   "198.18.0.0/15",
		"::ffff:0.0.0.0":      "0.0.0.0/8",
		"::ffff:169.254.1.1":  "169.254.0.0/16",
		"::127.0.0.1":         "::/96", // IPv4-compatible
		"::ffff:0:7f00:1":     "::ffff:0:0:0/96",
		"64:ff9b::7f00:1":     "64:ff9b::/96", // NAT64 of 127.0.0.1
		"64:ff9b::a00:1":      "64:ff9b::/96",
		"64:ff9b::808:808":    "64:ff9b::/96", // the whole prefix: a NAT64 gateway is someone's internal box
		"64:ff9b:1::a00:1":    "64:ff9b:1::/48",
		"2002:7f00:1::1":      "2002::/16", // 6to4 of 127.0.0.1
		"2002:a00:1::1":       "2002::/16", // 6to4 of 10.0.0.1
		"2001:0:4136:e378::1": "2001::/32", // Teredo
		"2001:db8::1":         "2001:db8::/32",
		"100::1":              "100::/64",
	}
	for a, want := range refused {
		r, ok := Special(netip.MustParseAddr(a))
		if !ok || r.Prefix.String() != want {
			t.Errorf("Special(%s) = %v %v, want %s", a, r, ok, want)
		}
		var re *RefusedError
		if err := (Policy{}).Check(netip.MustParseAddr(a)); !errors.As(err, &re) {
			t.Errorf("Check(%s) = %v, want refused", a, err)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "198.17.255.255",
		"198.20.0.0", "::ffff:8.8.8.8", "2606:4700:4700::1111", "2002:808:808::1", "2a00:1450::1"} {
		if r, ok := Special(netip.MustParseAddr(a)); ok {
			t.Errorf("Special(%s) = %v, want public", a, r)
		}
		if err := (Policy{}).Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("Check(%s) = %v", a, err)
		}
	}
}

func TestPolicy(t *testing.T) {
	err := Policy{}.Check(netip.MustParseAddr("::ffff:127.0.0.1"))
	if err == nil || err.Error() != "127.0.0.1 is in 127.0.0.0/8 (loopback)" {
		t.Errorf("error %v names the address as mapped, or not at all", err)
	}
	allow := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, a := range []string{"127.0.0.1", "::ffff:127.0.0.1"} {
		if err := allow.Check(netip.MustParseAddr(a)); err != nil {
			t.Errorf("allowed %s refused: %v", a, err)
		}
	}
	for _, a := range []string{"10.0.0.1", "::1", "64:ff9b::7f00:1"} {
		if allow.Check(netip.MustParseAddr(a)) == nil {
			t.Errorf("%s allowed by 127.0.0.0/8", a)
		}
	}
	mapped := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}}
	if err := mapped.Check(netip.MustParseAddr("10.1.2.3")); err != nil {
		t.Errorf("an IPv4-mapped allowance does not cover its IPv4 address: %v", err)
	}
	if (Policy{AllowPrivate: true}).Check(netip.MustParseAddr("127.0.0.1")) != nil {
		t.Error("AllowPrivate refused loopback")
	}
}
