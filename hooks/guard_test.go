package hooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
)

func TestGuardAddresses(t *testing.T) {
	var g Guard
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
		"100.64.0.1", "224.0.0.1", "::1", "fe80::1", "fc00::1", "ff02::1", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
		"0.1.2.3", "198.18.0.1", "::ffff:100.64.0.1", "::ffff:198.19.0.1", "::ffff:0.0.0.0", "64:ff9b::7f00:1",
		"64:ff9b:1::a00:1", "2002:7f00:1::1", "::127.0.0.1", "2001:0:4136:e378::1"} {
		if err := g.CheckAddr(netip.MustParseAddr(a)); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("%s allowed", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"} {
		if err := g.CheckAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	allow := Guard{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	if allow.CheckAddr(netip.MustParseAddr("10.9.9.9")) != nil || allow.CheckAddr(netip.MustParseAddr("127.0.0.1")) == nil {
		t.Error("allow-list")
	}
	if (Guard{AllowPrivate: true}).CheckAddr(netip.MustParseAddr("127.0.0.1")) != nil {
		t.Error("dev mode")
	}
}

func TestGuardURLs(t *testing.T) {
	var g Guard
	resolveTo := func(ip string) func(context.Context, string) ([]net.IPAddr, error) {
		return func(context.Context, string) ([]net.IPAddr, error) { return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil }
	}
	ctx := context.Background()
	for raw, lookup := range map[string]func(context.Context, string) ([]net.IPAddr, error){
		"https://hooks.example.com/x": resolveTo("93.184.216.34"),
		"https://8.8.8.8:8443/x":      nil,
	} {
		if err := g.CheckURL(ctx, raw, lookup); err != nil {
			t.Errorf("%s refused: %v", raw, err)
		}
	}
	for raw, lookup := range map[string]func(context.Context, string) ([]net.IPAddr, error){
		"http://hooks.example.com/x":               resolveTo("93.184.216.34"), // plain http
		"https://internal.example.com/x":           resolveTo("10.0.0.5"),
		"https://127.0.0.1/x":                      nil,
		"https://[::1]/x":                          nil,
		"https://localhost/x":                      nil,
		"https://user:pw@hooks.example.com/x":      resolveTo("93.184.216.34"),
		"ftp://hooks.example.com/x":                nil,
		"/relative":                                nil,
		"https://169.254.169.254/latest/meta-data": nil,
	} {
		if err := g.CheckURL(ctx, raw, lookup); err == nil {
			t.Errorf("%s accepted", raw)
		}
	}
	dev := Guard{AllowPrivate: true, AllowHTTP: true}
	if err := dev.CheckURL(ctx, "http://127.0.0.1:9000/hook", nil); err != nil {
		t.Errorf("dev refused loopback: %v", err)
	}
}

// TestGuardURLsThatCannotBeReached: a port outside 1–65535, and a host
// that a browser or inet_aton reads as an IPv4 address but a connection
// would look up as a name, are refused at creation, in --dev too; a
// trailing dot does not hide localhost; names that merely hold numbers
// are names.
func TestGuardURLsThatCannotBeReached(t *testing.T) {
	ctx := context.Background()
	public := func(context.Context, string) ([]net.IPAddr, error) {
		return []net.IPAddr{{IP: net.ParseIP("93.184.216.34")}}, nil
	}
	for _, raw := range []string{
		"https://hooks.example.com:1/x",
		"https://hooks.example.com:65535/x",
		"https://hooks.example.com:/x", // an empty port is the default
		"https://hooks.example.com./x",
		"https://123.example.com/x",
		"https://0x10.example.com/x",
		"https://a.0x1g/x",
		"https://8.8.8.8:443/x",
	} {
		if err := (Guard{}).CheckURL(ctx, raw, public); err != nil {
			t.Errorf("%s refused: %v", raw, err)
		}
	}
	for raw, want := range map[string]string{
		"https://hooks.example.com:99999/x": "port 99999 is not a port",
		"https://hooks.example.com:0/x":     "port 0 is not a port",
		"https://hooks.example.com:65536/x": "port 65536",
		"https://127.1/x":                   `"127.1" reads as an IPv4 address (127.0.0.1)`,
		"https://2130706433/x":              "(127.0.0.1)",
		"https://0x7f000001/x":              "(127.0.0.1)",
		"https://0X7F000001/x":              "(127.0.0.1)",
		"https://0177.0.0.1/x":              "(127.0.0.1)",
		"https://127.0.0.1./x":              "(127.0.0.1)",
		"https://8.8.8.8./x":                "(8.8.8.8)",
		"https://134744072/x":               "(8.8.8.8)",
		"https://1.2.3.4.5/x":               `"1.2.3.4.5" reads as an IPv4 address in a form`,
		"https://hooks.example.123/x":       "reads as an IPv4 address in a form",
		"https://localhost./x":              "127.0.0.1 is in 127.0.0.0/8",
		"https://LocalHost./x":              "127.0.0.1 is in 127.0.0.0/8",
		"https://api.localhost./x":          "127.0.0.1 is in 127.0.0.0/8",
	} {
		err := (Guard{}).CheckURL(ctx, raw, public)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", raw, err, want)
		}
	}
	dev := Guard{AllowPrivate: true, AllowHTTP: true}
	if err := dev.CheckURL(ctx, "http://localhost.:9000/hook", nil); err != nil {
		t.Errorf("dev refused localhost.: %v", err)
	}
	for _, raw := range []string{"http://127.1:9000/hook", "http://localhost:0/hook", "http://localhost:70000/hook"} {
		if err := dev.CheckURL(ctx, raw, nil); err == nil {
			t.Errorf("dev accepted %s, which no connection can reach", raw)
		}
	}
}

func TestParseInetAton(t *testing.T) {
	for host, want := range map[string]string{
		"127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "0x7f.1": "127.0.0.1", "10.0x10.0377.1": "10.16.255.1", "0": "0.0.0.0",
		"0x": "0.0.0.0", "1.2.3.4": "1.2.3.4", "4294967295": "255.255.255.255",
		"4294967296": "", "1.2.3.256": "", "256.1": "", "1.16777216": "", "1.2.3.4.5": "", "08": "", "0x1g": "", "1..2": "", "": "",
	} {
		ip, ok := parseInetAton(host)
		if got := map[bool]string{true: ip.String(), false: ""}[ok]; got != want {
			t.Errorf("%q: %q, want %q", host, got, want)
		}
	}
}

// TestConnectionsResolveThroughLookup: the connection resolves a receiver's
// name through Options.Lookup (the --dns-server that also checked the URL
// at create), never through the system resolver, and the guard judges the
// addresses that resolver gives.
func TestConnectionsResolveThroughLookup(t *testing.T) {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	t.Cleanup(recv.Close)
	_, port, _ := net.SplitHostPort(recv.Listener.Addr().String())
	zone := dnstest.Start(t)
	zone.A("hooks.zone.test", "127.0.0.1") // a name only the zone knows
	zone.A("internal.zone.test", "10.0.0.7")
	zone.A("mapped.zone.test", "127.0.0.1")
	zone.A("mixed.zone.test", "10.0.0.7")
	zone.A("mixed.zone.test", "127.0.0.1")
	resolver := &dns.Resolver{Server: zone.Addr, Timeout: time.Second}
	loopback := Guard{AllowHTTP: true, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	post := func(g Guard, host string) result {
		client := newClient(g, resolver.LookupIPAddr, 2*time.Second, 2)
		j := job{url: "http://" + net.JoinHostPort(host, port) + "/hook", keys: [][]byte{[]byte("k")}, body: []byte("{}")}
		return send(context.Background(), client, j, time.Now)
	}
	for _, host := range []string{"hooks.zone.test", "mixed.zone.test"} {
		if r := post(loopback, host); r.status != 204 {
			t.Errorf("%s: not reached through the zone: %+v", host, r)
		}
	}
	for host, g := range map[string]Guard{
		"internal.zone.test": loopback,          // the zone says 10.0.0.7: refused
		"mapped.zone.test":   {AllowHTTP: true}, // the zone says 127.0.0.1: refused without an allowance
		"127.0.0.1":          {AllowHTTP: true}, // a literal is judged as it is
		"[::ffff:127.0.0.1]": {AllowHTTP: true}, // and so is its IPv4-mapped form
		"[64:ff9b::7f00:1]":  {AllowHTTP: true}, // and NAT64
	} {
		r := post(g, strings.Trim(host, "[]"))
		if r.status != 0 || !r.refused || !strings.Contains(r.err, "not allowed") {
			t.Errorf("%s: want refused, got %+v", host, r)
		}
	}
}
