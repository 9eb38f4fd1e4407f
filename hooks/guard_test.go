package hooks

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestGuardAddresses(t *testing.T) {
	var g Guard
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
		"100.64.0.1", "224.0.0.1", "::1", "fe80::1", "fc00::1", "ff02::1", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1"} {
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
