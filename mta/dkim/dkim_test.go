package dkim

import (
	"bytes"
	"context"
	"strings"
	"testing"

	msgauth "github.com/emersion/go-msgauth/dkim"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
)

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
			key, err := GenerateKey(alg)
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
			r := &dns.Resolver{Server: zone.Addr}
			verify := func(msg []byte) []*msgauth.Verification {
				vs, err := msgauth.VerifyWithOptions(bytes.NewReader(msg), &msgauth.VerifyOptions{
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
