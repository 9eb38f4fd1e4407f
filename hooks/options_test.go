package hooks

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

func TestNewRefusesNonsense(t *testing.T) {
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := New(db, DefaultOptions()); err != nil {
		t.Fatalf("the defaults are refused: %v", err)
	}
	for _, c := range []struct {
		name string
		set  func(*Options)
		want string
	}{
		{"zero options", func(o *Options) { *o = Options{} }, "base delay must be positive"},
		{"zero base delay", func(o *Options) { o.BaseDelay = 0 }, "base delay must be positive, not 0s"},
		{"negative timeout", func(o *Options) { o.Timeout = -time.Second }, "timeout must be positive, not -1s"},
		{"zero poll", func(o *Options) { o.Poll = 0 }, "poll must be positive"},
		{"zero failed retention", func(o *Options) { o.FailedRetention = 0 }, "failed retention must be positive"},
		{"zero delivered retention", func(o *Options) { o.DeliveredRetention = 0 }, "delivered retention must be positive"},
		{"zero outbox lease margin", func(o *Options) { o.OutboxLeaseMargin = 0 }, "outbox lease margin must be positive, not 0s"},
		{"max below base", func(o *Options) { o.MaxDelay = time.Second }, "max delay 1s is below base delay 30s"},
		{"negative retries", func(o *Options) { o.MaxRetries = -1 }, "max retries must be 0 (none) or more, not -1"},
		{"no workers", func(o *Options) { o.Workers = 0 }, "workers (0) and per-host requests (8) must be at least 1"},
		{"no per-host requests", func(o *Options) { o.PerHost = 0 }, "per-host requests (0)"},
		{"invalid allowed range", func(o *Options) { o.Guard.Allow = []netip.Prefix{{}} }, "invalid address range"},
		{"no clock", func(o *Options) { o.Now = nil }, "Now, Lookup and Logger are required"},
		{"no logger", func(o *Options) { o.Logger = nil }, "Now, Lookup and Logger are required"},
		{"no resolver", func(o *Options) { o.Lookup = nil }, "Now, Lookup and Logger are required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions()
			c.set(&o)
			d, err := New(db, o)
			if d != nil || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, %v; want an error saying %q", d, err, c.want)
			}
		})
	}
}

// MaxRetries 0 means no retries: a retryable failure fails the delivery at
// once, and so does a claimed request whose answer was never saved.
func TestZeroRetriesMeansNone(t *testing.T) {
	h := newHarness(t, testOptions(func(o *Options) { o.MaxRetries = 0 }))
	if got := h.d.Options().MaxRetries; got != 0 {
		t.Fatalf("MaxRetries 0 became %d", got)
	}
	rec := newReceiver(t, status(503))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	h.step()
	if d := h.delivery(w, ev); d.Status != storage.DeliveryFailed || len(d.Attempts) != 1 || d.Retries != 0 {
		t.Fatalf("a 503 with no retries allowed: %s after %d attempts", d.Status, len(d.Attempts))
	}

	// A queued delivery is claimed, then the process dies before any answer is saved.
	ev2 := h.event("message.sent")
	if err := h.d.fanOut(); err != nil {
		t.Fatal(err)
	}
	if jobs, err := h.d.claim(10, map[string]int{}); err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	h.restart()
	h.clock.Add(h.opts.Timeout + 31*time.Second)
	if n := h.step(); n != 0 {
		t.Fatalf("re-sent %d with no retries allowed", n)
	}
	d := h.delivery(w, ev2)
	if d.Status != storage.DeliveryFailed || len(d.Attempts) != 1 || rec.count() != 1 {
		t.Fatalf("an interrupted request with no retries allowed: %s, %d attempts, %d requests", d.Status, len(d.Attempts), rec.count())
	}

	// Replayed (as app.ReplayDelivery does), it is sent: the interrupted
	// attempt was settled when it failed, and costs the replay nothing.
	now := h.clock.Now()
	d.Status, d.Retries, d.FailedAt, d.ExpiresAt, d.NextAttemptAt = storage.DeliveryPending, 0, nil, time.Time{}, &now
	if err := h.db.Update(func(tx *storage.Tx) error { return tx.UpdateDelivery(d) }); err != nil {
		t.Fatal(err)
	}
	if n := h.step(); n != 1 || rec.count() != 2 {
		t.Fatalf("the replay sent %d requests", n)
	}
}
