package hooks

// Tests of the fast path (fresh events sent straight from the outbox) at
// its edges: retries that fall due while other requests are out, the time
// a retry counts from, a webhook whose secret cannot be read, and two
// dispatchers over one store.

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// hangUntil answers only when release is closed or the client goes away.
func hangUntil(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}

// queueDelivery stores a pending delivery of eventID to w, due at due.
func queueDelivery(t *testing.T, db *storage.DB, w storage.Webhook, eventID string, due time.Time) {
	t.Helper()
	d := storage.Delivery{ID: uuid.Must(uuid.NewV7()).String(), WebhookID: w.ID, AccountID: w.AccountID,
		EventID: eventID, EventType: "message.sent", Status: storage.DeliveryPending,
		Attempts: []storage.DeliveryAttempt{}, NextAttemptAt: &due, CreatedAt: due}
	if err := db.Update(func(tx *storage.Tx) error { return tx.InsertDelivery(d) }); err != nil {
		t.Fatal(err)
	}
}

// A claim that returns fewer jobs than there were free workers (fewer are
// due) must not make the next retry wait for an answer: a retry to a
// healthy receiver that falls due while a stalled one holds its request
// goes out when due.
func TestRetryDueSoonIsNotHeldBehindSlowReceiver(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll()
	slow := newReceiver(t, hangUntil(release))
	fast := newReceiver(t, status(200))
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := mustNew(t, db, testOptions(func(o *Options) { o.Timeout = 20 * time.Second }))
	h := &harness{t: t, db: db, d: d, clock: &fakeClock{t: time.Now()}}
	// Events before webhooks: no outbox entries, only the queued retries below.
	e1, e2 := h.event("message.sent"), h.event("message.sent")
	wSlow, wFast := h.webhook(slow.URL, "message.sent"), h.webhook(fast.URL, "message.sent")
	now := time.Now().UTC()
	queueDelivery(t, db, wSlow, e1.ID, now)
	queueDelivery(t, db, wFast, e2.ID, now.Add(300*time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	defer func() { releaseAll(); cancel(); <-done }()

	deadline := time.Now().Add(3 * time.Second)
	for fast.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a retry due 300 ms after start was not sent within 3 s (slow receiver saw %d, still stalled): "+
				"it waits for the slow receiver's answer", slow.count())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The same with nothing in flight: a claim that only drops a delivery (its
// event expired from the history) must not leave a retry due 300 ms later
// to the one-minute poll.
func TestRetryDueSoonAfterEmptyClaim(t *testing.T) {
	fast := newReceiver(t, status(200))
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := mustNew(t, db, testOptions())
	h := &harness{t: t, db: db, d: d, clock: &fakeClock{t: time.Now()}}
	e2 := h.event("message.sent")
	w := h.webhook(fast.URL, "message.sent")
	now := time.Now().UTC()
	queueDelivery(t, db, w, "no-such-event", now) // claim marks it failed: 0 jobs
	queueDelivery(t, db, w, e2.ID, now.Add(300*time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(3 * time.Second)
	for fast.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a retry due 300 ms after start was not sent within 3 s (waits for the 1-minute poll)")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A fresh event's backoff counts from each attempt's own end: with one
// slow webhook on the event, the other's 500 is retried 30 s after its own
// attempt, not after the slow one's.
func TestFreshRetryDelayCountsFromTheAttempt(t *testing.T) {
	h := newHarness(t, testOptions(func(o *Options) { o.Timeout = time.Minute }))
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll()
	slow := newReceiver(t, hangUntil(release))
	down := newReceiver(t, status(500))
	h.webhook(slow.URL, "message.sent")
	wDown := h.webhook(down.URL, "message.sent")
	ev := h.event("message.sent")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.d.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for slow.count() == 0 || down.count() == 0 {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("requests never went out")
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the 500 is back and settled
	h.clock.Add(20 * time.Second)     // the slow receiver takes 20 s
	releaseAll()
	for h.statusOf(wDown, ev) == "" {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("never saved")
		}
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	<-done
	d := h.delivery(wDown, ev)
	if len(d.Attempts) != 1 || d.NextAttemptAt == nil {
		t.Fatalf("delivery %+v", d)
	}
	if gap := d.NextAttemptAt.Sub(d.Attempts[0].At); gap != 30*time.Second {
		t.Errorf("first retry is %v after the attempt, want 30s (spec §6 base delay)", gap)
	}
}

// An event with a webhook whose signing secret cannot be read goes to the
// queue path whole (which fails that delivery and says why): no request
// goes out that the dispatcher does not track, and Run does not panic.
func TestUnreadableSecretDoesNotLaunchUntrackedJobs(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(200))
	good := h.webhook(rec.URL, "message.sent") // listed first (UUIDv7 key order)
	bad := storage.Webhook{ID: uuid.Must(uuid.NewV7()).String(), AccountID: "acct", URL: rec.URL + "/bad",
		Events: []string{"message.sent"}, Secret: "not base64!", CreatedAt: h.clock.Now()}
	if err := h.db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(bad) }); err != nil {
		t.Fatal(err)
	}
	ev := h.event("message.sent")

	jobs, events, _, _, err := h.d.take(storage.AllOutboxShards, &outboxCursor{}, 10, map[string]int{})
	tracked := map[uint64]bool{}
	for _, ev := range events {
		tracked[ev.seq] = true
	}
	for _, j := range jobs {
		if !tracked[j.seq] {
			t.Errorf("take returned a job (to %s) for outbox entry %d with no freshEvent (err %v)", j.url, j.seq, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var p any
	func() {
		defer func() { p = recover() }()
		h.d.Run(ctx)
	}()
	if p != nil {
		t.Fatalf("Run panicked: %v (webhook %s saw %d requests)", p, good.ID, rec.count())
	}
	// The queue path delivered to the good webhook and failed the other.
	if st := h.statusOf(good, ev); st != storage.DeliveryDelivered {
		t.Errorf("good webhook: %s, want delivered", st)
	}
	d := h.delivery(bad, ev)
	if d.Status != storage.DeliveryFailed || len(d.Attempts) != 1 || !strings.Contains(d.Attempts[0].Error, "signing secret") {
		t.Errorf("webhook with the unreadable secret: %+v, want failed saying why", d)
	}
}

// Sending from the outbox is leased through storage: with two dispatchers
// over one store (several nodes, or a Run restarted while an old write is
// still running) an event goes out once and is saved once.
func TestTwoDispatchersSendAnEventOnce(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(200))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	d2 := mustNew(t, h.db, h.opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- h.d.Run(ctx) }()
	go func() { done <- d2.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for h.outboxLen() != 0 || h.statusOf(w, ev) != storage.DeliveryDelivered {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done
	<-done
	var total int
	h.db.View(func(tx *storage.Tx) error { total = tx.DeliveryCount(w.AccountID, w.ID, ""); return nil })
	if rec.count() != 1 || total != 1 {
		t.Errorf("receiver saw %d requests, %d deliveries saved, want 1 and 1", rec.count(), total)
	}
}

// First-attempt outcomes through Run's fast path (the table test of the
// state machine drives the queue path).
func TestFreshPathOutcomes(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		guard   *Guard
		want    string
		wait    time.Duration
	}{
		{name: "301", handler: status(301, "Location", "http://example.invalid/"), want: storage.DeliveryFailed},
		{name: "429 Retry-After", handler: status(429, "Retry-After", "120"), want: storage.DeliveryPending, wait: 2 * time.Minute},
		{name: "503 no Retry-After", handler: status(503), want: storage.DeliveryPending, wait: 30 * time.Second},
		{name: "stall", handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, want: storage.DeliveryPending, wait: 30 * time.Second},
		{name: "ssrf refused", handler: status(200), guard: &Guard{Allow: []netip.Prefix{}}, want: storage.DeliveryFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions(func(o *Options) { o.Timeout = 300 * time.Millisecond })
			if c.guard != nil {
				opts.Guard = *c.guard
			}
			h := newHarness(t, opts)
			rec := newReceiver(t, c.handler)
			w := h.webhook(rec.URL, "message.sent")
			ev := h.event("message.sent")
			h.runUntil("saved", func() bool { return h.statusOf(w, ev) != "" })
			d := h.delivery(w, ev)
			if d.Status != c.want || len(d.Attempts) != 1 {
				t.Fatalf("%s %+v", d.Status, d.Attempts)
			}
			if c.want == storage.DeliveryPending && d.NextAttemptAt.Sub(h.clock.Now()) != c.wait {
				t.Errorf("next in %v, want %v", d.NextAttemptAt.Sub(h.clock.Now()), c.wait)
			}
			if c.guard != nil && (rec.count() != 0 || !strings.Contains(d.Attempts[0].Error, "not allowed")) {
				t.Errorf("guard: %d requests, %q", rec.count(), d.Attempts[0].Error)
			}
		})
	}
}

// refusedURL is a loopback address nothing listens on: connecting is
// refused at once.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// An event to three webhooks, one of which never answers: the others'
// answers (a 500, a refused connection) are saved as soon as they are
// back, not when the slow one ends, so they are in the delivery log at
// once and their retries go out after the base delay, while the slow
// request is still out. The slow one is saved meanwhile as in flight, and
// its answer, when it comes, replaces that attempt. The event leaves the
// outbox once, and each webhook has one delivery.
func TestSlowSiblingDoesNotHoldUpTheOthers(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll()
	slow := newReceiver(t, hangUntil(release))
	down := newReceiver(t, status(500))
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := mustNew(t, db, testOptions(func(o *Options) { o.Timeout, o.BaseDelay = time.Minute, 300*time.Millisecond }))
	h := &harness{t: t, db: db, d: d, clock: &fakeClock{t: time.Now()}}
	wSlow, wDown, wRefused := h.webhook(slow.URL, "message.sent"), h.webhook(down.URL, "message.sent"), h.webhook(refusedURL(t), "message.sent")
	ev := h.event("message.sent")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	defer func() { releaseAll(); cancel(); <-done }()

	waitFor := func(what string, within time.Duration, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(within); !ok(); time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not within %v (the slow receiver still holds its request): %s", within, what)
			}
		}
	}
	waitFor("the 500 and the refused connection saved", time.Second, func() bool {
		return h.statusOf(wDown, ev) != "" && h.statusOf(wRefused, ev) != ""
	})
	for _, w := range []storage.Webhook{wDown, wRefused} {
		del := h.delivery(w, ev)
		if del.Status != storage.DeliveryPending || del.Retries != 1 || len(del.Attempts) < 1 || del.Attempts[0].Unanswered {
			t.Errorf("%s: %+v", w.URL, del)
		}
	}
	if del := h.delivery(wSlow, ev); del.Status != storage.DeliveryPending || !InFlight(del, time.Now()) || len(del.Attempts) != 1 {
		t.Errorf("the slow request, still out: %+v, want pending and in flight", del)
	}
	if n := h.outboxLen(); n != 0 {
		t.Errorf("the outbox holds %d entries after the first answers were saved", n)
	}
	// The retries follow the base delay, not the slow receiver.
	waitFor("the 500 retried", 2*time.Second, func() bool { return down.count() >= 2 })
	waitFor("the refused connection retried", 2*time.Second, func() bool { return len(h.delivery(wRefused, ev).Attempts) >= 2 })
	if slow.count() != 1 {
		t.Fatalf("the slow receiver got %d requests", slow.count())
	}

	releaseAll()
	waitFor("the slow answer saved", 5*time.Second, func() bool { return h.statusOf(wSlow, ev) == storage.DeliveryDelivered })
	if del := h.delivery(wSlow, ev); len(del.Attempts) != 1 || del.Attempts[0].StatusCode != 200 || del.Attempts[0].Unanswered || del.Retries != 0 {
		t.Errorf("the slow delivery: %+v, want its one attempt answered 200", del)
	}
	h.db.View(func(tx *storage.Tx) error {
		for _, w := range []storage.Webhook{wSlow, wDown, wRefused} {
			if n := tx.DeliveryCount(w.AccountID, w.ID, ""); n != 1 {
				t.Errorf("%s: %d deliveries, want 1", w.URL, n)
			}
		}
		return nil
	})
}

// A crash after a fresh event's first answers are saved, with a request
// still out: the event is not sent again as new (it left the outbox); the
// request still out was saved as claimed, so once its lease has passed it
// counts as interrupted and is retried, as a retry cut off by a crash is.
// The answered webhook gets nothing more.
func TestCrashAfterSplitRetriesOnlyTheRequestOut(t *testing.T) {
	h := newHarness(t, testOptions(func(o *Options) { o.Timeout = time.Minute }))
	release := make(chan struct{})
	slow := newReceiver(t, hangUntil(release))
	defer close(release)
	ok := newReceiver(t, status(204))
	wSlow, wOK := h.webhook(slow.URL, "message.sent"), h.webhook(ok.URL, "message.sent")
	ev := h.event("message.sent")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.d.Run(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); h.statusOf(wSlow, ev) == ""; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatal("the first answer was not saved while the slow request was out")
		}
	}
	// Crash: the database goes first, so nothing more is saved.
	h.db.Close()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Run saved its last answers on a closed database")
	}
	h.open()
	if h.outboxLen() != 0 || h.statusOf(wOK, ev) != storage.DeliveryDelivered {
		t.Fatalf("after the crash: %d in the outbox, the 204 delivery is %q", h.outboxLen(), h.statusOf(wOK, ev))
	}
	if d := h.delivery(wSlow, ev); !InFlight(d, h.clock.Now()) {
		t.Fatalf("the request out at the crash: %+v, want in flight until its lease ends", d)
	}
	h.clock.Add(time.Minute + 30*time.Second) // the lease: the deadline plus 30 s
	h.runUntil("the interrupted request retried", func() bool { return slow.count() == 2 && len(h.delivery(wSlow, ev).Attempts) == 2 })
	d := h.delivery(wSlow, ev)
	if d.Attempts[0].Error != interrupted || d.Attempts[0].Unanswered || d.Retries != 1 {
		t.Errorf("after the lease: %+v, want the first attempt interrupted and one retry", d)
	}
	if ok.count() != 1 {
		t.Errorf("the webhook that answered got the event %d times", ok.count())
	}
}

// Cut off at shutdown after a split, a request still out is put back as a
// fresh event's is: a pending delivery with no attempt, due at once.
func TestShutdownAfterSplitPutsTheRequestOutBack(t *testing.T) {
	h := newHarness(t, testOptions(func(o *Options) { o.Timeout, o.ShutdownGrace = time.Minute, 0 }))
	release := make(chan struct{})
	slow := newReceiver(t, hangUntil(release))
	defer close(release)
	down := newReceiver(t, status(503))
	wSlow, wDown := h.webhook(slow.URL, "message.sent"), h.webhook(down.URL, "message.sent")
	ev := h.event("message.sent")
	h.runUntil("split", func() bool { return h.statusOf(wSlow, ev) != "" && h.statusOf(wDown, ev) != "" })
	d := h.delivery(wSlow, ev)
	if d.Status != storage.DeliveryPending || len(d.Attempts) != 0 || d.Retries != 0 || !d.NextAttemptAt.Equal(h.clock.Now()) {
		t.Fatalf("after shutdown: %+v", d)
	}
	if d := h.delivery(wDown, ev); len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 503 {
		t.Fatalf("the 503: %+v", d)
	}
}
