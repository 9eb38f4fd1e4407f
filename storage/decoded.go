package storage

import (
	"bytes"
	"slices"
	"sync"
	"time"
)

// decodedCache keeps the decoded form of the records read on every
// request and every delivery attempt (API keys, accounts, domains), so
// their JSON is not decoded (and a domain's DKIM keys not unsealed) again
// and again. An entry is keyed by the record's stored bytes as well as its
// key: it is used only while the bytes in the file are exactly those it
// was decoded from, so no write, rollback or secret-key rotation can make
// it stale, and nothing has to invalidate it. Each value handed out is a
// deep copy: callers may change what they get.
type decodedCache[T any] struct {
	clone func(T) T
	mu    sync.Mutex
	m     map[string]decodedEntry[T]
}

type decodedEntry[T any] struct {
	raw []byte
	v   T
}

// maxDecoded bounds each cache; when full it starts over.
const maxDecoded = 4096

func (c *decodedCache[T]) get(key, raw []byte) (T, bool) {
	c.mu.Lock()
	e, ok := c.m[string(key)]
	c.mu.Unlock()
	if !ok || !bytes.Equal(e.raw, raw) {
		var zero T
		return zero, false
	}
	return c.clone(e.v), true
}

func (c *decodedCache[T]) put(key, raw []byte, v T) {
	e := decodedEntry[T]{raw: bytes.Clone(raw), v: c.clone(v)}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxDecoded {
		c.m = map[string]decodedEntry[T]{}
	}
	c.m[string(key)] = e
	c.mu.Unlock()
}

// decodedCaches are a DB's caches; a Tx without them (nil) decodes every
// time.
type decodedCaches struct {
	apiKeys  decodedCache[APIKey]
	accounts decodedCache[Account]
	domains  decodedCache[Domain] // with the DKIM private keys unsealed
}

func newDecodedCaches() *decodedCaches {
	return &decodedCaches{
		apiKeys:  decodedCache[APIKey]{clone: cloneAPIKey},
		accounts: decodedCache[Account]{clone: func(a Account) Account { return a }},
		domains:  decodedCache[Domain]{clone: cloneDomain},
	}
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

func cloneAPIKey(k APIKey) APIKey {
	k.Hash = bytes.Clone(k.Hash)
	k.Scopes = slices.Clone(k.Scopes)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = cloneTime(k.LastUsedAt), cloneTime(k.ExpiresAt), cloneTime(k.RevokedAt)
	return k
}

func cloneDomain(d Domain) Domain {
	d.DKIMKeys = slices.Clone(d.DKIMKeys)
	for i := range d.DKIMKeys {
		k := &d.DKIMKeys[i]
		k.PrivateKey = bytes.Clone(k.PrivateKey)
		k.ActivatedAt, k.RetiredAt = cloneTime(k.ActivatedAt), cloneTime(k.RetiredAt)
	}
	d.Checks = slices.Clone(d.Checks)
	for i := range d.Checks {
		d.Checks[i].Found = slices.Clone(d.Checks[i].Found)
	}
	d.VerifiedAt, d.LastCheckedAt, d.NextCheckAt = cloneTime(d.VerifiedAt), cloneTime(d.LastCheckedAt), cloneTime(d.NextCheckAt)
	return d
}
