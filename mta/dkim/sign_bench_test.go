package dkim

import (
	"crypto"
	"crypto/sha256"
	"strings"
	"testing"
)

// BenchmarkSign measures what one DKIM signature costs a delivery, per
// algorithm: the whole of Sign on a 2 KB message (canonicalization, both
// hashes, go-msgauth's pipe and the private-key operation), and the
// private-key operation alone, each on one goroutine and on every core at
// once (RunParallel: the figure a loaded server sees, since the cores then
// share caches and memory bandwidth). Run:
// go test ./mta/dkim -run '^$' -bench Sign
func BenchmarkSign(b *testing.B) {
	msg := []byte(testMessage + strings.Repeat("Some text of a transactional message, as a line of its body.\r\n", 32))
	digest := sha256.Sum256(msg)
	for _, alg := range []string{AlgEd25519, AlgRSA2048} {
		k, err := GenerateKey(alg)
		if err != nil {
			b.Fatal(err)
		}
		s, err := k.Signer()
		if err != nil {
			b.Fatal(err)
		}
		keyOp := func() error {
			if alg == AlgEd25519 {
				_, err := s.Sign(nil, msg, crypto.Hash(0)) // Ed25519 signs the message itself
				return err
			}
			_, err := s.Sign(nil, digest[:], crypto.SHA256)
			return err
		}
		whole := func() error {
			_, err := Sign(msg, "example.test", "s1", s)
			return err
		}
		for _, c := range []struct {
			name string
			op   func() error
		}{{"message", whole}, {"key", keyOp}} {
			b.Run(alg+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if err := c.op(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(alg+"/"+c.name+"/parallel", func(b *testing.B) {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := c.op(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
