package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestEventsOutboxOrderAndRetention(t *testing.T) {
	db := openTest(t)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	// Only accounts with webhooks have their events fanned out.
	db.Update(func(tx *Tx) error { return tx.PutWebhook(Webhook{ID: "w1", AccountID: "a"}) })
	quiet := Event{ID: "q0", AccountID: "b", Type: "message.sent", Timestamp: now, Envelope: []byte(`{}`), ExpiresAt: now}
	if err := db.Update(func(tx *Tx) error { return tx.AppendEvent(quiet) }); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		ev := Event{ID: fmt.Sprintf("e%d", i), AccountID: "a", Type: "message.sent", Timestamp: now,
			Envelope: []byte(fmt.Sprintf(`{"id":"e%d"}`, i)), ExpiresAt: now.Add(time.Duration(i) * time.Hour)}
		if err := db.Update(func(tx *Tx) error { return tx.AppendEvent(ev) }); err != nil {
			t.Fatal(err)
		}
	}
	db.View(func(tx *Tx) error {
		out, _ := tx.Outbox(10)
		if len(out) != 5 {
			t.Errorf("%d outbox entries, want 5 (none for an account without webhooks)", len(out))
		}
		for i, e := range out {
			if e.Event.ID != fmt.Sprintf("e%d", i) || e.Event.Envelope != nil {
				t.Errorf("outbox[%d] = %s (envelope %q): not in commit order, or carrying the body", i, e.Event.ID, e.Event.Envelope)
			}
		}
		// A reader that holds the first entries seeks past them.
		after, _ := tx.OutboxAfter(out[1].Seq, 2)
		if len(after) != 2 || after[0].Event.ID != "e2" || after[1].Event.ID != "e3" {
			t.Errorf("OutboxAfter(%d, 2) = %+v, want e2 and e3", out[1].Seq, after)
		}
		if rest, _ := tx.OutboxAfter(out[4].Seq, 10); len(rest) != 0 {
			t.Errorf("OutboxAfter the last entry = %+v", rest)
		}
		if body, err := tx.EventEnvelope("a", "e3"); err != nil || string(body) != `{"id":"e3"}` {
			t.Errorf("envelope: %q %v", body, err)
		}
		return nil
	})
	// Sweep at +2h30: e0, e1, e2 are past their retention.
	db.Update(func(tx *Tx) error { _, err := tx.SweepExpired(now.Add(150*time.Minute), 100); return err })
	db.View(func(tx *Tx) error {
		for i := range 5 {
			_, err := tx.Event("a", fmt.Sprintf("e%d", i))
			if gone := errors.Is(err, ErrNotFound); gone != (i < 3) {
				t.Errorf("e%d gone=%v", i, gone)
			}
		}
		if _, err := tx.EventEnvelope("a", "e0"); !errors.Is(err, ErrNotFound) {
			t.Error("envelope of a swept event kept")
		}
		if _, err := tx.Event("b", "q0"); !errors.Is(err, ErrNotFound) {
			t.Error("q0 outlived its retention")
		}
		if n := tx.count(collectionEvents, "a"); n != 2 {
			t.Errorf("event count %d, want 2", n)
		}
		// An outbox entry whose event expired yields an empty entry to discard.
		out, _ := tx.Outbox(10)
		if len(out) != 5 || out[0].Event.ID != "" || out[4].Event.ID != "e4" {
			t.Errorf("outbox after sweep: %+v", out)
		}
		return nil
	})
}
