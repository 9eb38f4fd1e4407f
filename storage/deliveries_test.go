package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestInsertDeliveriesKeepsCountsAndIndexes(t *testing.T) {
	db := openTest(t)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	var ds []Delivery
	for i, st := range []string{DeliveryDelivered, DeliveryDelivered, DeliveryFailed, DeliveryPending} {
		d := Delivery{ID: fmt.Sprintf("d%d", i), WebhookID: "w1", AccountID: "a", EventID: fmt.Sprintf("e%d", i),
			Status: st, Attempts: []DeliveryAttempt{}, CreatedAt: now}
		if st == DeliveryPending {
			d.NextAttemptAt = &now
		} else {
			d.ExpiresAt = now.Add(time.Hour)
		}
		ds = append(ds, d)
	}
	ds = append(ds, Delivery{ID: "x", WebhookID: "w2", AccountID: "a", EventID: "e0", Status: DeliveryDelivered, Attempts: []DeliveryAttempt{}})
	if err := db.Update(func(tx *Tx) error {
		for _, w := range []string{"w1", "w2"} {
			if err := tx.PutWebhook(Webhook{ID: w, AccountID: "a"}); err != nil {
				return err
			}
		}
		return tx.InsertDeliveries(ds)
	}); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		for _, c := range []struct {
			webhook, status string
			want            int
		}{{"w1", "", 4}, {"w1", DeliveryDelivered, 2}, {"w1", DeliveryFailed, 1}, {"w1", DeliveryPending, 1}, {"w2", "", 1}, {"w2", DeliveryDelivered, 1}} {
			if n := tx.DeliveryCount("a", c.webhook, c.status); n != c.want {
				t.Errorf("count %s %q = %d, want %d", c.webhook, c.status, n, c.want)
			}
			list, _, err := tx.Deliveries("a", c.webhook, c.status, ListOptions{Limit: 10})
			if err != nil || len(list) != c.want {
				t.Errorf("list %s %q: %d, %v", c.webhook, c.status, len(list), err)
			}
		}
		if d, err := tx.DeliveryByEvent("a", "w1", "e2"); err != nil || d.ID != "d2" {
			t.Errorf("by event: %+v %v", d, err)
		}
		// Another account finds none of them.
		if _, err := tx.DeliveryByEvent("b", "w1", "e2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("by event of another account: %v, want ErrNotFound", err)
		}
		if _, _, err := tx.Deliveries("b", "w1", "", ListOptions{Limit: 10}); !errors.Is(err, ErrNotFound) {
			t.Errorf("list of another account: %v, want ErrNotFound", err)
		}
		if n := tx.DeliveryCount("b", "w1", ""); n != 0 {
			t.Errorf("count of another account: %d, want 0", n)
		}
		if q := tx.DeliveryQueue(now, 10, 10, nil); len(q) != 1 || q[0].ID != "d3" {
			t.Errorf("queue %+v", q)
		}
		return nil
	})
	// Swept after their retention, counts follow.
	db.Update(func(tx *Tx) error { _, err := tx.SweepExpired(now.Add(2*time.Hour), 100); return err })
	db.View(func(tx *Tx) error {
		if n, p := tx.DeliveryCount("a", "w1", ""), tx.DeliveryCount("a", "w1", DeliveryPending); n != 1 || p != 1 {
			t.Errorf("after sweep: %d in all, %d pending", n, p)
		}
		return nil
	})
}
