package dnscheck

import (
	"context"
	"crypto/rand"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
)

// oidRSA is rsaEncryption (RFC 8017 appendix A.1).
var oidRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}

// parseDKIMKey reads a DKIM key record (RFC 6376 §3.6.1; RFC 8463 for
// ed25519). It fills in Type, Bits and Revoked; Problem says what is wrong
// with a record that is not a usable key.
func parseDKIMKey(selector, txt string) KeyInfo {
	k := KeyInfo{Selector: selector, Type: "rsa"}
	tags := map[string]string{}
	for i, part := range strings.Split(txt, ";") {
		name, value, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok {
			if name != "" {
				k.Problem = fmt.Sprintf("malformed tag %q", strings.TrimSpace(part))
				return k
			}
			continue
		}
		if i == 0 && name == "v" && strings.TrimSpace(value) != "DKIM1" {
			k.Problem = "v= is not DKIM1"
			return k
		}
		if _, dup := tags[name]; !dup {
			tags[name] = strings.TrimSpace(value)
		}
	}
	if kt, ok := tags["k"]; ok {
		k.Type = strings.ToLower(kt)
	}
	p, ok := tags["p"]
	if !ok {
		k.Problem = "no p= tag"
		return k
	}
	p = strings.Join(strings.Fields(p), "")
	if p == "" {
		k.Revoked = true
		return k
	}
	der, err := base64.StdEncoding.DecodeString(p)
	if err != nil {
		k.Problem = "p= is not valid base64"
		return k
	}
	switch k.Type {
	case "ed25519":
		if len(der) != 32 {
			k.Problem = fmt.Sprintf("an ed25519 key is 32 bytes, p= holds %d", len(der))
			return k
		}
		k.Bits = 256
	case "rsa":
		n, err := rsaModulus(der)
		if err != nil {
			k.Problem = err.Error()
			return k
		}
		k.Bits = n.BitLen()
	default:
		k.Problem = fmt.Sprintf("unknown key type k=%s", k.Type)
	}
	return k
}

// rsaModulus reads the modulus of an RSA public key in
// SubjectPublicKeyInfo DER (what RFC 6376 asks for) or, as some publish
// it, a bare RSAPublicKey (PKCS #1). It parses the ASN.1 itself so that
// keys too short for crypto/rsa can still be measured.
func rsaModulus(der []byte) (*big.Int, error) {
	var pub struct {
		N *big.Int
		E int
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if rest, err := asn1.Unmarshal(der, &spki); err == nil && len(rest) == 0 {
		if !spki.Algorithm.Algorithm.Equal(oidRSA) {
			return nil, fmt.Errorf("k=rsa but the key's algorithm is %v", spki.Algorithm.Algorithm)
		}
		if rest, err := asn1.Unmarshal(spki.PublicKey.RightAlign(), &pub); err != nil || len(rest) != 0 || pub.N == nil || pub.N.Sign() <= 0 {
			return nil, fmt.Errorf("p= holds no valid RSA public key")
		}
		return pub.N, nil
	}
	if rest, err := asn1.Unmarshal(der, &pub); err == nil && len(rest) == 0 && pub.N != nil && pub.N.Sign() > 0 {
		return pub.N, nil
	}
	return nil, fmt.Errorf("p= holds no valid RSA public key")
}

// randomLabel is a selector no one publishes, for wildcard detection.
func randomLabel() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "mailbolt-probe-" + hex.EncodeToString(b)
}

// checkDKIM judges RuleDKIM.
func (c *checker) checkDKIM(ctx context.Context, p *part, res *Result) {
	sels := c.opts.Selectors
	txts := make([][]string, len(sels))
	errs := make([]error, len(sels))
	var wild []string
	var wildErr error
	var wg sync.WaitGroup
	wg.Go(func() { wild, wildErr = c.r.LookupTXT(ctx, randomLabel()+"._domainkey."+c.domain) })
	for i, s := range sels {
		wg.Go(func() { txts[i], errs[i] = c.r.LookupTXT(ctx, s+"._domainkey."+c.domain) })
	}
	wg.Wait()

	if wildErr != nil && !notFound(wildErr) {
		p.unchecked(RuleDKIM, "DKIM (the wildcard probe)", wildErr)
		return
	}
	if len(wild) > 0 {
		p.find(SeverityWarning, RuleDKIM, fmt.Sprintf("a wildcard TXT record answers for any name under _domainkey.%s (a random selector got %q); selector answers equal to it are not trusted as DKIM keys", c.domain, truncate(wild[0], 60)))
	}
	failed := 0
	var keys []KeyInfo
	for i, s := range sels {
		switch {
		case errs[i] == nil:
		case notFound(errs[i]):
			continue
		default:
			failed++
			p.unchecked(RuleDKIM, fmt.Sprintf("DKIM selector %q", s), errs[i])
			continue
		}
		for _, txt := range txts[i] {
			k := parseDKIMKey(s, txt)
			k.Trusted = !slices.Contains(wild, txt)
			if !k.Trusted && k.Problem != "" {
				continue // the wildcard's own text, not a key record at all
			}
			keys = append(keys, k)
		}
	}
	res.DKIMKeys = keys

	best := -1 // points of the weakest trusted usable key
	for _, k := range keys {
		name := fmt.Sprintf("DKIM key %s._domainkey.%s", k.Selector, c.domain)
		if !k.Trusted {
			p.find(SeverityWarning, RuleDKIM, name+" is not trusted: a wildcard TXT record gives the same answer")
			continue
		}
		pts := 0
		switch {
		case k.Problem != "":
			p.find(SeverityWarning, RuleDKIM, fmt.Sprintf("%s is unusable: %s", name, k.Problem))
			continue
		case k.Revoked:
			p.find(SeverityInfo, RuleDKIM, name+" is revoked (empty p=)")
			continue
		case k.Type == "ed25519":
			pts = 15
			p.find(SeverityInfo, RuleDKIM, name+": ed25519")
		case k.Bits < 1024:
			p.find(SeverityCritical, RuleDKIM, fmt.Sprintf("%s is a %d-bit RSA key: under 1024 bits, receivers treat signatures as invalid and the key can be factored", name, k.Bits))
			p.recommend(fmt.Sprintf("Replace the DKIM key at %s._domainkey.%s with a 2048-bit RSA key (or ed25519 alongside it), then remove the old one", k.Selector, c.domain))
		case k.Bits < 2048:
			pts = 8
			p.find(SeverityWarning, RuleDKIM, fmt.Sprintf("%s is a %d-bit RSA key; 2048 bits is the current minimum recommendation", name, k.Bits))
			p.recommend(fmt.Sprintf("Rotate the DKIM key at %s._domainkey.%s to a 2048-bit RSA key", k.Selector, c.domain))
		default:
			pts = 15
			p.find(SeverityInfo, RuleDKIM, fmt.Sprintf("%s: %d-bit RSA", name, k.Bits))
		}
		if best < 0 || pts < best {
			best = pts
		}
	}
	switch {
	case best >= 0:
		p.score(RuleDKIM, best)
	case failed > 0:
		// Nothing trusted found, and some selectors could not be asked.
	default:
		p.score(RuleDKIM, 0)
		p.find(SeverityWarning, RuleDKIM, fmt.Sprintf("no DKIM key found for %s at selectors %s", c.domain, strings.Join(sels, ", ")))
		p.recommend(fmt.Sprintf(`Sign mail for %s with DKIM and publish the public key as TXT at <selector>._domainkey.%s: "v=DKIM1; k=rsa; p=<base64 public key>" (2048-bit RSA); Mailbolt generates the key and the record when the domain is added`, c.domain, c.domain))
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
