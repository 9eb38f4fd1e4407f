package app

import (
	"mailbolt/storage"
)

// AccountInput is a request for a new account. Its JSON form is what the
// management socket carries.
type AccountInput struct {
	Name      string `json:"name"`
	Plan      string `json:"plan,omitempty"`       // DefaultPlan when empty
	RateLimit int    `json:"rate_limit,omitempty"` // per-account override (enterprise); 0 keeps the plan's
	BatchSize int    `json:"batch_size,omitempty"` // per-account override (enterprise); 0 keeps the plan's
	// TrackOpens and TrackClicks turn tracking on by default for the
	// account's messages.
	TrackOpens  bool `json:"track_opens,omitempty"`
	TrackClicks bool `json:"track_clicks,omitempty"`
	// Email is the account's contact address (optional).
	Email string `json:"email,omitempty"`
}

// AccountUpdate changes an account: each field that is set replaces the
// stored one. Its JSON form is what the management socket carries.
type AccountUpdate struct {
	Name        *string `json:"name,omitempty"`
	Plan        *string `json:"plan,omitempty"`
	Email       *string `json:"email,omitempty"` // "" removes the contact address
	TrackOpens  *bool   `json:"track_opens,omitempty"`
	TrackClicks *bool   `json:"track_clicks,omitempty"`
	// RateLimit and BatchSize replace the account's overrides of its
	// plan's limits (enterprise); 0 goes back to the plan's.
	RateLimit *int `json:"rate_limit,omitempty"`
	BatchSize *int `json:"batch_size,omitempty"`
}

// contactEmail checks an account's contact address; empty is none.
func contactEmail(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return NormalizeAddress("email", s)
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
	email, e := contactEmail(in.Email)
	if e != nil {
		return storage.Account{}, e
	}
	return storage.Account{ID: NewID(), Name: name, Plan: plan.Name,
		RateLimit: in.RateLimit, BatchSize: in.BatchSize, TrackOpens: in.TrackOpens, TrackClicks: in.TrackClicks,
		Email: email, CreatedAt: a.Now()}, nil
}

// UpdateAccount changes an account (the operator's `accounts update`); an
// unknown account is NOT_FOUND and nothing changes on a validation error.
func (a *App) UpdateAccount(id string, in AccountUpdate) (storage.Account, error) {
	var acct storage.Account
	err := a.db.Update(func(tx *storage.Tx) error {
		var err error
		if acct, err = tx.Account(id); err != nil {
			return err
		}
		if in.Name != nil {
			if acct.Name, err = cleanName("name", *in.Name); err != nil {
				return err
			}
		}
		if in.Plan != nil {
			plan, err := LookupPlan(*in.Plan)
			if err != nil {
				return Validation("plan", err.Error())
			}
			acct.Plan = plan.Name
		}
		if in.Email != nil {
			if acct.Email, err = contactEmail(*in.Email); err != nil {
				return err
			}
		}
		if in.TrackOpens != nil {
			acct.TrackOpens = *in.TrackOpens
		}
		if in.TrackClicks != nil {
			acct.TrackClicks = *in.TrackClicks
		}
		for _, o := range []struct {
			field string
			in    *int
			dst   *int
		}{{"rate_limit", in.RateLimit, &acct.RateLimit}, {"batch_size", in.BatchSize, &acct.BatchSize}} {
			if o.in == nil {
				continue
			}
			if *o.in < 0 {
				return Validation(o.field, "must not be negative (0 is the plan's)")
			}
			*o.dst = *o.in
		}
		return tx.PutAccount(acct)
	})
	return acct, storageErr(err, "account")
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
// "default", the operator's own, on plan enterprise (not throttled like a
// customer's), with a live and a test key of scope "*".
type Bootstrap struct {
	Account storage.Account
	LiveKey string
	TestKey string
	// OwnerLink is the token of a one-time link (24 h) whose page asks
	// for the owner's email and password (PasswordURL makes its address).
	OwnerLink string
}

// BootstrapIfEmpty creates the default account and its two keys when the
// database has no account yet. It reports nil when there was already one.
func (a *App) BootstrapIfEmpty() (*Bootstrap, error) {
	acct, e := a.newAccount(AccountInput{Name: "default", Plan: "enterprise"})
	if e != nil {
		return nil, e
	}
	now := a.Now()
	live, test := newSecret(false), newSecret(true)
	var created bool
	var link PasswordLink
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
		var err error
		if link, err = a.newPasswordLink(tx, acct.ID, "", true); err != nil {
			return err
		}
		created = true
		return nil
	})
	if err != nil || !created {
		return nil, err
	}
	return &Bootstrap{Account: acct, LiveKey: live, TestKey: test, OwnerLink: link.Token}, nil
}
