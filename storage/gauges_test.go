package storage

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// The gauges follow the writes that commit, ignore those that roll back,
// and are counted again the same at the next open.
func TestGaugesFollowCommitsAndSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	var commits []time.Duration
	opts := DefaultOptions()
	opts.CommitObserver = func(d time.Duration) { commits = append(commits, d) }
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	msg := func(id, status string, at *time.Time, test bool) Message {
		return Message{ID: id, AccountID: "a", Status: status, Test: test, QueueAt: at, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	must := func(fn func(tx *Tx) error) {
		t.Helper()
		if err := db.Update(fn); err != nil {
			t.Fatal(err)
		}
	}
	must(func(tx *Tx) error {
		if err := tx.PutWebhook(Webhook{ID: "w1", AccountID: "a"}); err != nil {
			return err
		}
		for _, m := range []Message{msg("m1", "queued", &now, false), msg("m2", "queued", &now, false),
			msg("m3", "scheduled", &later, true), msg("m4", "suppressed", nil, false)} {
			if err := tx.InsertMessage(m, MessageContent{}, nil); err != nil {
				return err
			}
		}
		return tx.AppendEvent(Event{ID: "e1", AccountID: "a", Type: "message.sent", Timestamp: now, Envelope: []byte(`{}`), ExpiresAt: later})
	})
	// m1 is claimed (sending), then delivered (out of the queue).
	move := func(id, status string, at *time.Time) {
		t.Helper()
		must(func(tx *Tx) error {
			m, err := tx.Message("a", id)
			if err != nil {
				return err
			}
			m.Status, m.QueueAt = status, at
			return tx.UpdateMessage(m)
		})
	}
	move("m1", "sending", &later)
	move("m2", "deferred", &later)
	move("m1", "delivered", nil)
	// A write that fails changes nothing.
	boom := errors.New("boom")
	if err := db.Update(func(tx *Tx) error {
		m, _ := tx.Message("a", "m2")
		m.Status, m.QueueAt = "sending", &later
		if err := tx.UpdateMessage(m); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	must(func(tx *Tx) error {
		return tx.InsertDeliveries([]Delivery{{ID: "d1", WebhookID: "w1", AccountID: "a", EventID: "e1",
			Status: DeliveryPending, NextAttemptAt: &later, Attempts: []DeliveryAttempt{}}})
	})
	want := Gauges{Queued: map[string]int64{"queued": 0, "scheduled": 1, "deferred": 1, "sending": 0}, Outbox: 1, PendingDeliveries: 1}
	clean := func(g Gauges) Gauges {
		for s, n := range g.Queued {
			if n == 0 {
				delete(g.Queued, s)
			}
		}
		return g
	}
	if got := clean(db.Gauges()); !reflect.DeepEqual(got, clean(want)) {
		t.Errorf("gauges = %+v, want %+v", got, want)
	}
	if live, test := db.MessagesInserted(false), db.MessagesInserted(true); live != 3 || test != 1 {
		t.Errorf("inserted live %d test %d, want 3 and 1", live, test)
	}
	if at, ok := db.QueueHead(); !ok || !at.Equal(later) {
		t.Errorf("queue head = %v %v, want %v", at, ok, later)
	}
	if len(commits) != 5 {
		t.Errorf("commit observer saw %d commits, want 5 (the failed one is not a commit)", len(commits))
	}
	db.Close()

	db, err = Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := clean(db.Gauges()); !reflect.DeepEqual(got, clean(want)) {
		t.Errorf("gauges after reopen = %+v, want %+v", got, want)
	}
	// Fan-out done, the delivery settled, m2 and m3 expired by the sweeper.
	must(func(tx *Tx) error {
		out, _ := tx.Outbox(10)
		if err := tx.DoneOutbox(out[0].Seq); err != nil {
			return err
		}
		if err := tx.DoneOutbox(out[0].Seq); err != nil { // twice: counted once
			return err
		}
		d, _ := tx.DeliveryByID("d1")
		d.Status, d.NextAttemptAt, d.ExpiresAt = DeliveryDelivered, nil, later
		if err := tx.UpdateDelivery(d); err != nil {
			return err
		}
		_, err := tx.SweepExpired(now.Add(2*time.Hour), 100)
		return err
	})
	want = Gauges{Queued: map[string]int64{}}
	if got := clean(db.Gauges()); !reflect.DeepEqual(got, want) {
		t.Errorf("gauges after fan-out, delivery and sweep = %+v, want %+v", got, want)
	}
}
