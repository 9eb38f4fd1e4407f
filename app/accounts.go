package app

import (
	"mailbolt/storage"
)

// AccountInput is a request for a new account.
type AccountInput struct {
	Name      string
	Plan      string // DefaultPlan when empty
	RateLimit int    // per-account override (enterprise); 0 keeps the plan's
	BatchSize int    // per-account override (enterprise); 0 keeps the plan's
	// TrackOpens and TrackClicks turn tracking on by default for the
	// account's messages.
	TrackOpens, TrackClicks bool
}

func (a *App) newAccount(in AccountInput) (storage.Account, error) {
	name, e := cleanName("name", in.Name)
	if e != nil {
		return storage.Account{}, e
	}
	if in.Plan == "" {
		in.Plan = DefaultPlan
	}
	plan, err := LookupPlan(in.Plan)
	if err != nil {
		return storage.Account{}, Validation("plan", err.Error())
	}
	if in.RateLimit < 0 || in.BatchSize < 0 {
		return storage.Account{}, Validation("rate_limit", "limits must not be negative")
	}
	return storage.Account{ID: NewID(), Name: name, Plan: plan.Name,
		RateLimit: in.RateLimit, BatchSize: in.BatchSize, TrackOpens: in.TrackOpens, TrackClicks: in.TrackClicks,
		CreatedAt: a.Now()}, nil
}

// CreateAccount creates a tenant.
func (a *App) CreateAccount(in AccountInput) (storage.Account, error) {
	acct, e := a.newAccount(in)
	if e != nil {
		return acct, e
	}
	err := a.db.Update(func(tx *storage.Tx) error { return tx.PutAccount(acct) })
	return acct, storageErr(err, "account")
}

// ListAccounts lists every account.
func (a *App) ListAccounts(opts storage.ListOptions) (accts []storage.Account, res storage.ListResult, total int, e error) {
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		accts, res, err = tx.Accounts(opts)
		total = tx.AccountCount()
		return err
	})
	return accts, res, total, storageErr(err, "account")
}

// Account reads the caller's account as it is stored now.
func (a *App) Account(p Principal) (storage.Account, error) {
	if err := a.authorize(p, ScopeAccountRead); err != nil {
		return storage.Account{}, err
	}
	id := p.Account.ID
	var acct storage.Account
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		acct, err = tx.Account(id)
		return err
	})
	return acct, storageErr(err, "account")
}

// Bootstrap is what the first start on an empty database creates: account
// "default" with a live and a test key of scope "*".
type Bootstrap struct {
	Account storage.Account
	LiveKey string
	TestKey string
}

// BootstrapIfEmpty creates the default account and its two keys when the
// database has no account yet. It reports nil when there was already one.
func (a *App) BootstrapIfEmpty() (*Bootstrap, error) {
	acct, e := a.newAccount(AccountInput{Name: "default"})
	if e != nil {
		return nil, e
	}
	now := a.Now()
	live, test := newSecret(false), newSecret(true)
	var created bool
	err := a.db.Update(func(tx *storage.Tx) error {
		created = false
		if tx.AccountCount() > 0 {
			return nil
		}
		if err := tx.PutAccount(acct); err != nil {
			return err
		}
		for i, secret := range []string{live, test} {
			k := storage.APIKey{ID: NewID(), AccountID: acct.ID, Name: []string{"default live key", "default test key"}[i],
				Prefix: secret[:len(LivePrefix)+8], Hash: HashSecret(secret), Scopes: []string{ScopeAll},
				Test: i == 1, CreatedAt: now}
			if err := tx.InsertAPIKey(k); err != nil {
				return err
			}
		}
		created = true
		return nil
	})
	if err != nil || !created {
		return nil, err
	}
	return &Bootstrap{Account: acct, LiveKey: live, TestKey: test}, nil
}
