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

// TLSA records come back with the AD bit of a signed zone, and without it
// from an unsigned one; an MX answer reports the same.
func TestLookupTLSAAndAD(t *testing.T) {
	zone := dnstest.Start(t)
	zone.TLSA("_25._tcp.mx.signed.test", 3, 1, 1, "0a0b0c")
	zone.TLSA("_25._tcp.mx.plain.test", 2, 0, 2, "ff")
	zone.MX("signed.test", 10, "mx.signed.test")
	zone.Signed("signed.test", true)
	r := &Resolver{Server: zone.Addr, Timeout: 2 * time.Second}
	ctx := context.Background()
	recs, secure, err := r.LookupTLSA(ctx, "_25._tcp.mx.signed.test")
	if err != nil || !secure || len(recs) != 1 || recs[0].Usage != 3 || recs[0].Selector != 1 || recs[0].MatchingType != 1 || string(recs[0].Data) != "\x0a\x0b\x0c" {
		t.Fatalf("signed TLSA = %+v, %v, %v", recs, secure, err)
	}
	if recs, secure, err := r.LookupTLSA(ctx, "_25._tcp.mx.plain.test"); err != nil || secure || len(recs) != 1 || recs[0].Usage != 2 {
		t.Fatalf("unsigned TLSA = %+v, %v, %v", recs, secure, err)
	}
	if _, _, err := r.LookupTLSA(ctx, "_25._tcp.none.signed.test"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no TLSA: %v", err)
	}
	if mxs, secure, err := r.LookupMXSecure(ctx, "signed.test"); err != nil || !secure || len(mxs) != 1 {
		t.Fatalf("MX = %v, %v, %v", mxs, secure, err)
	}
	// A validated denial: no MX at a name that exists (NODATA) or at one
	// that does not (NXDOMAIN) says so; LookupMX never asks for the bit.
	zone.A("nomx.signed.test", "192.0.2.1")
	for _, name := range []string{"nomx.signed.test", "gone.signed.test"} {
		if mxs, secure, err := r.LookupMXSecure(ctx, name); !errors.Is(err, ErrNotFound) || !secure || mxs != nil {
			t.Errorf("MX of %s = %v, %v, %v: want a validated ErrNotFound", name, mxs, secure, err)
		}
	}
	zone.Signed("signed.test", false)
	if _, secure, _ := r.LookupMXSecure(ctx, "signed.test"); secure {
		t.Fatal("an unsigned zone's answer was taken as validated")
	}
	if _, secure, err := r.LookupMXSecure(ctx, "nomx.signed.test"); !errors.Is(err, ErrNotFound) || secure {
		t.Fatalf("an unsigned zone's denial: %v, %v", secure, err)
	}
}
