package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// newMessage is a message of account with one recipient, queued at queueAt
// (nil: not queued).
func newMessage(account, id string, test bool, queueAt *time.Time) Message {
	return Message{ID: id, AccountID: account, Test: test, Status: "queued", From: "a@acme.test", Domain: "acme.test",
		To: []string{"u@dest.test"}, Recipients: []Recipient{{Email: "u@dest.test", Kind: "to", Status: "queued"}},
		QueueAt: queueAt, ExpiresAt: *minuteAt(600)}
}

func TestMessageQueueOrderAndMoves(t *testing.T) {
	db := openTest(t)
	err := db.Update(func(tx *Tx) error {
		for _, m := range []Message{
			newMessage("a1", "m3", false, minuteAt(3)),
			newMessage("a1", "m1", false, minuteAt(1)),
			newMessage("a2", "m2", false, minuteAt(2)),
			newMessage("a1", "m9", false, nil), // delivered long ago: not queued
			newMessage("a1", "m5", false, minuteAt(5)),
		} {
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.InsertMessage(newMessage("a1", "m1", false, nil), MessageContent{}, nil) }); !errors.Is(err, ErrExists) {
		t.Errorf("second insert of m1: %v, want ErrExists", err)
	}
	due := func(tx *Tx, now time.Time, max int) (ids []string, next time.Time) {
		list, next := tx.DueMessages(now, max)
		for _, q := range list {
			ids = append(ids, q.AccountID+"/"+q.MessageID)
		}
		return ids, next
	}
	db.View(func(tx *Tx) error {
		if n := tx.QueueLength(); n != 4 {
			t.Errorf("queue length %d, want 4", n)
		}
		ids, next := due(tx, *minuteAt(3), 10)
		if want := "[a1/m1 a2/m2 a1/m3]"; fmt.Sprint(ids) != want || !next.Equal(*minuteAt(5)) {
			t.Errorf("due at 3: %v next %v; want %s next 5", ids, next, want)
		}
		// A full batch reports the first entry it left as the next.
		ids, next = due(tx, *minuteAt(3), 2)
		if fmt.Sprint(ids) != "[a1/m1 a2/m2]" || !next.Equal(*minuteAt(3)) {
			t.Errorf("due at 3, max 2: %v next %v", ids, next)
		}
		ids, next = due(tx, *minuteAt(9), 10)
		if len(ids) != 4 || !next.IsZero() {
			t.Errorf("due at 9: %v next %v; want all four and no next", ids, next)
		}
		return nil
	})

	// A message read in the transaction moves its own entry; one whose
	// QueueAt is cleared leaves the queue.
	err = db.Update(func(tx *Tx) error {
		m, err := tx.Message("a1", "m1")
		if err != nil {
			return err
		}
		m.QueueAt = minuteAt(7)
		if err := tx.UpdateMessage(m); err != nil {
			return err
		}
		m, err = tx.Message("a1", "m3")
		if err != nil {
			return err
		}
		m.QueueAt, m.Status = nil, "delivered"
		return tx.UpdateMessage(m)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error { return tx.UpdateMessage(newMessage("a2", "m1", false, nil)) }); !errors.Is(err, ErrNotFound) {
		t.Errorf("update of a1's message through a2: %v, want ErrNotFound", err)
	}
	db.View(func(tx *Tx) error {
		ids, _ := due(tx, *minuteAt(9), 10)
		if want := "[a2/m2 a1/m5 a1/m1]"; fmt.Sprint(ids) != want {
			t.Errorf("after moves: %v, want %s", ids, want)
		}
		if m, _ := tx.Message("a1", "m3"); m.Status != "delivered" || m.QueueAt != nil {
			t.Errorf("m3 after update: %+v", m)
		}
		return nil
	})

	// A stale entry (its message moved on elsewhere) is dropped by key.
	if err := db.Update(func(tx *Tx) error { return tx.DropQueued(*minuteAt(2), "m2") }); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if ids, _ := due(tx, *minuteAt(9), 10); fmt.Sprint(ids) != "[a1/m5 a1/m1]" {
			t.Errorf("after drop: %v", ids)
		}
		return nil
	})
}

func TestMessageLeases(t *testing.T) {
	db := openTest(t)
	err := db.Update(func(tx *Tx) error {
		if err := tx.PutLease("a1", "m1"); err != nil {
			return err
		}
		return tx.PutLeaseFor("a2", "m2", "node-b/42")
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if got := tx.Leases(); len(got) != 2 || got[0] != [2]string{"a1", "m1"} || got[1] != [2]string{"a2", "m2"} {
			t.Errorf("leases %v", got)
		}
		if h, ok := tx.LeaseHolder("m1"); !ok || h != "" {
			t.Errorf("m1 held by %q, %v; want no holder named", h, ok)
		}
		if h, ok := tx.LeaseHolder("m2"); !ok || h != "node-b/42" {
			t.Errorf("m2 held by %q, %v", h, ok)
		}
		if _, ok := tx.LeaseHolder("m3"); ok {
			t.Error("m3 is under a lease")
		}
		return nil
	})
	if err := db.Update(func(tx *Tx) error { return tx.DeleteLease("m1") }); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if got := tx.Leases(); len(got) != 1 || got[0][1] != "m2" {
			t.Errorf("leases after delete %v", got)
		}
		return nil
	})
}

func TestMessagesListFiltersAndTotals(t *testing.T) {
	db := openTest(t)
	err := db.Update(func(tx *Tx) error {
		for _, m := range []Message{
			{ID: "01", Status: "delivered", CampaignID: "spring", Tags: []string{"news"}},
			{ID: "02", Status: "bounced", CampaignID: "spring"},
			{ID: "03", Status: "delivered", Tags: []string{"news", "vip"}, Recipients: []Recipient{{Email: "vip@dest.test"}}},
			{ID: "04", Status: "delivered", Test: true},
			{ID: "05", Status: "delivered"},
		} {
			m.AccountID, m.ExpiresAt = "a1", *minuteAt(600)
			if m.Recipients == nil {
				m.Recipients = []Recipient{{Email: "u@dest.test"}}
			}
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return tx.InsertMessage(Message{ID: "06", AccountID: "a2", Status: "delivered", ExpiresAt: *minuteAt(600)}, MessageContent{}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		for _, c := range []struct {
			name  string
			f     MessageFilter
			opts  ListOptions
			ids   string
			total int
		}{
			{"live, newest first", MessageFilter{}, ListOptions{Limit: 10, Reverse: true}, "[05 03 02 01]", 4},
			{"test mode", MessageFilter{Test: true}, ListOptions{Limit: 10}, "[04]", 1},
			{"status", MessageFilter{Status: "delivered"}, ListOptions{Limit: 10}, "[01 03 05]", 3},
			{"campaign", MessageFilter{CampaignID: "spring"}, ListOptions{Limit: 10}, "[01 02]", 2},
			{"tag", MessageFilter{Tag: "vip"}, ListOptions{Limit: 10}, "[03]", 1},
			{"recipient", MessageFilter{Recipient: "vip@dest.test"}, ListOptions{Limit: 10}, "[03]", 1},
			{"range", MessageFilter{Range: Range{Lower: []byte("02"), Upper: []byte("05")}}, ListOptions{Limit: 10}, "[02 03]", 2},
			{"page two of a filter", MessageFilter{Status: "delivered"}, ListOptions{Limit: 1, Offset: 1}, "[03]", 3},
		} {
			list, _, total, err := tx.Messages("a1", c.f, c.opts, true)
			var ids []string
			for _, m := range list {
				ids = append(ids, m.ID)
			}
			if err != nil || fmt.Sprint(ids) != c.ids || total != c.total {
				t.Errorf("%s: %v total %d, %v; want %s total %d", c.name, ids, total, err, c.ids, c.total)
			}
		}
		// Without a total, and a page that is not the last.
		list, res, total, err := tx.Messages("a1", MessageFilter{}, ListOptions{Limit: 2}, false)
		if err != nil || len(list) != 2 || !res.HasMore || string(res.Next) != "02" || total != 0 {
			t.Errorf("first page: %d, %+v, total %d, %v", len(list), res, total, err)
		}
		return nil
	})
}

func TestExpiredMessageTakesItsRecordsAlong(t *testing.T) {
	db := openTest(t)
	gone, kept := newMessage("a1", "m1", false, minuteAt(1)), newMessage("a1", "m10", false, minuteAt(1))
	gone.ExpiresAt, kept.ExpiresAt = *minuteAt(60), *minuteAt(120)
	err := db.Update(func(tx *Tx) error {
		for _, m := range []Message{gone, kept} {
			if err := tx.InsertMessage(m, MessageContent{Subject: "s"}, []byte("raw")); err != nil {
				return err
			}
			// m1's link keys are a prefix of m10's but for the separator.
			if err := tx.PutLinks(m.ID, []string{"https://one.test/", "https://two.test/"}); err != nil {
				return err
			}
			if err := tx.PutEngagement(m.ID, Engagement{Opens: 2}); err != nil {
				return err
			}
			if err := tx.PutLease(m.AccountID, m.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sweep := func(at time.Time) {
		t.Helper()
		if err := db.Update(func(tx *Tx) error { _, err := tx.SweepExpired(at, 100); return err }); err != nil {
			t.Fatal(err)
		}
	}
	sweep(*minuteAt(59))
	db.View(func(tx *Tx) error {
		if _, err := tx.Message("a1", "m1"); err != nil {
			t.Error("swept before its time:", err)
		}
		return nil
	})
	sweep(*minuteAt(60))
	db.View(func(tx *Tx) error {
		if _, err := tx.Message("a1", "m1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("message after expiry: %v", err)
		}
		if _, err := tx.MessageOwner("m1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("owner after expiry: %v", err)
		}
		for _, b := range [][]byte{bucketMessageContent, bucketMessageRaw, bucketEngagement, bucketMessageLeases} {
			if v := tx.bucket(b).Get([]byte("m1")); v != nil {
				t.Errorf("%s of m1 left behind", b)
			}
		}
		if v := tx.bucket(bucketMessageLinks).Get(linkKey("m1", 0)); v != nil {
			t.Error("links of m1 left behind")
		}
		if tx.QueueLength() != 1 || len(tx.Leases()) != 1 {
			t.Errorf("queue %d, leases %v; want m10's only", tx.QueueLength(), tx.Leases())
		}
		if _, _, total, _ := tx.Messages("a1", MessageFilter{}, ListOptions{Limit: 10}, true); total != 1 {
			t.Errorf("count after expiry %d, want 1", total)
		}
		// The neighbour keeps everything.
		if u, err := tx.Link("a1", "m10", 1); err != nil || u != "https://two.test/" {
			t.Errorf("m10's link: %q, %v", u, err)
		}
		if e, err := tx.Engagement("a1", "m10"); err != nil || e.Opens != 2 {
			t.Errorf("m10's engagement: %+v, %v", e, err)
		}
		if raw := tx.MessageRaw("a1", "m10"); string(raw) != "raw" {
			t.Errorf("m10's raw: %q", raw)
		}
		return nil
	})
}
