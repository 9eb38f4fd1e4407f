package app

import (
	"fmt"
	"strings"
	"time"

	"mailbolt/storage"
)

// keyPeople maps each key of keys to the person at the root of the chain
// of makers that led to it: a key made from a dashboard session is that
// person's (their email in storage.AddressKey form, as members are keyed,
// whichever spelling of an IDN domain it was recorded with), and a key made with a key is the
// person's who made that key. A key made by the operator, by the server,
// or before makers were recorded has no person ("", absent).
func keyPeople(keys []storage.APIKey) map[string]string {
	person := map[string]string{}
	// A maker is made before what it makes, and ids are UUIDv7, so one
	// pass in id order nearly always settles it; passes repeat until
	// nothing changes for keys made in the same millisecond.
	for changed := true; changed; {
		changed = false
		for _, k := range keys {
			if _, done := person[k.ID]; done {
				continue
			}
			who := ""
			switch {
			case strings.Contains(k.CreatedBy, "@"):
				who = personKey(k.CreatedBy)
			case k.CreatedBy != "":
				who = person[k.CreatedBy]
			}
			if who != "" {
				person[k.ID], changed = who, true
			}
		}
	}
	return person
}

// personKey is the form keyPeople names a person by.
func personKey(email string) string {
	k, _ := storage.AddressKey(email)
	return k
}

// liveKeysOf are the keys of accountID that the person with email made
// (keyPeople), other than revoked ones, oldest first.
func liveKeysOf(tx *storage.Tx, accountID, email string) ([]storage.APIKey, error) {
	keys, _, err := tx.APIKeys(accountID, storage.ListOptions{Limit: -1})
	if err != nil {
		return nil, err
	}
	person := keyPeople(keys)
	var out []storage.APIKey
	for _, k := range keys {
		if k.RevokedAt == nil && person[k.ID] == personKey(email) {
			out = append(out, k)
		}
	}
	return out, nil
}

// MemberKeys counts, for each member of p's account (by member id), the
// live keys that person made: what removing them revokes. Needs
// api_keys:read.
func (a *App) MemberKeys(p Principal, members []storage.TeamMember) (map[string]int, error) {
	if err := a.authorize(p, ScopeAPIKeysRead); err != nil {
		return nil, err
	}
	var keys []storage.APIKey
	err := a.db.View(func(tx *storage.Tx) (err error) {
		keys, _, err = tx.APIKeys(p.Account.ID, storage.ListOptions{Limit: -1})
		return err
	})
	if err != nil {
		return nil, storageErr(err, "api key")
	}
	person := keyPeople(keys)
	live := map[string]int{}
	for _, k := range keys {
		if who := person[k.ID]; who != "" && k.RevokedAt == nil {
			live[who]++
		}
	}
	out := map[string]int{}
	for _, m := range members {
		out[m.ID] = live[personKey(m.Email)]
	}
	return out, nil
}

// revokeKeysOf revokes, in tx, the live keys the person with email made
// in p's account, each audited as api_key.revoke, and returns them. p may
// revoke only what RevokeKey would let it revoke: a key with scopes p
// lacks (a "*" key made while the person was an owner, for an admin), or
// a live key for a test-mode p, refuses the whole removal with 403 naming
// those keys, so a removal never takes away more than its remover could.
func (a *App) revokeKeysOf(tx *storage.Tx, p Principal, email string, now time.Time) ([]storage.APIKey, error) {
	keys, err := liveKeysOf(tx, p.Account.ID, email)
	if err != nil {
		return nil, err
	}
	var beyond []string
	for _, k := range keys {
		if (p.Test && !k.Test) || !CoversScopes(p.Scopes, k.Scopes) {
			beyond = append(beyond, k.ID)
		}
	}
	if len(beyond) > 0 {
		return nil, NewError(CodeInsufficientScopes, fmt.Sprintf("%s made %d API key(s) with scopes (or a mode) this %s cannot revoke: keep the keys (revoke them later, or ask an owner), or ask an owner to remove the member",
			email, len(beyond), p.Kind.noun())).With("keys", beyond).With("held", p.Scopes)
	}
	for i := range keys {
		keys[i].RevokedAt = &now
		if err := tx.UpdateAPIKey(keys[i]); err != nil {
			return nil, err
		}
		if err := a.audit(tx, p, action{"api_key.revoke", keys[i].ID}); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
