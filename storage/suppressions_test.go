package storage

import (
	"errors"
	"testing"
)

// TestDeleteSuppressionByStream: without a stream every entry of the
// recipient goes, and only its; with one, only that stream's entry.
func TestDeleteSuppressionByStream(t *testing.T) {
	db, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(rcpt, stream string) {
		t.Helper()
		if err := db.Update(func(tx *Tx) error {
			_, created, err := tx.PutSuppression(Suppression{AccountID: "a1", Recipient: rcpt, Stream: stream, Reason: "manual"})
			if !created {
				t.Errorf("%s %q not created", rcpt, stream)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("u@x.test", "")
	put("u@x.test", StreamBroadcast)
	put("u@x.testing", "") // shares the prefix of u@x.test
	put("v@x.test", StreamBroadcast)

	del := func(rcpt, stream string) error {
		return db.Update(func(tx *Tx) error { return tx.DeleteSuppression("a1", rcpt, stream) })
	}
	if err := del("v@x.test", StreamTransactional); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting a stream with no entry: %v", err)
	}
	if err := del("v@x.test", StreamBroadcast); err != nil {
		t.Fatal(err)
	}
	if err := del("u@x.test", ""); err != nil {
		t.Fatal(err)
	}
	if err := del("u@x.test", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("a second delete: %v", err)
	}
	db.View(func(tx *Tx) error {
		list, _, err := tx.Suppressions("a1", ListOptions{Limit: 10})
		if err != nil || len(list) != 1 || list[0].Recipient != "u@x.testing" || tx.SuppressionCount("a1") != 1 {
			t.Errorf("left %+v %v, count %d", list, err, tx.SuppressionCount("a1"))
		}
		return nil
	})
}

// TestPutSuppressionsCountsWhatItAdds: entries already there, in the
// database or earlier in the list, are kept and not counted; the count
// moves by what was added, per account.
func TestPutSuppressionsCountsWhatItAdds(t *testing.T) {
	db, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := func(acct, rcpt, stream, reason string) Suppression {
		return Suppression{AccountID: acct, Recipient: rcpt, Stream: stream, Reason: reason}
	}
	put := func(list ...Suppression) (added int) {
		t.Helper()
		if err := db.Update(func(tx *Tx) error {
			var err error
			added, err = tx.PutSuppressions(list)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return added
	}
	if n := put(s("a1", "u@x.test", "", "complaint")); n != 1 {
		t.Fatalf("added %d", n)
	}
	n := put(s("a1", "u@x.test", "", "manual"), s("a1", "u@x.test", StreamBroadcast, "manual"),
		s("a1", "v@x.test", "", "manual"), s("a1", "v@x.test", "", "hard_bounce"), s("a2", "u@x.test", "", "manual"))
	if n != 3 {
		t.Errorf("added %d, want 3", n)
	}
	db.View(func(tx *Tx) error {
		if c1, c2 := tx.SuppressionCount("a1"), tx.SuppressionCount("a2"); c1 != 3 || c2 != 1 {
			t.Errorf("counts %d %d, want 3 1", c1, c2)
		}
		if got, _ := tx.Suppression("a1", "u@x.test", ""); got.Reason != "complaint" {
			t.Errorf("the stored entry was changed: %+v", got)
		}
		if got, _ := tx.Suppression("a1", "v@x.test", ""); got.Reason != "manual" {
			t.Errorf("the first of two in the list should stay: %+v", got)
		}
		return nil
	})
}

// TestSuppressedByStream: an all-streams entry suppresses every stream, a
// stream's entry only that stream, and an address that merely starts with
// a suppressed one is not suppressed.
func TestSuppressedByStream(t *testing.T) {
	db := openTest(t)
	for _, s := range []Suppression{
		{AccountID: "a1", Recipient: "u@x.test", Stream: StreamBroadcast, Reason: "manual"},
		{AccountID: "a1", Recipient: "w@x.test", Reason: "manual"},
		{AccountID: "a1", Recipient: "v@x.test.example", Reason: "manual"},
	} {
		if err := db.Update(func(tx *Tx) error { _, _, err := tx.PutSuppression(s); return err }); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		account, rcpt, stream string
		want                  bool
	}{
		{"a1", "u@x.test", StreamBroadcast, true},
		{"a1", "u@x.test", StreamTransactional, false},
		{"a1", "w@x.test", StreamTransactional, true},
		{"a1", "w@x.test", StreamBroadcast, true},
		{"a1", "v@x.test", StreamBroadcast, false}, // v@x.test.example is another address
		{"a2", "w@x.test", StreamBroadcast, false}, // another account
	} {
		var got bool
		db.View(func(tx *Tx) error { got = tx.Suppressed(c.account, c.rcpt, c.stream); return nil })
		if got != c.want {
			t.Errorf("Suppressed(%s, %s, %s) = %v, want %v", c.account, c.rcpt, c.stream, got, c.want)
		}
	}
}
