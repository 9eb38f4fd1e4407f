package storage

import (
	"errors"
	"testing"
)

// TestTenantGettersKeepAccountsApart: every getter of a tenant's record
// takes the account id and finds nothing of another account's; the
// cross-tenant lookups (by hash, by id for the operator and the workers)
// are the only ones that do.
func TestTenantGettersKeepAccountsApart(t *testing.T) {
	db := openTest(t)
	err := db.Update(func(tx *Tx) error {
		if err := tx.InsertAPIKey(APIKey{ID: "k1", AccountID: "a1", Name: "ci", Hash: []byte("h1")}); err != nil {
			return err
		}
		return tx.InsertDomain(Domain{ID: "d1", AccountID: "a1", Name: "one.test", Status: DomainPending})
	})
	if err != nil {
		t.Fatal(err)
	}

	db.View(func(tx *Tx) error {
		for _, c := range []struct {
			what string
			err  error
		}{
			{"APIKey", second(tx.APIKey("a2", "k1"))},
			{"Domain", second(tx.Domain("a2", "d1"))},
		} {
			if !errors.Is(c.err, ErrNotFound) {
				t.Errorf("%s of another account: %v, want ErrNotFound", c.what, c.err)
			}
		}
		for _, c := range []struct {
			what, id string
			err      error
		}{
			{"APIKey", first(tx.APIKey("a1", "k1")).ID, nil},
			{"APIKeyByID", first(tx.APIKeyByID("k1")).ID, nil},
			{"APIKeyByHash", first(tx.APIKeyByHash([]byte("h1"))).ID, nil},
			{"Domain", first(tx.Domain("a1", "d1")).ID, nil},
			{"DomainByID", first(tx.DomainByID("d1")).ID, nil},
		} {
			if c.id == "" {
				t.Errorf("%s of the owner found nothing", c.what)
			}
		}
		return nil
	})

	// Writes through another account find nothing and change nothing.
	for _, c := range []struct {
		what  string
		write func(tx *Tx) error
	}{
		{"UpdateAPIKey", func(tx *Tx) error { return tx.UpdateAPIKey(APIKey{ID: "k1", AccountID: "a2", Name: "taken"}) }},
		{"UpdateDomain", func(tx *Tx) error {
			return tx.UpdateDomain(Domain{ID: "d1", AccountID: "a2", Name: "one.test", Status: DomainVerified})
		}},
		{"DeleteDomain", func(tx *Tx) error { return tx.DeleteDomain("a2", "d1") }},
	} {
		if err := db.Update(c.write); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s through another account: %v, want ErrNotFound", c.what, err)
		}
	}
	db.View(func(tx *Tx) error {
		if k, err := tx.APIKey("a1", "k1"); err != nil || k.Name != "ci" {
			t.Errorf("key after another account's update: %+v, %v", k, err)
		}
		if s, err := tx.DomainStatus("a1", "one.test"); err != nil || s != DomainPending {
			t.Errorf("domain after another account's update: %q, %v", s, err)
		}
		if _, err := tx.DomainStatus("a2", "one.test"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another account's update indexed the domain under it: %v", err)
		}
		return nil
	})
}

func first[T any](v T, _ error) T        { return v }
func second[T any](_ T, err error) error { return err }
