package mta

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"mailbolt/mta/dnstest"
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

func TestSplitTXT(t *testing.T) {
	if SplitTXT("short") != "short" {
		t.Error("short value changed")
	}
	long := strings.Repeat("a", 255) + strings.Repeat("b", 100)
	want := `"` + strings.Repeat("a", 255) + `" "` + strings.Repeat("b", 100) + `"`
	if got := SplitTXT(long); got != want {
		t.Errorf("SplitTXT = %q", got)
	}
}

const testMessage = "From: Sender <sender@example.test>\r\n" +
	"To: rcpt@dest.test\r\n" +
	"Subject: Hello\r\n" +
	"Date: Sun, 22 Nov 2026 12:00:00 +0000\r\n" +
	"Message-ID: <1@example.test>\r\n" +
	"List-Unsubscribe: <https://mail.example.test/u/1>\r\n" +
	"List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n" +
	"MIME-Version: 1.0\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"\r\n" +
	"Hi there.\r\n"

// TestPublishedRecordVerifiesSignature signs with a generated key, publishes
// RecordValue (split into 255-byte strings, as a provider stores it) in a
// real DNS server, and checks the signature with go-msgauth's verifier
// resolving through that server.
func TestPublishedRecordVerifiesSignature(t *testing.T) {
	for _, alg := range []string{AlgRSA2048, AlgEd25519} {
		t.Run(alg, func(t *testing.T) {
			key, err := GenerateDKIMKey(alg)
			if err != nil {
				t.Fatal(err)
			}
			zone := dnstest.Start(t)
			zone.LongTXT("mb1._domainkey.example.test", key.RecordValue())
			signer, err := key.Signer()
			if err != nil {
				t.Fatal(err)
			}
			signed, err := Sign([]byte(testMessage), "example.test", "mb1", signer)
			if err != nil {
				t.Fatal(err)
			}
			sig := string(signed[:bytes.Index(signed, []byte("\r\nFrom:"))])
			for _, want := range []string{"c=relaxed/relaxed", "list-unsubscribe", "list-unsubscribe-post", "a=" + map[string]string{AlgRSA2048: "rsa-sha256", AlgEd25519: "ed25519-sha256"}[alg]} {
				if !strings.Contains(strings.ToLower(sig), want) {
					t.Errorf("signature lacks %s: %s", want, sig)
				}
			}
			r := &Resolver{Server: zone.Addr}
			verify := func(msg []byte) []*dkim.Verification {
				vs, err := dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{
					LookupTXT: func(domain string) ([]string, error) { return r.LookupTXT(context.Background(), domain) },
				})
				if err != nil {
					t.Fatal(err)
				}
				return vs
			}
			vs := verify(signed)
			if len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "example.test" {
				t.Fatalf("verification: %+v", vs[0])
			}
			// Changing the one-click header breaks the signature.
			tampered := bytes.Replace(signed, []byte("One-Click"), []byte("Two-Click"), 1)
			if vs := verify(tampered); vs[0].Err == nil {
				t.Fatal("tampered List-Unsubscribe-Post still verifies")
			}
		})
	}
}
