package dkim

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	msgauth "github.com/emersion/go-msgauth/dkim"
)

// DKIM key algorithms a domain can use.
const (
	AlgRSA2048 = "rsa-2048"
	AlgEd25519 = "ed25519"
)

// Key is a generated key pair: the private key in PKCS #8 DER (stored,
// never shown) and the public key as published in DNS.
type Key struct {
	Algorithm  string
	PrivateDER []byte
	PublicB64  string // p= value: SubjectPublicKeyInfo (RSA) or the raw 32 bytes (Ed25519, RFC 8463)
}

// GenerateKey makes a fresh key pair.
func GenerateKey(alg string) (Key, error) {
	var priv crypto.Signer
	var pub []byte
	switch alg {
	case AlgRSA2048:
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return Key{}, err
		}
		if pub, err = x509.MarshalPKIXPublicKey(&k.PublicKey); err != nil {
			return Key{}, err
		}
		priv = k
	case AlgEd25519:
		p, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return Key{}, err
		}
		pub, priv = p, k
	default:
		return Key{}, fmt.Errorf("unknown DKIM algorithm %q", alg)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return Key{}, err
	}
	return Key{Algorithm: alg, PrivateDER: der, PublicB64: base64.StdEncoding.EncodeToString(pub)}, nil
}

// RecordValue is the TXT record text to publish at
// <selector>._domainkey.<domain> (RFC 6376 §3.6.1).
func (k Key) RecordValue() string {
	kt := "rsa"
	if k.Algorithm == AlgEd25519 {
		kt = "ed25519"
	}
	return "v=DKIM1; k=" + kt + "; p=" + k.PublicB64
}

// Signer parses the stored private key.
func (k Key) Signer() (crypto.Signer, error) {
	key, err := x509.ParsePKCS8PrivateKey(k.PrivateDER)
	if err != nil {
		return nil, fmt.Errorf("parse DKIM key: %w", err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("DKIM key of type %T cannot sign", key)
	}
	return s, nil
}

// SignedHeaders are the header fields a signature covers. List-Unsubscribe
// and List-Unsubscribe-Post are included so one-click unsubscribe (RFC 8058
// §4) cannot be added or altered in transit.
var SignedHeaders = []string{
	"From", "Reply-To", "Subject", "Date", "To", "Cc", "Message-ID",
	"In-Reply-To", "References", "MIME-Version", "Content-Type",
	"Content-Transfer-Encoding", "List-Unsubscribe", "List-Unsubscribe-Post",
}

// Sign returns msg with a DKIM-Signature header prepended, using
// relaxed/relaxed canonicalization and SHA-256. It drives go-msgauth's
// Signer itself rather than its Sign, which copies the message into a
// buffer of its own (grown as it goes) to write it out again after the
// field: msg is in memory already, so the answer is built once, at its
// final size.
func Sign(msg []byte, domain, selector string, key crypto.Signer) ([]byte, error) {
	s, err := msgauth.NewSigner(&msgauth.SignOptions{
		Domain: domain, Selector: selector, Signer: key, Hash: crypto.SHA256,
		HeaderCanonicalization: msgauth.CanonicalizationRelaxed,
		BodyCanonicalization:   msgauth.CanonicalizationRelaxed,
		HeaderKeys:             SignedHeaders,
	})
	if err != nil {
		return nil, fmt.Errorf("dkim sign: %w", err)
	}
	defer s.Close()
	if _, err := s.Write(msg); err != nil {
		return nil, fmt.Errorf("dkim sign: %w", err)
	}
	if err := s.Close(); err != nil {
		return nil, fmt.Errorf("dkim sign: %w", err)
	}
	field := s.Signature()
	out := make([]byte, 0, len(field)+len(msg))
	return append(append(out, field...), msg...), nil
}

// SplitTXT renders a TXT value for pasting into a DNS provider: values of
// at most 255 bytes as they are, longer ones as quoted 255-byte strings
// separated by spaces (RFC 1035 §3.3.14 limits one string to 255 bytes).
func SplitTXT(v string) string {
	if len(v) <= 255 {
		return v
	}
	var b bytes.Buffer
	for len(v) > 0 {
		n := min(255, len(v))
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		io.WriteString(&b, v[:n])
		b.WriteByte('"')
		v = v[n:]
	}
	return b.String()
}

// JoinTXT undoes SplitTXT: a value shown as quoted strings becomes the one
// record text they make up; any other value is returned as it is.
func JoinTXT(v string) string {
	if !strings.HasPrefix(v, `"`) {
		return v
	}
	return strings.ReplaceAll(strings.Trim(v, `"`), `" "`, "")
}
