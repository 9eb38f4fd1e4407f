package storage

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestAddressKey(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      bool
	}{
		{"Ann@Example.COM", "ann@example.com", false},
		{"sup@exämple.org", "sup@xn--exmple-cua.org", false},
		{"Sup@EXÄMPLE.org", "sup@xn--exmple-cua.org", false},
		{"sup@xn--exmple-cua.org", "sup@xn--exmple-cua.org", false},
		{"SUP@XN--EXMPLE-CUA.ORG", "sup@xn--exmple-cua.org", false},
		{"a@bücher.example", "a@xn--bcher-kva.example", false},
		{"a@exa\u0308mple.org", "a@xn--exmple-cua.org", false}, // decomposed ä: one key with the composed one
		{"jörg@example.com", "jörg@example.com", false},        // a UTF-8 local part is only lower-cased
		{"\"a@b\"@exämple.org", "\"a@b\"@xn--exmple-cua.org", false},
		{"x@[192.0.2.1]", "x@[192.0.2.1]", false},
		{"x@under_score.example", "x@under_score.example", false}, // ASCII: kept as it always was
		{"x@a\u00a0b.example", "x@a\u00a0b.example", true},        // not a domain name: kept, reported
		{"no-at-sign", "no-at-sign", false},
	} {
		got, err := AddressKey(c.in)
		if got != c.want || (err != nil) != c.bad {
			t.Errorf("AddressKey(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.bad)
		}
		if again, _ := AddressKey(got); again != got {
			t.Errorf("AddressKey(%q) = %q, not a fixed point", got, again)
		}
		if lower, _ := AddressKey(strings.ToLower(c.in)); lower != got {
			t.Errorf("AddressKey of %q lower-cased = %q, want %q", c.in, lower, got)
		}
	}
}

// TestSuppressionEitherIDNSpelling: a suppression added under one spelling
// of an internationalised domain is the one entry of the other: it
// suppresses it, is not added again, is read and deleted through it, and
// is stored and listed in A-label form.
func TestSuppressionEitherIDNSpelling(t *testing.T) {
	db := openTest(t)
	const unicode, alabel = "Sup@Exämple.org", "sup@xn--exmple-cua.org"
	for _, c := range []struct{ add, other string }{{unicode, alabel}, {alabel, unicode}} {
		if err := db.Update(func(tx *Tx) error {
			s, created, err := tx.PutSuppression(Suppression{AccountID: "a1", Recipient: c.add, Reason: "manual"})
			if err != nil || !created || s.Recipient != alabel {
				t.Errorf("adding %s: %+v created %v, %v", c.add, s, created, err)
			}
			if _, created, _ := tx.PutSuppression(Suppression{AccountID: "a1", Recipient: c.other, Reason: "manual"}); created {
				t.Errorf("%s added beside %s", c.other, c.add)
			}
			if n, _ := tx.PutSuppressions([]Suppression{{AccountID: "a1", Recipient: c.other, Reason: "manual"}}); n != 0 {
				t.Errorf("%s imported beside %s", c.other, c.add)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		db.View(func(tx *Tx) error {
			for _, rcpt := range []string{unicode, alabel, "sup@exämple.org"} {
				if !tx.Suppressed("a1", rcpt, StreamTransactional) {
					t.Errorf("added as %s: %s is not suppressed", c.add, rcpt)
				}
				if s, err := tx.Suppression("a1", rcpt, ""); err != nil || s.Recipient != alabel {
					t.Errorf("added as %s, read as %s: %+v %v", c.add, rcpt, s, err)
				}
			}
			list, _, err := tx.Suppressions("a1", ListOptions{Limit: 10})
			if err != nil || len(list) != 1 || list[0].Recipient != alabel || tx.SuppressionCount("a1") != 1 {
				t.Errorf("added as %s: list %+v %v, count %d", c.add, list, err, tx.SuppressionCount("a1"))
			}
			return nil
		})
		if err := db.Update(func(tx *Tx) error { return tx.DeleteSuppression("a1", c.other, "") }); err != nil {
			t.Errorf("added as %s, deleted as %s: %v", c.add, c.other, err)
		}
		db.View(func(tx *Tx) error {
			if tx.Suppressed("a1", c.add, "") || tx.SuppressionCount("a1") != 0 {
				t.Errorf("added as %s: still suppressed after the delete", c.add)
			}
			return nil
		})
	}
}

// TestMessageFiltersEitherIDNSpelling: a message to an internationalised
// domain is listed, searched and indexed under the A-label form, and found
// by either spelling; its events are too, recorded before schema v19 with
// the Unicode form or after with the A-label.
func TestMessageFiltersEitherIDNSpelling(t *testing.T) {
	db := openTest(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	m := Message{ID: indexMsgID(at, 1), AccountID: "a1", Status: "queued", To: []string{"Ann <Ann@Bücher.example>"},
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), Recipients: []Recipient{{Email: "ann@xn--bcher-kva.example", Kind: "to"}}}
	if err := db.Update(func(tx *Tx) error {
		if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
			return err
		}
		for i, rcpt := range []string{"ann@bücher.example", "ann@xn--bcher-kva.example,bob@example.com"} {
			ev := Event{ID: indexMsgID(at.Add(time.Second), i), AccountID: "a1", Type: "message.sent", MessageID: m.ID,
				Recipient: rcpt, Timestamp: at, ExpiresAt: at.Add(time.Hour)}
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := indexKeys(t, db, bucketMessagesByRecipient); !slices.Equal(got, []string{"a1|ann@xn--bcher-kva.example|" + m.ID}) {
		t.Errorf("recipient index: %q", got)
	}
	db.View(func(tx *Tx) error {
		for _, rcpt := range []string{"ann@bücher.example", "ANN@BÜCHER.EXAMPLE", "ann@xn--bcher-kva.example"} {
			list, _, _, err := tx.Messages("a1", MessageFilter{Recipient: rcpt}, ListOptions{Limit: 10}, false)
			if err != nil || len(list) != 1 {
				t.Errorf("messages to %s: %d %v", rcpt, len(list), err)
			}
			found, _, err := tx.ScanMessages("a1", MessageFilter{Recipient: rcpt}, ListOptions{Limit: 10}, 100)
			if err != nil || len(found) != 1 {
				t.Errorf("search for %s: %d %v", rcpt, len(found), err)
			}
			evs, _, _, err := tx.Events("a1", EventFilter{Recipient: rcpt}, ListOptions{Limit: 10}, false)
			if err != nil || len(evs) != 2 {
				t.Errorf("events of %s: %d %v", rcpt, len(evs), err)
			}
		}
		return nil
	})
}

// TestMigration19KeysAddressesByALabel: suppressions, recipient index
// entries and message recipients stored with a Unicode domain before v19
// are in A-label form after it, so that mail to either spelling is
// suppressed and a filter by either finds the message; a suppression held
// under both spellings becomes one, and the list count follows.
func TestMigration19KeysAddressesByALabel(t *testing.T) {
	b, path := openAt(t, 18)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	uni := Message{ID: indexMsgID(at, 1), AccountID: "a1", Status: "queued", To: []string{"Ann <Ann@Bücher.example>"},
		Cc: []string{"bob@example.com"}, CreatedAt: at, ExpiresAt: at.Add(time.Hour),
		Recipients: []Recipient{{Email: "ann@bücher.example", Kind: "to"}, {Email: "bob@example.com", Kind: "cc"}}}
	plain := Message{ID: indexMsgID(at, 2), AccountID: "a1", Status: "delivered", To: []string{"cat@example.com"},
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), Recipients: []Recipient{{Email: "cat@example.com", Kind: "to"}}}
	// Both spellings as two recipients (possible before v19): the second
	// keeps its spelling rather than become a duplicate.
	both := Message{ID: indexMsgID(at, 3), AccountID: "a1", Status: "delivered", To: []string{"ann@xn--bcher-kva.example", "ann@bücher.example"},
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), Recipients: []Recipient{{Email: "ann@xn--bcher-kva.example", Kind: "to"}, {Email: "ann@bücher.example", Kind: "to"}}}
	msgs := []Message{uni, plain, both}
	supp := func(rcpt, stream, reason string) []byte {
		s := Suppression{AccountID: "a1", Recipient: rcpt, Stream: stream, Reason: reason, CreatedAt: at}
		v, _ := json.Marshal(s)
		return v
	}
	if err := b.Update(func(tx *bolt.Tx) error {
		s := tx.Bucket(bucketSuppressions)
		s.Put(join("a1", "sup@exämple.org"), supp("sup@exämple.org", "", "hard_bounce"))
		s.Put(join("a1", "sup@exämple.org", StreamBroadcast), supp("sup@exämple.org", StreamBroadcast, "unsubscribe"))
		s.Put(join("a1", "two@bücher.example"), supp("two@bücher.example", "", "manual"))
		s.Put(join("a1", "two@xn--bcher-kva.example"), supp("two@xn--bcher-kva.example", "", "complaint"))
		s.Put(join("a1", "odd@a\u00a0b.example"), supp("odd@a\u00a0b.example", "", "manual"))
		s.Put(join("a1", "ann@example.com"), supp("ann@example.com", "", "manual"))
		s.Put(join("a2", "sup@exämple.org"), supp("sup@exämple.org", "", "manual"))
		counts := tx.Bucket(bucketCounts)
		counts.Put(join(collectionSuppressions, "a1"), putU64(6))
		counts.Put(join(collectionSuppressions, "a2"), putU64(1))
		for _, m := range msgs {
			if err := tx.Bucket(bucketMessages).Put(join(m.AccountID, m.ID), encodeMessage(&m)); err != nil {
				return err
			}
			// The entries as v16 to v18 wrote them: the address lower-cased.
			var addrs []string
			for _, list := range [][]string{m.To, m.Cc, m.Bcc} {
				for _, a := range list {
					addrs = append(addrs, strings.ToLower(addressOf(a)))
				}
			}
			for _, r := range m.Recipients {
				addrs = append(addrs, r.Email)
			}
			for _, a := range addrs {
				if err := tx.Bucket(bucketMessagesByRecipient).Put(join(m.AccountID, a, m.ID), nil); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db := openMigrated(t, b, path)
	db.View(func(tx *Tx) error {
		list, _, err := tx.Suppressions("a1", ListOptions{Limit: 20})
		var got []string
		for _, s := range list {
			got = append(got, s.Recipient+" "+s.Stream+" "+s.Reason)
		}
		want := []string{"ann@example.com  manual", "odd@a\u00a0b.example  manual", "sup@xn--exmple-cua.org  hard_bounce",
			"sup@xn--exmple-cua.org broadcast unsubscribe", "two@xn--bcher-kva.example  complaint"}
		if err != nil || !slices.Equal(got, want) || tx.SuppressionCount("a1") != 5 {
			t.Errorf("suppressions after v19:\n%q\nwant\n%q\ncount %d, %v", got, want, tx.SuppressionCount("a1"), err)
		}
		for _, rcpt := range []string{"sup@exämple.org", "sup@xn--exmple-cua.org", "two@bücher.example", "odd@a\u00a0b.example"} {
			if !tx.Suppressed("a1", rcpt, StreamTransactional) {
				t.Errorf("%s not suppressed after v19", rcpt)
			}
		}
		if s, err := tx.Suppression("a2", "sup@xn--exmple-cua.org", ""); err != nil || s.Recipient != "sup@xn--exmple-cua.org" || tx.SuppressionCount("a2") != 1 {
			t.Errorf("the other account's suppression: %+v %v, count %d", s, err, tx.SuppressionCount("a2"))
		}

		m, err := tx.Message("a1", uni.ID)
		if err != nil || m.Recipients[0].Email != "ann@xn--bcher-kva.example" || m.Recipients[1].Email != "bob@example.com" ||
			m.To[0] != "Ann <Ann@Bücher.example>" {
			t.Errorf("message after v19: %+v %v", m, err)
		}
		if m, _ := tx.Message("a1", both.ID); m.Recipients[0].Email != "ann@xn--bcher-kva.example" || m.Recipients[1].Email != "ann@bücher.example" {
			t.Errorf("message with both spellings after v19: %+v", m.Recipients)
		}
		for _, rcpt := range []string{"ann@bücher.example", "ann@xn--bcher-kva.example"} {
			list, _, _, err := tx.Messages("a1", MessageFilter{Recipient: rcpt}, ListOptions{Limit: 10}, false)
			if err != nil || !slices.Equal(messageIDs(list), []string{uni.ID, both.ID}) {
				t.Errorf("messages to %s after v19: %v %v", rcpt, messageIDs(list), err)
			}
			found, _, err := tx.ScanMessages("a1", MessageFilter{Recipient: rcpt}, ListOptions{Limit: 10}, 100)
			if err != nil || !slices.Equal(messageIDs(found), []string{uni.ID, both.ID}) {
				t.Errorf("search for %s after v19: %v %v", rcpt, messageIDs(found), err)
			}
		}
		return nil
	})
	// The index holds exactly the entries the messages have now, so that
	// their expiry removes every one.
	var want []string
	db.View(func(tx *Tx) error {
		for _, m := range msgs {
			m, _ := tx.Message(m.AccountID, m.ID)
			for _, k := range messageIndexEntries(&m)[string(bucketMessagesByRecipient)] {
				want = append(want, string(bytes.ReplaceAll(k, []byte{sep}, []byte("|"))))
			}
		}
		return nil
	})
	slices.Sort(want)
	got := indexKeys(t, db, bucketMessagesByRecipient)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("recipient index after v19:\n%q\nwant\n%q", got, want)
	}
}
