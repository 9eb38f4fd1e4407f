package hooks

import (
	"context"
	"testing"
	"time"

	"mailbolt/storage"
)

func TestInFlight(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Second), now.Add(-time.Second)
	out := storage.DeliveryAttempt{At: earlier, Error: interrupted, Unanswered: true}
	answered := storage.DeliveryAttempt{At: earlier, StatusCode: 500}
	for _, c := range []struct {
		name string
		d    storage.Delivery
		want bool
	}{
		{"claimed, lease running", storage.Delivery{Status: storage.DeliveryPending, NextAttemptAt: &later, Attempts: []storage.DeliveryAttempt{answered, out}}, true},
		{"claimed, lease over: interrupted", storage.Delivery{Status: storage.DeliveryPending, NextAttemptAt: &earlier, Attempts: []storage.DeliveryAttempt{out}}, false},
		{"lease ends now", storage.Delivery{Status: storage.DeliveryPending, NextAttemptAt: &now, Attempts: []storage.DeliveryAttempt{out}}, false},
		{"answered, retry due later", storage.Delivery{Status: storage.DeliveryPending, NextAttemptAt: &later, Attempts: []storage.DeliveryAttempt{answered}}, false},
		{"same error text, not marked (a recorded failure)", storage.Delivery{Status: storage.DeliveryPending, NextAttemptAt: &later,
			Attempts: []storage.DeliveryAttempt{{At: earlier, Error: interrupted}}}, false},
		{"no attempts yet", storage.Delivery{Status: storage.DeliveryPending, NextAttemptAt: &later, Attempts: []storage.DeliveryAttempt{}}, false},
		{"failed", storage.Delivery{Status: storage.DeliveryFailed, NextAttemptAt: &later, Attempts: []storage.DeliveryAttempt{out}}, false},
		{"no lease", storage.Delivery{Status: storage.DeliveryPending, Attempts: []storage.DeliveryAttempt{out}}, false},
	} {
		if got := InFlight(c.d, now); got != c.want {
			t.Errorf("%s: InFlight %v, want %v", c.name, got, c.want)
		}
	}
}

// A claim saves its attempt Unanswered: in flight while the lease runs;
// the answer replaces it; and an attempt whose lease ran out is counted as
// a failure and keeps no mark.
func TestClaimMarksItsAttemptInFlight(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(500))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	h.step() // the first attempt: 500, retry in 30 s
	h.clock.Add(30 * time.Second)

	jobs, err := h.d.claim(10, map[string]int{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	d := h.delivery(w, ev)
	if !InFlight(d, h.clock.Now()) || !d.Attempts[1].Unanswered {
		t.Fatalf("a claimed delivery is not in flight: %+v", d)
	}
	if err := h.d.record([]result{send(context.Background(), h.d.client, jobs[0], h.clock.Now)}); err != nil {
		t.Fatal(err)
	}
	d = h.delivery(w, ev)
	if InFlight(d, h.clock.Now()) || d.Attempts[1].Unanswered || d.Attempts[1].StatusCode != 500 {
		t.Fatalf("an answered attempt is still in flight: %+v", d.Attempts)
	}

	h.clock.Add(time.Minute)
	if jobs, _ := h.d.claim(10, map[string]int{}); len(jobs) != 1 {
		t.Fatal("second retry not claimed")
	}
	h.restart() // its answer is never recorded
	if d := h.delivery(w, ev); !InFlight(d, h.clock.Now()) {
		t.Fatalf("in flight after a restart, until the lease runs out: %+v", d)
	}
	h.clock.Add(h.opts.Timeout + 31*time.Second)
	if d := h.delivery(w, ev); InFlight(d, h.clock.Now()) {
		t.Fatal("still in flight after the lease")
	}
	if n := h.step(); n != 1 {
		t.Fatalf("retry after the lease: sent %d", n)
	}
	d = h.delivery(w, ev)
	if len(d.Attempts) != 4 || d.Attempts[2].Error != interrupted || d.Attempts[2].Unanswered || d.Retries != 3 {
		t.Fatalf("interrupted attempt not settled as a failure: retries %d, %+v", d.Retries, d.Attempts)
	}
}
