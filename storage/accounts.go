package storage

import (
	"time"
)

// Account is a tenant: every other record belongs to exactly one account.
type Account struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Plan string `json:"plan"`
	// RateLimit and BatchSize override the plan's values when non-zero
	// (enterprise accounts are set per account).
	RateLimit int `json:"rate_limit,omitempty"`
	BatchSize int `json:"batch_size,omitempty"`
	// TrackOpens and TrackClicks are the tracking defaults of the
	// account's messages (a message's own tracking setting wins).
	TrackOpens  bool `json:"track_opens,omitempty"`
	TrackClicks bool `json:"track_clicks,omitempty"`
	// Email is the account's contact address, for notices when the
	// account has no owner; empty when none was given.
	Email     string    `json:"email,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// PutAccount creates or replaces an account.
func (tx *Tx) PutAccount(a Account) error {
	return putJSON(tx.bucket(bucketAccounts), []byte(a.ID), a)
}

// Account reads one account; ErrNotFound when there is none.
func (tx *Tx) Account(id string) (Account, error) {
	key := []byte(id)
	raw := tx.bucket(bucketAccounts).Get(key)
	if raw == nil {
		return Account{}, ErrNotFound
	}
	if tx.decoded != nil {
		if a, ok := tx.decoded.accounts.get(key, raw); ok {
			return a, nil
		}
	}
	var a Account
	if err := decodeJSON(key, raw, &a); err != nil {
		return Account{}, err
	}
	if tx.decoded != nil {
		tx.decoded.accounts.put(key, raw, a)
	}
	return a, nil
}

// Accounts lists accounts in id order.
func (tx *Tx) Accounts(opts ListOptions) ([]Account, ListResult, error) {
	return scanJSON[Account](tx.bucket(bucketAccounts), nil, opts)
}

// AccountCount is the number of accounts.
func (tx *Tx) AccountCount() int {
	return tx.bucket(bucketAccounts).KeyN()
}
