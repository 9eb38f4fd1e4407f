package main

import (
	"log/slog"
	"testing"
	"time"

	"mailbolt/mta/dns"
)

// TestShutdownGraceReachesTheWorkers: --shutdown-grace bounds the delivery
// attempts and webhook requests in flight at shutdown, not only HTTP.
func TestShutdownGraceReachesTheWorkers(t *testing.T) {
	cfg := defaultServeConfig()
	cfg.shutdownGrace = 42 * time.Second
	o := cfg.appOptions(slog.New(slog.DiscardHandler), &dns.Resolver{}, nil, nil, graderSettings{})
	if o.Delivery.ShutdownGrace != cfg.shutdownGrace || o.Webhooks.Dispatch.ShutdownGrace != cfg.shutdownGrace {
		t.Fatalf("delivery %s, webhooks %s, want %s", o.Delivery.ShutdownGrace, o.Webhooks.Dispatch.ShutdownGrace, cfg.shutdownGrace)
	}
}
