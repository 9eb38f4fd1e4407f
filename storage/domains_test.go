package storage

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestDomainIndexesAndSchedule(t *testing.T) {
	db := openTest(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) *time.Time { v := t0.Add(time.Duration(h) * time.Hour); return &v }
	err := db.Update(func(tx *Tx) error {
		for i, id := range []string{"d1", "d2", "d3"} {
			if err := tx.InsertDomain(Domain{ID: id, AccountID: "a", Name: id + ".test", NextCheckAt: at(i + 1)}); err != nil {
				return err
			}
		}
		return tx.InsertDomain(Domain{ID: "d4", AccountID: "b", Name: "d1.test"}) // same name, other tenant
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *Tx) error {
		if err := tx.InsertDomain(Domain{ID: "dup", AccountID: "a", Name: "d1.test"}); !errors.Is(err, ErrExists) {
			t.Errorf("duplicate name: %v", err)
		}
		return nil
	})
	db.View(func(tx *Tx) error {
		if got := tx.DueDomainChecks(*at(2), 10); len(got) != 2 || got[0] != "d1" || got[1] != "d2" {
			t.Errorf("due at +2h: %v", got)
		}
		if d, err := tx.DomainByName("b", "d1.test"); err != nil || d.ID != "d4" {
			t.Errorf("by name: %v %v", d, err)
		}
		if n := tx.DomainCount("a"); n != 3 {
			t.Errorf("count %d", n)
		}
		return nil
	})
	// Moving a check moves its schedule entry; deleting removes everything.
	db.Update(func(tx *Tx) error {
		d, _ := tx.Domain("a", "d1")
		d.NextCheckAt = at(10)
		if err := tx.UpdateDomain(d); err != nil {
			return err
		}
		return tx.DeleteDomain("a", "d2")
	})
	db.View(func(tx *Tx) error {
		if got := tx.DueDomainChecks(*at(5), 10); len(got) != 1 || got[0] != "d3" {
			t.Errorf("due after move/delete: %v", got)
		}
		if _, err := tx.DomainByName("a", "d2.test"); !errors.Is(err, ErrNotFound) {
			t.Error("name index kept after delete")
		}
		list, _, _ := tx.Domains("a", ListOptions{Limit: 10})
		if len(list) != 2 || tx.DomainCount("a") != 2 {
			t.Errorf("list after delete: %d", len(list))
		}
		return nil
	})
}

func TestTemplateVersionsAreImmutable(t *testing.T) {
	db := openTest(t)
	tpl := Template{ID: "t1", AccountID: "a", Version: 1}
	if err := db.Update(func(tx *Tx) error {
		return tx.PutTemplate(tpl, TemplateVersion{TemplateID: "t1", Version: 1, Subject: "one"})
	}); err != nil {
		t.Fatal(err)
	}
	err := db.Update(func(tx *Tx) error {
		return tx.PutTemplate(tpl, TemplateVersion{TemplateID: "t1", Version: 1, Subject: "changed"})
	})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("version 1 overwritten: %v", err)
	}
	tpl.Version = 2
	db.Update(func(tx *Tx) error {
		return tx.PutTemplate(tpl, TemplateVersion{TemplateID: "t1", Version: 2, Subject: "two"})
	})
	db.View(func(tx *Tx) error {
		v, _ := tx.TemplateVersion("a", "t1", 1)
		list, _, _ := tx.TemplateVersions("a", "t1", ListOptions{Limit: 10})
		if v.Subject != "one" || len(list) != 2 || list[0].Version != 2 || tx.TemplateCount("a") != 1 {
			t.Errorf("v1=%q versions=%v count=%d", v.Subject, list, tx.TemplateCount("a"))
		}
		return nil
	})
}

func TestDKIMSelectorsByName(t *testing.T) {
	db := openTest(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := func(sel string, h int, active bool) DomainKey {
		k := DomainKey{Selector: sel, CreatedAt: t0.Add(time.Duration(h) * time.Hour)}
		if active {
			k.ActivatedAt = &k.CreatedAt
		}
		return k
	}
	err := db.Update(func(tx *Tx) error {
		for _, d := range []Domain{
			{ID: "d1", AccountID: "a", Name: "x.test", DKIMKeys: []DomainKey{key("old", 1, true), key("new", 3, false)}},
			{ID: "d2", AccountID: "b", Name: "x.test", DKIMKeys: []DomainKey{key("b1", 2, false)}},
			{ID: "d3", AccountID: "a", Name: "sub.x.test", DKIMKeys: []DomainKey{key("sub", 4, true)}},
			{ID: "d4", AccountID: "c", Name: "ax.test", DKIMKeys: []DomainKey{key("ax", 5, true)}},
		} {
			if err := tx.InsertDomain(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		got, err := tx.DKIMSelectorsByName("x.test", 0)
		if err != nil || !slices.Equal(got, []string{"old", "new", "b1"}) {
			t.Errorf("all: %v %v", got, err)
		}
		if got, _ := tx.DKIMSelectorsByName("x.test", 2); !slices.Equal(got, []string{"old", "new"}) {
			t.Errorf("limit 2: %v", got)
		}
		if got, _ := tx.DKIMSelectorsByName("none.test", 0); len(got) != 0 {
			t.Errorf("unknown name: %v", got)
		}
		return nil
	})
}
