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
