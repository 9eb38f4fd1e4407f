package storage

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestMigration13AddsInboundBuckets: a file at v12 with an account gets the
// inbound buckets, and inbound records can be written at once.
func TestMigration13AddsInboundBuckets(t *testing.T) {
	b, path := openAt(t, 12)
	db := openMigrated(t, b, path)
	err := db.Update(func(tx *Tx) error {
		return tx.InsertInboundDomain(InboundDomain{ID: "d1", AccountID: "a1", Name: "in.example.test", Status: InboundPending})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if list, _, total, err := tx.InboundDomains("a1", ListOptions{Limit: 10}); err != nil || total != 1 || len(list) != 1 {
			t.Errorf("after v13: %v %d %v", list, total, err)
		}
		return nil
	})
}

// TestVerifiedInboundNameIsOneAccounts: of two accounts verifying the same
// name at once, exactly one holds it; the other gets ErrExists, and gets it
// once the first deletes its domain.
func TestVerifiedInboundNameIsOneAccounts(t *testing.T) {
	db := openTest(t)
	const name = "in.example.test"
	accounts := []string{"a1", "a2", "a3", "a4"}
	for _, a := range accounts {
		if err := db.Update(func(tx *Tx) error {
			return tx.InsertInboundDomain(InboundDomain{ID: "d-" + a, AccountID: a, Name: name, Status: InboundPending})
		}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(accounts))
	for i, a := range accounts {
		wg.Go(func() {
			errs[i] = db.Update(func(tx *Tx) error {
				d, err := tx.InboundDomain(a, "d-"+a)
				if err != nil {
					return err
				}
				d.Status = InboundVerified
				return tx.UpdateInboundDomain(d)
			})
		})
	}
	wg.Wait()
	winner := ""
	for i, err := range errs {
		switch {
		case err == nil && winner == "":
			winner = accounts[i]
		case err == nil:
			t.Fatalf("both %s and %s verified %s", winner, accounts[i], name)
		case !errors.Is(err, ErrExists):
			t.Fatalf("%s: %v", accounts[i], err)
		}
	}
	if winner == "" {
		t.Fatal("nobody verified the name")
	}
	db.View(func(tx *Tx) error {
		if d, err := tx.VerifiedInboundDomain(name); err != nil || d.AccountID != winner {
			t.Errorf("the listener's lookup: %+v %v, want %s", d, err, winner)
		}
		return nil
	})
	other := accounts[0]
	if other == winner {
		other = accounts[1]
	}
	if err := db.Update(func(tx *Tx) error { return tx.DeleteInboundDomain(winner, "d-"+winner) }); err != nil {
		t.Fatal(err)
	}
	err := db.Update(func(tx *Tx) error {
		d, _ := tx.InboundDomain(other, "d-"+other)
		d.Status = InboundVerified
		return tx.UpdateInboundDomain(d)
	})
	if err != nil {
		t.Fatalf("after the holder deleted its domain: %v", err)
	}
}

// TestInboundRoutesAndMessagesExpire: routes are unique per domain and
// pattern and go with their domain; two copies of a received message share
// one raw record, and the copies and their raw bytes are swept at their
// expiry, not before.
func TestInboundRoutesAndMessagesExpire(t *testing.T) {
	db := openTest(t)
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	d := InboundDomain{ID: "d1", AccountID: "a1", Name: "in.example.test", Status: InboundPending}
	r := InboundRoute{ID: "r1", AccountID: "a1", DomainID: "d1", Pattern: "support", WebhookID: "w1"}
	m := InboundMessage{ID: "m1", AccountID: "a1", RawID: "x1", ReceivedAt: now, ExpiresAt: now.Add(time.Hour)}
	m2 := m
	m2.ID = "m2"
	err := db.Update(func(tx *Tx) error {
		if err := tx.InsertInboundDomain(d); err != nil {
			return err
		}
		if err := tx.InsertInboundRoute(r); err != nil {
			return err
		}
		if err := tx.InsertInboundRoute(InboundRoute{ID: "r2", AccountID: "a1", DomainID: "d1", Pattern: "support"}); !errors.Is(err, ErrExists) {
			t.Errorf("a second route for the pattern: %v", err)
		}
		if err := tx.InsertInboundRaw("a1", "x1", []byte("raw"), m.ExpiresAt); err != nil {
			return err
		}
		if err := tx.InsertInboundMessage(m); err != nil {
			return err
		}
		return tx.InsertInboundMessage(m2)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if got, err := tx.InboundRouteFor(d, "support"); err != nil || got.ID != "r1" {
			t.Errorf("route for support: %+v %v", got, err)
		}
		other := m
		other.AccountID = "a2"
		if _, err := tx.InboundRaw(other); !errors.Is(err, ErrNotFound) {
			t.Errorf("another account reads the raw message: %v", err)
		}
		if n := tx.bucket(bucketInboundRaw).KeyN(); n != 1 {
			t.Errorf("%d raw records for two copies of one message", n)
		}
		return nil
	})
	sweep := func(at time.Time) {
		if err := db.Update(func(tx *Tx) error { _, err := tx.SweepExpired(at, 100); return err }); err != nil {
			t.Fatal(err)
		}
	}
	sweep(now.Add(time.Minute))
	db.View(func(tx *Tx) error {
		for _, c := range []InboundMessage{m, m2} {
			if raw, err := tx.InboundRaw(c); err != nil || string(raw) != "raw" {
				t.Errorf("before expiry, %s: %q %v", c.ID, raw, err)
			}
		}
		return nil
	})
	sweep(now.Add(2 * time.Hour))
	db.Update(func(tx *Tx) error {
		if _, err := tx.InboundRaw(m); !errors.Is(err, ErrNotFound) {
			t.Errorf("after expiry the raw message is still there: %v", err)
		}
		if n := tx.bucket(bucketInboundRaw).KeyN(); n != 0 {
			t.Errorf("%d raw records left after expiry", n)
		}
		for _, id := range []string{"m1", "m2"} {
			if _, err := tx.InboundMessage("a1", id); !errors.Is(err, ErrNotFound) {
				t.Errorf("after expiry the message %s is still there: %v", id, err)
			}
		}
		if err := tx.DeleteInboundDomain("a1", "d1"); err != nil {
			t.Error(err)
		}
		if _, err := tx.InboundRoute("a1", "r1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the route outlived its domain: %v", err)
		}
		return nil
	})
}
