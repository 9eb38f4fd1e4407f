package storage

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A budgeted scan (by subject: a filter no index serves) reads at most its
// budget of messages per page, newest first, skips records that cannot
// match without decoding them, and continues from where it stopped; the
// queue count sees one account's entries only.
func TestScanMessagesBudgetAndAccountQueue(t *testing.T) {
	db := openTest(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	err := db.Update(func(tx *Tx) error {
		for i := range 10 {
			at := base.Add(time.Duration(i) * time.Minute)
			to, subject := "other@dest.test", "Other"
			if i == 1 || i == 8 {
				to, subject = "ann@dest.test", "Ann's invoice"
			}
			acct := "a1"
			if i == 5 {
				acct = "a2"
			}
			m := Message{ID: fmt.Sprintf("%08x-%04x-7000-8000-%012x", at.UnixMilli()>>16, at.UnixMilli()&0xffff, i),
				AccountID: acct, Status: "queued", To: []string{to}, Subject: subject, CreatedAt: at, ExpiresAt: at.Add(time.Hour), QueueAt: &at,
				Recipients: []Recipient{{Email: to, Kind: "to", Status: "queued"}}}
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scan := func(after []byte) ([]Message, MessageScan) {
		var list []Message
		var sc MessageScan
		db.View(func(tx *Tx) error {
			var err error
			list, sc, err = tx.ScanMessages("a1", MessageFilter{SubjectPrefix: "ann's"}, ListOptions{Reverse: true, Limit: 5, After: after}, 4)
			return err
		})
		return list, sc
	}
	// a1 has messages 0-4 and 6-9: the first page reads 9, 8, 7, 6.
	list, sc := scan(nil)
	if len(list) != 1 || list[0].CreatedAt != base.Add(8*time.Minute) || !sc.Spent || !sc.HasMore ||
		sc.Examined != 4 || !sc.Reached.Equal(base.Add(6*time.Minute)) {
		t.Fatalf("first page: %d messages, %+v", len(list), sc)
	}
	list, sc = scan(sc.Next) // 4, 3, 2, 1
	if len(list) != 1 || list[0].CreatedAt != base.Add(time.Minute) || !sc.Spent || !sc.Reached.Equal(base.Add(time.Minute)) {
		t.Fatalf("second page: %d messages, %+v", len(list), sc)
	}
	list, sc = scan(sc.Next) // 0, and the end
	if len(list) != 0 || sc.Spent || sc.HasMore || sc.Examined != 1 {
		t.Fatalf("last page: %d messages, %+v", len(list), sc)
	}

	db.View(func(tx *Tx) error {
		q := tx.AccountQueue("a1", base.Add(4*time.Minute), 0)
		if q.Due != 5 || q.Later != 4 || !q.Complete || !q.HasOldest || !q.Oldest.At.Equal(base) {
			t.Errorf("a1's queue: %+v", q)
		}
		if q := tx.AccountQueue("a1", base.Add(4*time.Minute), 3); q.Due != 3 || q.Complete {
			t.Errorf("a1's queue, 3 entries read: %+v", q)
		}
		if q := tx.AccountQueue("a2", base, 0); q.Due != 0 || q.Later != 1 || !q.Oldest.At.Equal(base.Add(5*time.Minute)) {
			t.Errorf("a2's queue: %+v", q)
		}
		return nil
	})
}

// The subject is read in place from a binary record as decoding reads it,
// and the prefix test lower cases as strings.ToLower does, ASCII or not.
func TestSubjectPrefixInPlace(t *testing.T) {
	for _, subject := range []string{"", "Invoice 42", "ÜBERWEISUNG fällig", "\u212Aelvin", "İstanbul", "invoic"} {
		m := Message{ID: "x", AccountID: "a", Status: "queued", To: []string{"a@b.test", "c@d.test"}, Cc: []string{"e@f.test"},
			Subject: subject, Recipients: []Recipient{{Email: "a@b.test"}}}
		got, ok := binarySubject(encodeMessage(&m))
		if !ok || string(got) != subject {
			t.Errorf("binarySubject of %q: %q, %v", subject, got, ok)
		}
		for _, prefix := range []string{"", "invoice", "über", "kelvin", "k", "i̇stan", "istan", "invoice 42 and more"} {
			want := strings.HasPrefix(strings.ToLower(subject), prefix)
			if hasPrefixLower(subject, prefix) != want || hasPrefixLower(got, prefix) != want {
				t.Errorf("hasPrefixLower(%q, %q) is not %v", subject, prefix, want)
			}
		}
	}
}
