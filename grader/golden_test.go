package grader

import (
	"context"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden results in testdata/grader")

// weakRecord is a DKIM record for a 512-bit RSA public key: only the
// modulus size matters to the grader (crypto/rsa refuses to make such keys).
func weakRecord() string {
	n := new(big.Int).Lsh(big.NewInt(1), 511)
	n.Add(n, big.NewInt(12345))
	pub, _ := asn1.Marshal(struct {
		N *big.Int
		E int
	}{n, 65537})
	der, _ := asn1.Marshal(struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}{pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}, Parameters: asn1.NullRawValue},
		asn1.BitString{Bytes: pub, BitLength: 8 * len(pub)}})
	return "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(der)
}

// TestGolden grades the reference domains against a loopback DNS
// server and compares the whole answer with testdata/grader/<case>.json
// (go test ./grader -run Golden -update rewrites them).
func TestGolden(t *testing.T) {
	manyIncludes := "v=spf1"
	for i := range 11 {
		manyIncludes += fmt.Sprintf(" include:s%d.ex", i)
	}
	manyIncludes += " -all"
	cases := []struct {
		name   string
		s      setup
		extra  func(z *zone)
		submit bool // with the sending IP, for the blocklist cases
	}{
		{name: "well-configured", s: good},
		{name: "no-spf", s: setup{dmarc: good.dmarc, dkim: true}},
		{name: "plus-all", s: setup{spf: "v=spf1 +all", dmarc: good.dmarc, dkim: true}},
		{name: "too-many-lookups", s: setup{spf: manyIncludes, dmarc: good.dmarc, dkim: true}, extra: func(z *zone) {
			for i := range 11 {
				z.TXT(fmt.Sprintf("s%d.ex", i), "v=spf1 ip4:192.0.2.10 -all")
			}
		}},
		{name: "p-none", s: setup{spf: good.spf, dmarc: "v=DMARC1; p=none; rua=mailto:dmarc@example.com", dkim: true}},
		// What domain setup lists (docs/domains.md): ~all and p=none with
		// reports, the monitoring stage.
		{name: "monitoring-stage", s: setup{spf: strings.Replace(good.spf, "-all", "~all", 1), dmarc: "v=DMARC1; p=none; rua=mailto:dmarc@example.com", dkim: true}},
		{name: "missing-dkim", s: setup{spf: good.spf, dmarc: good.dmarc}},
		{name: "weak-dkim-512", s: setup{spf: good.spf, dmarc: good.dmarc}, extra: func(z *zone) {
			z.LongTXT(selector+"._domainkey."+domain, weakRecord())
		}},
		{name: "blocklisted-ip", s: good, submit: true, extra: func(z *zone) { z.A("10.2.0.192.bl.test", "127.0.0.2") }},
		{name: "refused-blocklist", s: good, submit: true, extra: func(z *zone) { z.A("10.2.0.192.bl.test", "127.255.255.254") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			z, cfg := publish(t, c.s)
			if c.extra != nil {
				c.extra(z)
			}
			var res Result
			var err error
			if c.submit {
				res, err = Submit(context.Background(), cfg, Submission{From: "news@" + domain, Subject: "Your receipt",
					BodyText: "Thank you for your order. Your receipt is attached.", SenderIP: senderIP})
			} else {
				res, err = Check(context.Background(), cfg, domain, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(res, "", "  ")
			got = append(got, '\n')
			path := filepath.Join("..", "testdata", "grader", c.name+".json")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("result differs from %s:\n%s", path, diffLines(string(want), string(got)))
			}
		})
	}
}

// diffLines shows the first lines that differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)) && len(out) < 10; i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, a, b))
		}
	}
	return strings.Join(out, "\n")
}
