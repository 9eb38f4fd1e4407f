package storage

import (
	"errors"
	"testing"
)

// TestTemplateAliasIndex: the alias index is written with the template,
// unique per account, moved and freed by an update.
func TestTemplateAliasIndex(t *testing.T) {
	db := openTest(t)
	put := func(t0 Template, version int) error {
		return db.Update(func(tx *Tx) error {
			return tx.PutTemplate(t0, TemplateVersion{TemplateID: t0.ID, Version: version})
		})
	}
	resolve := func(account, alias string) (string, error) {
		var id string
		err := db.View(func(tx *Tx) error {
			var err error
			id, err = tx.TemplateIDByAlias(account, alias)
			return err
		})
		return id, err
	}
	if err := put(Template{ID: "t1", AccountID: "a1", Alias: "welcome", Version: 1}, 1); err != nil {
		t.Fatal(err)
	}
	if err := put(Template{ID: "t2", AccountID: "a1", Alias: "welcome", Version: 1}, 1); !errors.Is(err, ErrAliasTaken) {
		t.Fatalf("a second template with the alias: %v, want ErrAliasTaken", err)
	}
	db.View(func(tx *Tx) error {
		if _, err := tx.Template("a1", "t2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the refused template was stored: %v", err)
		}
		return nil
	})
	if err := put(Template{ID: "t3", AccountID: "a2", Alias: "welcome", Version: 1}, 1); err != nil {
		t.Fatalf("another account's alias: %v", err)
	}
	if err := put(Template{ID: "t1", AccountID: "a1", Alias: "welcome", Version: 2}, 2); err != nil {
		t.Fatalf("keeping its own alias: %v", err)
	}
	if err := put(Template{ID: "t1", AccountID: "a1", Alias: "hello", Version: 3}, 3); err != nil {
		t.Fatal(err)
	}
	if id, err := resolve("a1", "hello"); id != "t1" || err != nil {
		t.Errorf("hello: %q %v", id, err)
	}
	if _, err := resolve("a1", "welcome"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the old alias was not freed: %v", err)
	}
	if id, _ := resolve("a2", "welcome"); id != "t3" {
		t.Errorf("the other account's alias: %q", id)
	}
	if err := put(Template{ID: "t1", AccountID: "a1", Version: 4}, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := resolve("a1", "hello"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a cleared alias still resolves: %v", err)
	}
	if err := put(Template{ID: "t2", AccountID: "a1", Alias: "hello", Version: 1}, 1); err != nil {
		t.Errorf("a freed alias is not reusable: %v", err)
	}
}
