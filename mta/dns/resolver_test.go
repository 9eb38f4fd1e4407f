package dns

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dns/dnstest"
)

func TestResolverOutcomes(t *testing.T) {
	zone := dnstest.Start(t)
	zone.TXT("example.test", "v=spf1 ", "include:mail.test ~all")
	zone.TXT("example.test", "other")
	zone.CNAME("bounces.example.test", "mx.mailbolt.test")
	zone.MX("mx-only.test", 10, "mx.example.test")
	zone.ServFail("broken.test", true)
	zone.Silent("slow.test", true)
	r := &Resolver{Server: zone.Addr, Timeout: 300 * time.Millisecond}
	ctx := context.Background()

	txt, err := r.LookupTXT(ctx, "Example.Test")
	if err != nil || len(txt) != 2 || txt[0] != "v=spf1 include:mail.test ~all" {
		t.Fatalf("TXT = %q, %v (strings of one record must be joined)", txt, err)
	}
	if target, err := r.LookupCNAME(ctx, "bounces.example.test"); err != nil || target != "mx.mailbolt.test" {
		t.Fatalf("CNAME = %q, %v", target, err)
	}
	// A TXT lookup follows a CNAME within the answer.
	zone.TXT("key.provider.test", "v=DKIM1; p=abc")
	zone.CNAME("sel._domainkey.example.test", "key.provider.test")
	if txt, err := r.LookupTXT(ctx, "sel._domainkey.example.test"); err != nil || len(txt) != 1 || txt[0] != "v=DKIM1; p=abc" {
		t.Fatalf("TXT through CNAME = %q, %v", txt, err)
	}
	if _, err := r.LookupTXT(ctx, "nowhere.test"); !errors.Is(err, ErrNotFound) || IsTemporary(err) {
		t.Errorf("NXDOMAIN: %v", err)
	}
	if _, err := r.LookupTXT(ctx, "mx-only.test"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no data: %v", err)
	}
	if _, err := r.LookupTXT(ctx, "broken.test"); !IsTemporary(err) || errors.Is(err, ErrNotFound) {
		t.Errorf("SERVFAIL: %v", err)
	}
	if _, err := r.LookupTXT(ctx, "slow.test"); !IsTemporary(err) {
		t.Errorf("timeout: %v", err)
	}
	dead := &Resolver{Server: "127.0.0.1:1", Timeout: 200 * time.Millisecond}
	if _, err := dead.LookupTXT(ctx, "example.test"); !IsTemporary(err) {
		t.Errorf("no server: %v", err)
	}
}

func TestTXTBytesAreUnescaped(t *testing.T) {
	zone := dnstest.Start(t)
	zone.TXT("bytes.test", "caf\xc3\xa9 \"quoted\" back\\slash")
	r := &Resolver{Server: zone.Addr}
	txt, err := r.LookupTXT(context.Background(), "bytes.test")
	if err != nil || len(txt) != 1 || txt[0] != "caf\xc3\xa9 \"quoted\" back\\slash" {
		t.Fatalf("got %q, %v", txt, err)
	}
}

func TestResolverFallsBackToTCPOnTruncation(t *testing.T) {
	zone := dnstest.Start(t)
	// Enough records to overflow a 512-byte UDP answer without EDNS0 room.
	for i := 0; i < 40; i++ {
		zone.TXT("big.test", strings.Repeat("x", 200))
	}
	r := &Resolver{Server: zone.Addr}
	txt, err := r.LookupTXT(context.Background(), "big.test")
	if err != nil || len(txt) != 40 {
		t.Fatalf("got %d records, %v", len(txt), err)
	}
}
