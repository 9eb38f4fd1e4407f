package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// Key prefixes: live keys send real mail, test keys are a sandbox.
const (
	LivePrefix = "svc_live_"
	TestPrefix = "svc_test_"
)

// secretLen is the length of the base62 text of 32 random bytes.
const secretLen = 43

// newSecret returns a key secret: a prefix and 32 random bytes in base62.
func newSecret(test bool) string {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	text := new(big.Int).SetBytes(raw[:]).Text(62)
	text = strings.Repeat("0", secretLen-len(text)) + text
	if test {
		return TestPrefix + text
	}
	return LivePrefix + text
}

// HashSecret is the form a key secret is stored and looked up in.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Key modes: a live key sends real mail, a test key is a sandbox.
const (
	ModeLive = "live"
	ModeTest = "test"
)

// KeyInput is a request for a new API key in the creator's account. What
// is left out is the creator's own: its scopes, its mode, its expiry.
type KeyInput struct {
	Name      string
	Scopes    []string   // nil: the creator's scopes
	Mode      string     // ModeLive, ModeTest, or "": the creator's mode
	ExpiresAt *time.Time // nil: the creator's expiry (never, for a creator without one)
}

// CreatedKey is a new key with its secret, which is never shown again.
type CreatedKey struct {
	Key    storage.APIKey
	Secret string
}

// CreateKey issues a key in p's account. A key never gets more than its
// creator has: scopes it does not hold are 403 INSUFFICIENT_SCOPES, a
// test-mode creator makes test keys only (403 FORBIDDEN), and a key does
// not outlive an expiring creator (400 VALIDATION_ERROR naming expires_at,
// with max_expires_at). The operator holds every scope, is not in test mode and
// does not expire, so it may make any key.
func (a *App) CreateKey(p Principal, in KeyInput) (CreatedKey, error) {
	if err := a.authorize(p, ScopeAPIKeysWrite); err != nil {
		return CreatedKey{}, err
	}
	name, verr := cleanName("name", in.Name)
	if verr != nil {
		return CreatedKey{}, verr
	}
	test := p.Test
	switch in.Mode {
	case "":
	case ModeLive:
		test = false
	case ModeTest:
		test = true
	default:
		return CreatedKey{}, Validation("mode", "must be live or test")
	}
	scopes := p.Scopes
	if in.Scopes != nil {
		scopes = in.Scopes
	}
	scopes, err := ParseScopes(scopes)
	if err != nil {
		return CreatedKey{}, Validation("scopes", err.Error())
	}
	now := a.Now()
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) {
		return CreatedKey{}, Validation("expires_at", "must be in the future")
	}
	if p.Test && !test {
		return CreatedKey{}, NewError(CodeForbidden, "a test key can only create test keys")
	}
	if !CoversScopes(p.Scopes, scopes) {
		return CreatedKey{}, NewError(CodeInsufficientScopes, "a key cannot grant scopes it does not hold itself").
			With("requested", scopes).With("held", p.Scopes)
	}
	expires := in.ExpiresAt
	if p.ExpiresAt != nil {
		limit := p.ExpiresAt.UTC()
		if expires == nil {
			expires = &limit
		} else if expires.After(limit) {
			return CreatedKey{}, Validation("expires_at", "must not be after the creating key's own expiry, "+
				limit.Format(time.RFC3339)+": a key cannot outlive the key that creates it").
				With("max_expires_at", limit.Format(time.RFC3339Nano))
		}
	}
	accountID := p.Account.ID
	secret := newSecret(test)
	k := storage.APIKey{
		ID: NewID(), AccountID: accountID, Name: name,
		Prefix: secret[:len(LivePrefix)+8], Hash: HashSecret(secret),
		Scopes: scopes, Test: test, CreatedAt: now, ExpiresAt: expires, CreatedBy: p.Actor,
	}
	created := CreatedKey{Key: k, Secret: secret}
	err = update(a, p, action{"api_key.create", k.ID}, &created, func(tx *storage.Tx) error {
		if _, err := tx.Account(accountID); err != nil {
			return NotFound("account")
		}
		if err := creatorStillHere(tx, p); err != nil {
			return err
		}
		return tx.InsertAPIKey(k)
	})
	if e := storageErr(err, "api key"); e != nil {
		return CreatedKey{}, e
	}
	return created, nil
}

// creatorStillHere refuses, inside the transaction that would store a new
// key, a creator that lost its standing after its request began: a key
// revoked meanwhile (by a removal of the person who made it), or a person
// no longer an active member. Without it a request already under way when
// a member is removed could still mint a live key.
func creatorStillHere(tx *storage.Tx, p Principal) error {
	switch p.Kind {
	case KindAPIKey:
		if k, err := tx.APIKeyByID(p.KeyID); err != nil || k.RevokedAt != nil {
			return NewError(CodeInvalidAPIKey, "the API key was revoked")
		}
	case KindSession:
		if m, err := tx.TeamMemberByEmail(p.Account.ID, p.Actor); err != nil || m.Status != "active" {
			return NewError(CodeUnauthorized, "the dashboard session's person is no longer a member of the account")
		}
	}
	return nil
}

// ListKeys lists an account's keys.
func (a *App) ListKeys(p Principal, opts storage.ListOptions) (keys []storage.APIKey, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeAPIKeysRead); err != nil {
		return nil, res, 0, err
	}
	accountID := p.Account.ID
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		keys, res, err = tx.APIKeys(accountID, opts)
		total = tx.APIKeyCount(accountID)
		return err
	})
	return keys, res, total, storageErr(err, "api key")
}

// Key reads one of an account's keys.
func (a *App) Key(p Principal, keyID string) (storage.APIKey, error) {
	if err := a.authorize(p, ScopeAPIKeysRead); err != nil {
		return storage.APIKey{}, err
	}
	accountID := p.Account.ID
	var k storage.APIKey
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		k, err = tx.APIKey(accountID, keyID)
		return err
	})
	return k, storageErr(err, "api key")
}

// RevokeKey revokes a key of p's account. A test-mode caller cannot revoke
// a live key, and a caller cannot revoke a key holding scopes it lacks
// itself, so a key cannot take away access it could not grant. The
// operator acting across accounts (Operator()) may revoke any key.
// Revoking twice is a no-op that returns the key as it is.
func (a *App) RevokeKey(p Principal, keyID string) (storage.APIKey, error) {
	anyAccount := p.Kind == KindOperator && p.Account.ID == ""
	if !anyAccount {
		if err := a.authorize(p, ScopeAPIKeysWrite); err != nil {
			return storage.APIKey{}, err
		}
	}
	var k storage.APIKey
	err := update(a, p, action{"api_key.revoke", keyID}, &k, func(tx *storage.Tx) error {
		var err error
		if anyAccount {
			k, err = tx.APIKeyByID(keyID)
		} else {
			k, err = tx.APIKey(p.Account.ID, keyID)
		}
		if err != nil {
			return NotFound("api key")
		}
		if p.Test && !k.Test {
			return &Error{Code: CodeForbidden, Message: "a test key cannot revoke a live key"}
		}
		if !CoversScopes(p.Scopes, k.Scopes) {
			return &Error{Code: CodeInsufficientScopes,
				Message: "a key cannot revoke a key with scopes it does not hold itself",
				Details: map[string]any{"held": p.Scopes, "target": k.Scopes}}
		}
		if k.RevokedAt == nil {
			now := a.Now()
			k.RevokedAt = &now
			return tx.UpdateAPIKey(k)
		}
		return nil
	})
	return k, storageErr(err, "api key")
}

// Authenticate resolves a key secret. Revocation and expiry take effect on
// the very next request: nothing is cached.
func (a *App) Authenticate(secret string) (Principal, error) {
	if secret == "" {
		return Principal{}, &Error{Code: CodeUnauthorized,
			Message: "missing API key: send it in the X-API-Key header"}
	}
	invalid := &Error{Code: CodeInvalidAPIKey, Message: "invalid or revoked API key"}
	if !strings.HasPrefix(secret, LivePrefix) && !strings.HasPrefix(secret, TestPrefix) {
		return Principal{}, invalid
	}
	hash := HashSecret(secret)
	var k storage.APIKey
	var acct storage.Account
	readAt, err := a.db.ViewCached(0, func(tx *storage.Tx) error {
		var err error
		acct = storage.Account{} // fn may run twice
		if k, err = tx.APIKeyByHash(hash); err != nil {
			return err
		}
		if _, perr := uuid.Parse(k.AccountID); perr != nil {
			return nil // reported below as INVALID_TENANT
		}
		acct, err = tx.Account(k.AccountID)
		return err
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return Principal{}, Internal(fmt.Errorf("authenticate: %w", err))
	}
	if err != nil || subtle.ConstantTimeCompare(k.Hash, hash) != 1 || k.RevokedAt != nil {
		return Principal{}, invalid
	}
	if k.ExpiresAt != nil && !a.Now().Before(*k.ExpiresAt) {
		return Principal{}, &Error{Code: CodeTokenExpired,
			Message: "API key expired at " + k.ExpiresAt.UTC().Format(time.RFC3339)}
	}
	if _, perr := uuid.Parse(k.AccountID); perr != nil {
		return Principal{}, &Error{Code: CodeInvalidTenant,
			Message: "the API key's account id is not a valid tenant UUID"}
	}
	a.noteKeyUse(k.ID)
	p := KeyPrincipal(k, acct)
	p.readAt = readAt
	return p, nil
}

// noteKeyUse queues a last_used_at update, at most once per KeyUsageEvery
// per key, so reads do not turn into writes.
func (a *App) noteKeyUse(keyID string) {
	now := a.Now()
	a.usageMu.Lock()
	last, seen := a.usageSeen[keyID]
	if seen && now.Sub(last) < a.opts.KeyUsageEvery {
		a.usageMu.Unlock()
		return
	}
	a.usageSeen[keyID] = now
	a.usageMu.Unlock()
	select {
	case a.usage <- keyID:
	default: // the writer is behind; the next use will try again
	}
}

func (a *App) runKeyUsage(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-a.usage:
			now := a.Now()
			err := a.db.Update(func(tx *storage.Tx) error {
				k, err := tx.APIKeyByID(id)
				if err != nil {
					return nil
				}
				k.LastUsedAt = &now
				return tx.UpdateAPIKey(k)
			})
			if err != nil {
				a.log.Warn("record key use", "key_id", id, "err", err)
			}
		}
	}
}

// cleanName validates a display name: 1 to 100 characters, no control
// characters.
func cleanName(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", Validation(field, "is required")
	}
	if utf8.RuneCountInString(s) > 100 {
		return "", Validation(field, "must be at most 100 characters")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", Validation(field, "must not contain control characters")
		}
	}
	return s, nil
}

// maxExpiresInDays is the longest --expires-in in days: a time.Duration
// holds about 292 years, and more days would wrap into the past.
const maxExpiresInDays = 100 * 365

// ParseExpiresIn turns a CLI duration such as "720h" or "30d" into an
// expiry time. Days are whole; every refusal gives the same hint.
func ParseExpiresIn(now time.Time, s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	invalid := fmt.Errorf("invalid --expires-in %q: use a duration such as 720h or 30d (whole days)", s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || days[0] == '+' {
			return nil, invalid
		}
		if n > maxExpiresInDays {
			return nil, fmt.Errorf("invalid --expires-in %q: at most %dd", s, maxExpiresInDays)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d <= 0 {
			return nil, invalid
		}
	}
	t := now.Add(d).UTC()
	return &t, nil
}
