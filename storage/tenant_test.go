package storage

import (
	"errors"
	"testing"
	"time"
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
		if err := tx.InsertDomain(Domain{ID: "d1", AccountID: "a1", Name: "one.test", Status: DomainPending}); err != nil {
			return err
		}
		if err := tx.PutTemplate(Template{ID: "t1", AccountID: "a1", Version: 1}, TemplateVersion{TemplateID: "t1", Version: 1}); err != nil {
			return err
		}
		m := Message{ID: "m1", AccountID: "a1", Status: "delivered", ExpiresAt: time.Now().Add(time.Hour)}
		if err := tx.InsertMessage(m, MessageContent{Subject: "hi"}, []byte("Subject: hi\r\n\r\nhello")); err != nil {
			return err
		}
		if err := tx.PutLinks("m1", []string{"https://one.test/"}); err != nil {
			return err
		}
		return tx.PutEngagement("m1", Engagement{Opens: 1})
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
			{"TemplateVersion", second(tx.TemplateVersion("a2", "t1", 1))},
			{"TemplateVersions", third(tx.TemplateVersions("a2", "t1", ListOptions{Limit: 10}))},
			{"MessageContent", second(tx.MessageContent("a2", "m1"))},
			{"Link", second(tx.Link("a2", "m1", 0))},
			{"Engagement", second(tx.Engagement("a2", "m1"))},
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
			{"TemplateVersion", first(tx.TemplateVersion("a1", "t1", 1)).TemplateID, nil},
			{"MessageContent", first(tx.MessageContent("a1", "m1")).Subject, nil},
			{"Link", first(tx.Link("a1", "m1", 0)), nil},
		} {
			if c.id == "" {
				t.Errorf("%s of the owner found nothing", c.what)
			}
		}
		if raw := tx.MessageRaw("a2", "m1"); raw != nil {
			t.Errorf("MessageRaw of another account: %q", raw)
		}
		if raw := tx.MessageRaw("a1", "m1"); raw == nil {
			t.Error("MessageRaw of the owner found nothing")
		}
		if list, _, err := tx.TemplateVersions("a1", "t1", ListOptions{Limit: 10}); err != nil || len(list) != 1 {
			t.Errorf("TemplateVersions of the owner: %v, %v", list, err)
		}
		if e, err := tx.Engagement("a1", "m1"); err != nil || e.Opens != 1 {
			t.Errorf("Engagement of the owner: %+v, %v", e, err)
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

func first[T any](v T, _ error) T               { return v }
func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }
