package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
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
