package storage

import (
	"time"
)

// APIKey is a stored API key. The secret itself is never stored: Hash is
// its SHA-256.
type APIKey struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Hash       []byte     `json:"hash"`
	Scopes     []string   `json:"scopes"`
	Test       bool       `json:"test"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	// CreatedBy is who made the key: a person's email (a dashboard
	// session), another key's id, or "operator" (the CLI). Empty for keys
	// made before it was recorded and for the server's own.
	CreatedBy string `json:"created_by,omitempty"`
}

const collectionAPIKeys = "api_keys"

// InsertAPIKey stores a new key with its hash and account indexes.
func (tx *Tx) InsertAPIKey(k APIKey) error {
	hashes := tx.bucket(bucketAPIKeyHashes)
	if hashes.Get(k.Hash) != nil {
		return ErrExists
	}
	if err := putJSON(tx.bucket(bucketAPIKeys), []byte(k.ID), k); err != nil {
		return err
	}
	if err := hashes.Put(k.Hash, []byte(k.ID)); err != nil {
		return err
	}
	if err := tx.bucket(bucketAPIKeysByAccount).Put(join(k.AccountID, k.ID), nil); err != nil {
		return err
	}
	return tx.addCount(collectionAPIKeys, k.AccountID, 1)
}

// UpdateAPIKey replaces the mutable fields of an existing key of
// k.AccountID (name, last use, revocation); ErrNotFound when that account
// has no such key. The hash never changes.
func (tx *Tx) UpdateAPIKey(k APIKey) error {
	old, err := tx.APIKey(k.AccountID, k.ID)
	if err != nil {
		return err
	}
	k.Hash = old.Hash
	return putJSON(tx.bucket(bucketAPIKeys), []byte(k.ID), k)
}

// APIKey reads one of an account's keys; another account's is ErrNotFound.
func (tx *Tx) APIKey(accountID, id string) (APIKey, error) {
	k, err := tx.APIKeyByID(id)
	if err == nil && k.AccountID != accountID {
		return APIKey{}, ErrNotFound
	}
	return k, err
}

// APIKeyByID reads a key of any account: for the operator (keys revoke
// KEY_ID) and for bookkeeping on a key already authenticated, never for a
// request made on behalf of a tenant.
func (tx *Tx) APIKeyByID(id string) (APIKey, error) {
	key := []byte(id)
	raw := tx.bucket(bucketAPIKeys).Get(key)
	if raw == nil {
		return APIKey{}, ErrNotFound
	}
	if tx.decoded != nil {
		if k, ok := tx.decoded.apiKeys.get(key, raw); ok {
			return k, nil
		}
	}
	var k APIKey
	if err := decodeJSON(key, raw, &k); err != nil {
		return APIKey{}, err
	}
	if tx.decoded != nil {
		tx.decoded.apiKeys.put(key, raw, k)
	}
	return k, nil
}

// APIKeyByHash finds the key whose secret hashes to hash, of whichever
// account: this is how a request's account is found (authentication).
func (tx *Tx) APIKeyByHash(hash []byte) (APIKey, error) {
	id := tx.bucket(bucketAPIKeyHashes).Get(hash)
	if id == nil {
		return APIKey{}, ErrNotFound
	}
	return tx.APIKeyByID(string(id))
}

// APIKeys lists an account's keys, oldest first.
func (tx *Tx) APIKeys(accountID string, opts ListOptions) ([]APIKey, ListResult, error) {
	var out []APIKey
	res, err := scan(tx.bucket(bucketAPIKeysByAccount), prefix(accountID), opts, func(k, _ []byte) error {
		key, err := tx.APIKeyByID(string(k))
		if err != nil {
			return err
		}
		out = append(out, key)
		return nil
	})
	return out, res, err
}

// APIKeyCount is the number of keys an account has (revoked ones included).
func (tx *Tx) APIKeyCount(accountID string) int { return tx.count(collectionAPIKeys, accountID) }
