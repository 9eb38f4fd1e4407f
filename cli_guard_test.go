package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"mailbolt/mta"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/mta/smtptest"
	"mailbolt/storage"
)

// TestWebhooksResolveThroughTheDNSServer: serve gives the webhook worker
// the --dns-server resolver, which the URL check at create uses too (app
// reads the same Dispatch.Lookup), so a name that only the configured
// server knows resolves for both, and no name takes another way.
func TestWebhooksResolveThroughTheDNSServer(t *testing.T) {
	zone := dnstest.Start(t)
	zone.A("hooks.zone.test", "192.0.2.80")
	resolver := &dns.Resolver{Server: zone.Addr, Timeout: time.Second}
	gs, err := readGraderSettings(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	o := defaultServeConfig().appOptions(slog.New(slog.DiscardHandler), resolver, nil, nil, gs)
	addrs, err := o.Webhooks.Dispatch.Lookup(context.Background(), "hooks.zone.test")
	if err != nil || len(addrs) != 1 || addrs[0].IP.String() != "192.0.2.80" {
		t.Fatalf("webhook lookup = %v, %v; want the zone's 192.0.2.80", addrs, err)
	}
}

// TestServeMXGuard: serve's SMTP client refuses an MX on loopback unless
// --mx-allow-cidrs lists it or --dev is on; a --relay on loopback is the
// operator's own and is used as given.
func TestServeMXGuard(t *testing.T) {
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	zone := destZone(t)
	resolver := &dns.Resolver{Server: zone.Addr, Timeout: time.Second}
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	env := mta.Envelope{From: "b@mailbolt.test", To: []string{"x@dest.test"}, Data: []byte("Subject: t\r\n\r\nt\r\n")}
	for _, c := range []struct {
		name string
		set  func(*serveConfig)
		want mta.Status
	}{
		{"default", func(*serveConfig) {}, mta.StatusPermanent},
		{"--webhook-allow-cidrs is for webhooks only", func(c *serveConfig) { c.webhookAllow = []net.IPNet{*loopback} }, mta.StatusPermanent},
		{"--mx-allow-cidrs", func(c *serveConfig) { c.mxAllow = []net.IPNet{*loopback} }, mta.StatusDelivered},
		{"--dev", func(c *serveConfig) { c.dev = true }, mta.StatusDelivered},
		{"--relay", func(c *serveConfig) { c.relay = sink.Addr }, mta.StatusDelivered},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := defaultServeConfig()
			cfg.mxPort, cfg.hostname = sink.Port, "mx.mailbolt.test"
			c.set(&cfg)
			db, err := storage.Open(t.TempDir(), storage.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			d, _, err := cfg.deliverer(db, resolver, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			r := d.Send(context.Background(), env)[0]
			if r.Status != c.want {
				t.Fatalf("%s: %+v, want %s", c.name, r, c.want)
			}
			if r.Status == mta.StatusPermanent && (r.Bounce.Type != mta.BounceHard || !strings.Contains(r.Text, "127.0.0.1")) {
				t.Fatalf("%s: refusal %+v is not a hard bounce naming 127.0.0.1", c.name, r)
			}
		})
	}
	if _, err := run(t, "serve", "--data-dir", t.TempDir(), "--mx-allow-cidrs", "loopback"); err == nil ||
		!strings.Contains(err.Error(), "mx-allow-cidrs") {
		t.Fatalf("a bad --mx-allow-cidrs: %v", err)
	}
}
