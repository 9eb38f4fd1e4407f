package queue

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	msgauth "github.com/emersion/go-msgauth/dkim"

	"mailbolt/mta/dkim"
	"mailbolt/mta/message"
)

// TestBuildThenSignVerifies signs a built message with both key types, as
// send does, and verifies it with go-msgauth, as a receiver would: what
// the builder writes (encoded words, folded headers, attachments, long
// HTML lines) must survive relaxed canonicalization, and the signature
// must cover the headers that matter.
func TestBuildThenSignVerifies(t *testing.T) {
	m := message.Message{
		From:    message.Address{Name: "Zoë", Email: "sender@example.test"},
		To:      []message.Address{{Name: "Rcpt", Email: "rcpt@dest.test"}},
		Cc:      []message.Address{{Name: "Copy", Email: "cc@dest.test"}},
		Subject: "Grüße — your invoice " + strings.Repeat("is ready ", 20),
		HTML:    strings.Repeat("<p>Hello   world\r\n", 200),
		Text:    "Hello\n\n  world  \n",
		Date:    time.Date(2026, 11, 22, 12, 0, 0, 0, time.FixedZone("CET", 3600)),
		Attachments: []message.Attachment{
			{Filename: "logo.png", Content: []byte("\x89PNG\r\n\x1a\n\x00\x00binary"), ContentID: "logo@example.test"},
			{Filename: "invoice.pdf", ContentType: "application/pdf", Content: []byte("%PDF-1.7\n\x00\xff")},
		},
		Headers:             [][2]string{{"X-Campaign", "spring"}},
		ListUnsubscribe:     "<https://mail.example.test/u/1>",
		ListUnsubscribePost: "List-Unsubscribe=One-Click",
	}
	raw, err := message.Build(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{dkim.AlgEd25519, dkim.AlgRSA2048} {
		t.Run(alg, func(t *testing.T) {
			key, err := dkim.GenerateKey(alg)
			if err != nil {
				t.Fatal(err)
			}
			signer, err := key.Signer()
			if err != nil {
				t.Fatal(err)
			}
			signed, err := dkim.Sign(raw, "example.test", "mb1", signer)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(strings.TrimSuffix(string(signed), "\r\n"), "\r\n") {
				if len(line) > 998 || strings.ContainsAny(line, "\r\n") {
					t.Fatalf("line %d is not a CRLF line of at most 998 octets: %q", i, line)
				}
			}
			lookup := func(domain string) ([]string, error) {
				if domain != "mb1._domainkey.example.test" {
					return nil, fmt.Errorf("unexpected lookup %q", domain)
				}
				return []string{key.RecordValue()}, nil
			}
			vs, err := msgauth.VerifyWithOptions(bytes.NewReader(signed), &msgauth.VerifyOptions{LookupTXT: lookup})
			if err != nil || len(vs) != 1 || vs[0].Err != nil {
				t.Fatalf("verify: %v %+v", err, vs)
			}
			signedKeys := strings.ToLower(strings.Join(vs[0].HeaderKeys, ":"))
			for _, k := range []string{"from", "to", "cc", "subject", "date", "message-id", "mime-version", "content-type", "list-unsubscribe", "list-unsubscribe-post"} {
				if !strings.Contains(":"+signedKeys+":", ":"+k+":") {
					t.Errorf("signature does not cover %s (h=%s)", k, signedKeys)
				}
			}
		})
	}
}
