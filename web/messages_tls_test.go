package web

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/mta"
	"mailbolt/mta/smtptest"
)

// selfSignedFor is a certificate for name that is its own root.
func selfSignedFor(t *testing.T, name string) (tls.Certificate, *x509.CertPool) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// GET /v1/messages/{id} shows each recipient's TLS session (tls_details),
// and a require_tls message to an MX without REQUIRETLS bounces with
// 5.7.30, against a live server delivering to a go-smtp MX over STARTTLS.
func TestMessageTLSDetailsAndRequireTLS(t *testing.T) {
	cert, roots := selfSignedFor(t, "mx.dest.test")
	e, sink := newDeliveringEnv(t, DefaultConfig(), smtptest.Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}, func(o *app.Options, mo *mta.Options) {
		mo.RootCAs = roots
	})

	plain := e.do("POST", "/v1/messages", e.key, map[string]any{"from": "a@acme.test", "to": []string{"ann@dest.test"},
		"subject": "plain", "text": "hi"}).want(t, 202).json(t)["id"].(string)
	strict := e.do("POST", "/v1/messages", e.key, map[string]any{"from": "a@acme.test", "to": []string{"bob@dest.test"},
		"subject": "strict", "text": "hi", "require_tls": true}).want(t, 202).json(t)["id"].(string)
	if m := e.do("GET", "/v1/messages/"+strict, e.key, nil).want(t, 200).json(t); m["require_tls"] != true {
		t.Fatalf("require_tls not shown: %v", m)
	}
	e.runWorkers()
	wait := func(id, status string) map[string]any {
		deadline := time.Now().Add(15 * time.Second)
		for {
			m := e.do("GET", "/v1/messages/"+id, e.key, nil).want(t, 200).json(t)
			if m["status"] == status {
				return m["recipients"].([]any)[0].(map[string]any)
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %s: %v", id, m)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	r := wait(plain, "delivered")
	d, _ := r["tls_details"].(map[string]any)
	if r["tls"] != true || d == nil || d["verified"] != true || d["policy"] != "none" || d["version"] == "" {
		t.Fatalf("tls_details %v", r)
	}
	r = wait(strict, "bounced")
	resp, _ := r["last_response"].(map[string]any)
	if resp == nil || resp["enhanced_code"] != "5.7.30" || r["bounce_type"] != "block" {
		t.Fatalf("require_tls recipient %v", r)
	}
	if len(sink.Messages()) != 1 || !sink.Messages()[0].TLS {
		t.Fatalf("sink got %d messages", len(sink.Messages()))
	}
}
