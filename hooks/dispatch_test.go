package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t      *testing.T
	dir    string
	dbOpts storage.Options
	db     *storage.DB
	d      *Dispatcher
	clock  *fakeClock
	opts   Options
}

const testSecret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

// testOptions are DefaultOptions for tests: loopback receivers allowed, a
// 2 s deadline and requests cut off as soon as Run ends, then whatever set
// changes.
func testOptions(set ...func(*Options)) Options {
	o := DefaultOptions()
	o.Guard = Guard{AllowPrivate: true, AllowHTTP: true}
	o.Timeout, o.ShutdownGrace = 2*time.Second, 0
	for _, f := range set {
		f(&o)
	}
	return o
}

func mustNew(t testing.TB, db *storage.DB, opts Options) *Dispatcher {
	t.Helper()
	d, err := New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newHarness runs a Dispatcher with opts on a fake clock.
func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: &fakeClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)},
		dbOpts: storagetest.Options(t)}
	opts.Now = h.clock.Now
	h.opts = opts
	h.open()
	return h
}

func (h *harness) open() {
	db, err := storage.Open(h.dir, h.dbOpts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.db = db
	h.d = mustNew(h.t, db, h.opts)
	h.t.Cleanup(func() { db.Close() })
}

// restart simulates a crash and a new process: the database is closed and
// opened again with a fresh Dispatcher, whatever was in flight is lost.
func (h *harness) restart() {
	h.db.Close()
	h.open()
}

func (h *harness) webhook(url string, events ...string) storage.Webhook {
	h.t.Helper()
	w := storage.Webhook{ID: uuid.Must(uuid.NewV7()).String(), AccountID: "acct", URL: url, Events: events,
		Secret: testSecret, CreatedAt: h.clock.Now()}
	if err := h.db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(w) }); err != nil {
		h.t.Fatal(err)
	}
	return w
}

func (h *harness) event(typ string) storage.Event {
	h.t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	body, _ := json.Marshal(map[string]any{"id": id, "event": typ, "timestamp": h.clock.Now().Format(time.RFC3339),
		"data": map[string]any{"messageId": "m-" + id[:8]}})
	ev := storage.Event{ID: id, AccountID: "acct", Type: typ, Timestamp: h.clock.Now(), Envelope: body,
		ExpiresAt: h.clock.Now().Add(30 * 24 * time.Hour)}
	if err := h.db.Update(func(tx *storage.Tx) error { return tx.AppendEvent(ev) }); err != nil {
		h.t.Fatal(err)
	}
	return ev
}

// step runs one synchronous pass: fan-out, claim what is due, send, record.
func (h *harness) step() int {
	h.t.Helper()
	if err := h.d.fanOut(); err != nil {
		h.t.Fatal(err)
	}
	jobs, err := h.d.claim(100, map[string]int{})
	if err != nil {
		h.t.Fatal(err)
	}
	var results []result
	for _, j := range jobs {
		results = append(results, send(context.Background(), h.d.client, j, h.clock.Now))
	}
	if err := h.d.record(results); err != nil {
		h.t.Fatal(err)
	}
	return len(jobs)
}

// statusOf is a delivery's status, "" while it does not exist yet.
func (h *harness) statusOf(w storage.Webhook, ev storage.Event) string {
	var st string
	h.db.View(func(tx *storage.Tx) error {
		if d, err := tx.DeliveryByEvent(w.AccountID, w.ID, ev.ID); err == nil {
			st = d.Status
		}
		return nil
	})
	return st
}

func (h *harness) delivery(w storage.Webhook, ev storage.Event) storage.Delivery {
	h.t.Helper()
	var d storage.Delivery
	err := h.db.View(func(tx *storage.Tx) error {
		var err error
		d, err = tx.DeliveryByEvent(w.AccountID, w.ID, ev.ID)
		return err
	})
	if err != nil {
		h.t.Fatalf("no delivery: %v", err)
	}
	return d
}

// receiver is an httptest server answering with the handler, recording
// every request.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	body [][]byte
}

func newReceiver(t *testing.T, handler http.HandlerFunc) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.body = append(r.body, b)
		r.mu.Unlock()
		handler(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.reqs) }

func status(code int, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "answer %d", code)
	}
}

func TestFirstAttemptOutcomes(t *testing.T) {
	elsewhere := newReceiver(t, status(200))
	cases := []struct {
		name      string
		handler   http.HandlerFunc
		url       string // instead of a receiver
		want      string
		wait      time.Duration // until the next attempt, for retries
		code      int
		errSubstr string
	}{
		{name: "200", handler: status(200), want: storage.DeliveryDelivered, code: 200},
		{name: "204", handler: status(204), want: storage.DeliveryDelivered, code: 204},
		{name: "301 is not followed", handler: status(301, "Location", elsewhere.URL), want: storage.DeliveryFailed, code: 301},
		{name: "400", handler: status(400), want: storage.DeliveryFailed, code: 400},
		{name: "401", handler: status(401), want: storage.DeliveryFailed, code: 401},
		{name: "410", handler: status(410), want: storage.DeliveryFailed, code: 410},
		{name: "408", handler: status(408), want: storage.DeliveryPending, wait: 30 * time.Second, code: 408},
		{name: "429 without Retry-After", handler: status(429), want: storage.DeliveryPending, wait: 30 * time.Second, code: 429},
		{name: "429 with Retry-After", handler: status(429, "Retry-After", "120"), want: storage.DeliveryPending, wait: 2 * time.Minute, code: 429},
		{name: "500", handler: status(500), want: storage.DeliveryPending, wait: 30 * time.Second, code: 500},
		{name: "503 with a long Retry-After is capped", handler: status(503, "Retry-After", "7200"), want: storage.DeliveryPending, wait: time.Hour, code: 503},
		{name: "429 with a negative Retry-After backs off", handler: status(429, "Retry-After", "-5"), want: storage.DeliveryPending, wait: 30 * time.Second, code: 429},
		{name: "503 with a Retry-After past any duration is capped", handler: status(503, "Retry-After", "9300000000"), want: storage.DeliveryPending, wait: time.Hour, code: 503},
		{name: "503 with a Retry-After past uint64 seconds is capped", handler: status(503, "Retry-After", "18446744074"), want: storage.DeliveryPending, wait: time.Hour, code: 503},
		{name: "stall past the deadline", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, want: storage.DeliveryPending, wait: 30 * time.Second, errSubstr: "timeout"},
		{name: "connection reset", handler: func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}, want: storage.DeliveryPending, wait: 30 * time.Second, errSubstr: "reset"},
		{name: "connection refused", url: "http://127.0.0.1:1/hook", want: storage.DeliveryPending, wait: 30 * time.Second, errSubstr: "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, testOptions(func(o *Options) { o.Timeout = 300 * time.Millisecond }))
			url := c.url
			if url == "" {
				url = newReceiver(t, c.handler).URL + "/hook"
			}
			w := h.webhook(url, "message.delivered")
			ev := h.event("message.delivered")
			if n := h.step(); n != 1 {
				t.Fatalf("sent %d", n)
			}
			d := h.delivery(w, ev)
			if d.Status != c.want || len(d.Attempts) != 1 {
				t.Fatalf("status %s with %d attempts: %+v", d.Status, len(d.Attempts), d.Attempts)
			}
			a := d.Attempts[0]
			if a.StatusCode != c.code || (c.errSubstr != "" && !strings.Contains(a.Error, c.errSubstr)) {
				t.Errorf("attempt %+v", a)
			}
			if c.code != 0 && c.code != 204 && !strings.HasPrefix(a.Response, fmt.Sprintf("answer %d", c.code)) {
				t.Errorf("response snippet %q", a.Response)
			}
			if c.want == storage.DeliveryPending {
				if got := d.NextAttemptAt.Sub(h.clock.Now()); got != c.wait {
					t.Errorf("next attempt in %v, want %v", got, c.wait)
				}
			} else if d.NextAttemptAt != nil {
				t.Errorf("a finished delivery is still queued")
			}
			if c.want == storage.DeliveryFailed && (d.FailedAt == nil || !d.ExpiresAt.Equal(h.clock.Now().Add(7*24*time.Hour))) {
				t.Errorf("failed delivery retention: %v %v", d.FailedAt, d.ExpiresAt)
			}
		})
	}
	if elsewhere.count() != 0 {
		t.Error("a redirect was followed")
	}
}

// The dispatcher reads one clock, the injected one: an attempt's time, its
// signature's timestamp, its latency and the retry it leads to all come
// from it, not from the wall clock.
func TestAttemptTimesComeFromTheInjectedClock(t *testing.T) {
	h := newHarness(t, testOptions())
	start := h.clock.Now()
	rec := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		h.clock.Add(1500 * time.Millisecond) // the receiver takes 1.5 s
		w.WriteHeader(http.StatusInternalServerError)
	})
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	h.runUntil("saved", func() bool { return h.statusOf(w, ev) != "" })
	d := h.delivery(w, ev)
	if len(d.Attempts) != 1 || !d.Attempts[0].At.Equal(start) || d.Attempts[0].LatencyMS != 1500 {
		t.Errorf("attempt %+v, want at %v with 1500 ms latency", d.Attempts, start)
	}
	if want := start.Add(1500*time.Millisecond + 30*time.Second); d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(want) {
		t.Errorf("next attempt %v, want %v (30 s after the attempt ended)", d.NextAttemptAt, want)
	}
	if got, want := rec.reqs[0].Header.Get(HeaderTimestamp), fmt.Sprint(start.Unix()); got != want {
		t.Errorf("signed at %s, want %s", got, want)
	}
}

func TestRetriesThenFail(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(500))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	h.step()
	for i, wait := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute} {
		d := h.delivery(w, ev)
		if d.Status != storage.DeliveryPending || d.NextAttemptAt.Sub(h.clock.Now()) != wait {
			t.Fatalf("after attempt %d: %s, next in %v, want %v", i+1, d.Status, d.NextAttemptAt.Sub(h.clock.Now()), wait)
		}
		h.clock.Add(wait - time.Second)
		if n := h.step(); n != 0 {
			t.Fatalf("retried %v early", time.Second)
		}
		h.clock.Add(time.Second)
		if n := h.step(); n != 1 {
			t.Fatalf("retry %d not sent", i+1)
		}
	}
	d := h.delivery(w, ev)
	if d.Status != storage.DeliveryFailed || len(d.Attempts) != 4 || rec.count() != 4 {
		t.Fatalf("after 3 retries: %s, %d attempts, %d requests", d.Status, len(d.Attempts), rec.count())
	}
	h.clock.Add(10 * time.Hour)
	if n := h.step(); n != 0 {
		t.Fatal("a failed delivery was sent again")
	}
	// Kept 7 days, then swept.
	h.clock.Add(7 * 24 * time.Hour)
	h.db.Update(func(tx *storage.Tx) error { _, err := tx.SweepExpired(h.clock.Now(), 100); return err })
	h.db.View(func(tx *storage.Tx) error {
		if _, err := tx.DeliveryByEvent(w.AccountID, w.ID, ev.ID); err == nil {
			t.Error("failed delivery kept past 7 days")
		}
		return nil
	})
}

func TestRequestIsSignedAndExact(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(200))
	w := h.webhook(rec.URL, "message.sent", "message.bounced")
	ev := h.event("message.bounced")
	h.event("message.opened") // not subscribed
	h.step()
	if rec.count() != 1 {
		t.Fatalf("%d requests", rec.count())
	}
	req, body := rec.reqs[0], rec.body[0]
	if string(body) != string(ev.Envelope) {
		t.Fatalf("body changed on the way:\n%s\n%s", body, ev.Envelope)
	}
	if req.Method != "POST" || req.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%s %s", req.Method, req.Header.Get("Content-Type"))
	}
	sig, ts := req.Header.Get(HeaderSignature), req.Header.Get(HeaderTimestamp)
	if !strings.HasPrefix(sig, "t="+ts+",v1=") || strings.Count(sig, "v1=") != 1 {
		t.Errorf("signature header %q, timestamp %q", sig, ts)
	}
	if err := Verify(body, sig, []string{w.Secret}, h.clock.Now(), 0); err != nil {
		t.Errorf("receiver cannot verify: %v", err)
	}
}

func TestRotationSignsWithBothSecrets(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(200))
	w := h.webhook(rec.URL, "message.sent")
	until := h.clock.Now().Add(24 * time.Hour)
	newSecret := "//79/Pv6+fj39vX08/Lx8O/u7ezr6uno5+bl5OPi4eA="
	w.PreviousSecret, w.PreviousUntil, w.Secret = w.Secret, &until, newSecret
	h.db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(w) })
	h.event("message.sent")
	h.step()
	sig := rec.reqs[0].Header.Get(HeaderSignature)
	if strings.Count(sig, "v1=") != 2 {
		t.Fatalf("header during rotation: %s", sig)
	}
	for _, s := range []string{testSecret, newSecret} {
		if err := Verify(rec.body[0], sig, []string{s}, h.clock.Now(), 0); err != nil {
			t.Errorf("secret %s...: %v", s[:6], err)
		}
	}
	// After the window only the new secret signs.
	h.clock.Add(24*time.Hour + time.Second)
	h.event("message.sent")
	h.step()
	sig = rec.reqs[1].Header.Get(HeaderSignature)
	if strings.Count(sig, "v1=") != 1 || Verify(rec.body[1], sig, []string{testSecret}, h.clock.Now(), 0) == nil {
		t.Fatalf("old secret still signs after the window: %s", sig)
	}
}

func TestSSRFGuardChecksTheDialledAddress(t *testing.T) {
	// A strict guard (no --dev): loopback receivers must not be reached,
	// even through a name that resolves to them.
	h := newHarness(t, testOptions(func(o *Options) { o.Guard = Guard{} }))
	rec := newReceiver(t, status(200))
	port := rec.Listener.Addr().(*net.TCPAddr).Port
	for _, url := range []string{rec.URL, fmt.Sprintf("http://localhost:%d/hook", port)} {
		w := h.webhook(url, "message.sent")
		ev := h.event("message.sent")
		h.step()
		d := h.delivery(w, ev)
		if len(d.Attempts) != 1 || !strings.Contains(d.Attempts[0].Error, "not allowed") {
			t.Errorf("%s: %+v", url, d.Attempts)
		}
		if d.Status != storage.DeliveryFailed {
			t.Errorf("%s: a refused address is retried (%s), though it cannot succeed", url, d.Status)
		}
	}
	if rec.count() != 0 {
		t.Fatalf("the guard let %d requests through", rec.count())
	}
}

func TestRestartMidRetriesLosesNothing(t *testing.T) {
	h := newHarness(t, testOptions())
	var answer sync.Mutex
	code := 500
	rec := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		answer.Lock()
		defer answer.Unlock()
		w.WriteHeader(code)
	})
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	h.step() // 500: retry in 30 s
	h.clock.Add(30 * time.Second)

	// Crash 1: claimed (saved with a lease) but the process died before sending.
	if jobs, _ := h.d.claim(10, map[string]int{}); len(jobs) != 1 {
		t.Fatal("nothing claimed")
	}
	h.restart()
	if n := h.step(); n != 0 {
		t.Fatal("a leased delivery was sent again before its lease ran out")
	}
	// Crash 2: sent and answered, but the process died before recording.
	h.clock.Add(h.opts.Timeout + 31*time.Second)
	jobs, _ := h.d.claim(10, map[string]int{})
	if len(jobs) != 1 {
		t.Fatal("lease did not expire")
	}
	send(context.Background(), h.d.client, jobs[0], h.clock.Now)
	h.restart()

	answer.Lock()
	code = 200
	answer.Unlock()
	h.clock.Add(h.opts.Timeout + 31*time.Second)
	if n := h.step(); n != 1 {
		t.Fatalf("after restart sent %d", n)
	}
	d := h.delivery(w, ev)
	if d.Status != storage.DeliveryDelivered {
		t.Fatalf("lost across restarts: %s %+v", d.Status, d.Attempts)
	}
	if len(d.Attempts) != 4 || d.Attempts[1].Error != interrupted || d.Attempts[2].Error != interrupted || d.Attempts[3].StatusCode != 200 ||
		d.Attempts[1].Unanswered || d.Attempts[2].Unanswered || d.Attempts[3].Unanswered {
		t.Errorf("attempts %+v", d.Attempts)
	}
	// 500, the unrecorded one, and the final 200: at least once, and no more
	// than the crashes explain.
	if rec.count() != 3 {
		t.Errorf("receiver saw %d requests, want 3", rec.count())
	}
	h.clock.Add(time.Hour)
	if n := h.step(); n != 0 {
		t.Error("delivered again")
	}
}

func TestDeletedWebhookStopsItsDeliveries(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(503))
	w := h.webhook(rec.URL, "message.sent")
	h.event("message.sent")
	h.step()
	if err := h.db.Update(func(tx *storage.Tx) error { return tx.DeleteWebhook("acct", w.ID) }); err != nil {
		t.Fatal(err)
	}
	h.clock.Add(time.Hour)
	if n := h.step(); n != 0 || rec.count() != 1 {
		t.Fatalf("sent %d after delete (receiver saw %d)", n, rec.count())
	}
}

// slowAndFast is a dispatcher over a fresh store, not running yet, with a
// receiver that holds every request until releaseAll and one that answers
// 200 at once.
func slowAndFast(t *testing.T, workers, perHost int) (h *harness, d *Dispatcher, slow, fast *receiver, releaseAll func()) {
	release := make(chan struct{})
	var once sync.Once
	releaseAll = func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseAll)
	slow = newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	fast = newReceiver(t, status(200))
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d = mustNew(t, db, testOptions(func(o *Options) { o.Workers, o.PerHost, o.Timeout = workers, perHost, time.Minute }))
	h = &harness{t: t, db: db, d: d, clock: &fakeClock{t: time.Now()}}
	return h, d, slow, fast, releaseAll
}

func TestSlowReceiverDoesNotHoldUpOthers(t *testing.T) {
	h, d, slow, fast, releaseAll := slowAndFast(t, 4, 2)
	slowHook := h.webhook(slow.URL, "message.sent")
	fastHook := h.webhook(fast.URL, "message.opened")
	var slowEvents []storage.Event
	for range 6 {
		slowEvents = append(slowEvents, h.event("message.sent"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	time.Sleep(20 * time.Millisecond)
	fastEvent := h.event("message.opened")
	d.Kick()
	deadline := time.Now().Add(10 * time.Second)
	for h.statusOf(fastHook, fastEvent) != storage.DeliveryDelivered {
		if time.Now().After(deadline) {
			t.Fatal("the fast receiver waited behind the slow one")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := slow.count(); n != 2 {
		t.Errorf("slow host had %d requests in flight, cap is 2", n)
	}
	releaseAll()
	for _, ev := range slowEvents {
		for h.statusOf(slowHook, ev) != storage.DeliveryDelivered {
			if time.Now().After(deadline) {
				t.Fatal("slow deliveries never finished")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d.Panics() != 0 {
		t.Fatal("panics")
	}
}

// TestFewFreeSendersStillSend: fresh events are taken a few at a time
// while answers stream in, but never held back long: with all senders but
// one waiting on a slow receiver, an event for another one goes out.
func TestFewFreeSendersStillSend(t *testing.T) {
	h, d, slow, fast, releaseAll := slowAndFast(t, 16, 15)
	h.webhook(slow.URL, "message.sent")
	fastHook := h.webhook(fast.URL, "message.opened")
	for range 15 {
		h.event("message.sent")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); slow.count() < 15; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests reached the slow receiver, want 15", slow.count())
		}
	}
	fastEvent := h.event("message.opened")
	d.Kick()
	for deadline := time.Now().Add(5 * time.Second); h.statusOf(fastHook, fastEvent) != storage.DeliveryDelivered; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the last free sender was held back while the others waited on the slow receiver")
		}
	}
	releaseAll()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestShutdownPutsInFlightBack(t *testing.T) {
	hold := make(chan struct{})
	rec := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	defer close(hold)
	h := newHarness(t, testOptions(func(o *Options) { o.Timeout, o.ShutdownGrace = time.Minute, 0 }))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.d.Run(ctx) }()
	for rec.count() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	d := h.delivery(w, ev)
	if d.Status != storage.DeliveryPending || len(d.Attempts) != 0 || d.Retries != 0 || !d.NextAttemptAt.Equal(h.clock.Now()) {
		t.Fatalf("after shutdown: %+v", d)
	}
}

// TestShutdownLetsRequestsInFlightFinish: a request out when Run's
// context ends is not cut off while the grace lasts; its answer is saved as
// the delivery's attempt, so the next start does not send it again.
func TestShutdownLetsRequestsInFlightFinish(t *testing.T) {
	rec := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Second)
		w.WriteHeader(http.StatusNoContent)
	})
	h := newHarness(t, testOptions(func(o *Options) { o.Timeout, o.ShutdownGrace = time.Minute, 30*time.Second }))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.d.Run(ctx) }()
	for rec.count() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d := h.delivery(w, ev)
	if d.Status != storage.DeliveryDelivered || len(d.Attempts) != 1 {
		t.Fatalf("after shutdown: %+v", d)
	}
	h.restart()
	h.runUntil("nothing left to send", func() bool { return h.outboxLen() == 0 })
	if n := rec.count(); n != 1 {
		t.Fatalf("the receiver got %d requests", n)
	}
}

func TestBusyHostDoesNotSpin(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	slow := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	h := newHarness(t, testOptions(func(o *Options) { o.PerHost, o.Timeout = 1, time.Minute }))
	h.d = mustNew(t, h.db, testOptions(func(o *Options) { o.PerHost, o.Timeout = 1, time.Minute }))
	h.webhook(slow.URL, "message.sent")
	for range 4 {
		h.event("message.sent")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.d.Run(ctx) }()
	for slow.count() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	before := h.db.Commits()
	time.Sleep(300 * time.Millisecond)
	// Three deliveries are due but held back by the cap of one request per
	// host: the loop must wait for the answer, not commit in a tight loop.
	if n := h.db.Commits() - before; n > 5 {
		t.Errorf("%d commits while waiting on a busy host", n)
	}
	cancel()
	<-done
}

// outboxLen is how many events wait for fan-out.
func (h *harness) outboxLen() int {
	var n int
	h.db.View(func(tx *storage.Tx) error {
		out, _ := tx.Outbox(1000)
		n = len(out)
		return nil
	})
	return n
}

// runUntil runs the dispatcher until done reports true (polled), then
// stops it and waits for it to return.
func (h *harness) runUntil(what string, done func() bool) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- h.d.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			cancel()
			<-stopped
			h.t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	if err := <-stopped; err != nil {
		h.t.Fatal(err)
	}
}

// A fresh event is sent straight from the outbox, with no claim saved
// first: the outbox entry is what keeps it. A crash after the request and
// before its answer is saved re-sends it after the restart (at least
// once); it is never lost.
func TestCrashBeforeFreshAnswerIsSavedResends(t *testing.T) {
	h := newHarness(t, testOptions())
	rec := newReceiver(t, status(200))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	jobs, events, queue, _, err := h.d.take(storage.AllOutboxShards, &outboxCursor{}, 10, map[string]int{})
	if err != nil || len(jobs) != 1 || len(events) != 1 || len(queue) != 0 {
		t.Fatalf("take: %d jobs, %d events, %d queued, %v", len(jobs), len(events), len(queue), err)
	}
	if r := send(context.Background(), h.d.client, jobs[0], h.clock.Now); r.status != 200 {
		t.Fatalf("first request: %+v", r)
	}
	if h.statusOf(w, ev) != "" {
		t.Fatal("a delivery was saved before its answer")
	}
	h.restart() // the answer was never saved

	if h.outboxLen() != 1 {
		t.Fatal("the event left the outbox before its answer was saved")
	}
	h.runUntil("delivered after the restart", func() bool { return h.statusOf(w, ev) == storage.DeliveryDelivered })
	d := h.delivery(w, ev)
	if len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 200 || d.DeliveredAt == nil {
		t.Errorf("delivery %+v", d)
	}
	if rec.count() != 2 || h.outboxLen() != 0 {
		t.Errorf("receiver saw %d requests (want 2: one before the crash), outbox holds %d", rec.count(), h.outboxLen())
	}
}

// One event to several webhooks: each delivery is saved with its own
// outcome when the last answer is back, and the event leaves the outbox.
func TestFreshEventToSeveralWebhooks(t *testing.T) {
	h := newHarness(t, testOptions())
	ok, down, gone := newReceiver(t, status(204)), newReceiver(t, status(503, "Retry-After", "90")), newReceiver(t, status(410))
	wOK, wDown, wGone := h.webhook(ok.URL, "message.sent"), h.webhook(down.URL, "message.sent"), h.webhook(gone.URL, "message.sent")
	other := h.webhook(ok.URL, "message.opened") // not subscribed
	ev := h.event("message.sent")
	h.runUntil("all three saved", func() bool {
		return h.statusOf(wOK, ev) != "" && h.statusOf(wDown, ev) != "" && h.statusOf(wGone, ev) != ""
	})
	if d := h.delivery(wOK, ev); d.Status != storage.DeliveryDelivered || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 204 {
		t.Errorf("204: %+v", d)
	}
	if d := h.delivery(wDown, ev); d.Status != storage.DeliveryPending || d.Retries != 1 || len(d.Attempts) != 1 ||
		d.NextAttemptAt.Sub(h.clock.Now()) != 90*time.Second {
		t.Errorf("503 with Retry-After: %+v", d)
	}
	if d := h.delivery(wGone, ev); d.Status != storage.DeliveryFailed || d.FailedAt == nil ||
		!d.ExpiresAt.Equal(h.clock.Now().Add(7*24*time.Hour)) {
		t.Errorf("410: %+v", d)
	}
	if h.statusOf(other, ev) != "" || ok.count() != 1 || h.outboxLen() != 0 {
		t.Errorf("unsubscribed webhook got a delivery, or %d requests to the 204 receiver, or %d left in the outbox", ok.count(), h.outboxLen())
	}
	h.db.View(func(tx *storage.Tx) error {
		for _, c := range []struct {
			w      storage.Webhook
			status string
		}{{wOK, storage.DeliveryDelivered}, {wDown, storage.DeliveryPending}, {wGone, storage.DeliveryFailed}} {
			if tx.DeliveryCount(c.w.AccountID, c.w.ID, "") != 1 || tx.DeliveryCount(c.w.AccountID, c.w.ID, c.status) != 1 {
				t.Errorf("%s: counts %d total, %d %s", c.w.URL, tx.DeliveryCount(c.w.AccountID, c.w.ID, ""), tx.DeliveryCount(c.w.AccountID, c.w.ID, c.status), c.status)
			}
			list, _, err := tx.Deliveries(c.w.AccountID, c.w.ID, c.status, storage.ListOptions{Limit: 10})
			if err != nil || len(list) != 1 || list[0].EventID != ev.ID {
				t.Errorf("%s: listed %d %s, %v", c.w.URL, len(list), c.status, err)
			}
		}
		return nil
	})
	// The pending one is retried from the queue when it is due.
	h.clock.Add(90 * time.Second)
	if n := h.step(); n != 1 || down.count() != 2 {
		t.Fatalf("retry: sent %d, receiver saw %d", n, down.count())
	}
}

// A webhook deleted while a fresh request is out gets no delivery saved.
func TestWebhookDeletedDuringFreshRequest(t *testing.T) {
	h := newHarness(t, testOptions(func(o *Options) { o.Timeout = time.Minute }))
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	rec := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	})
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")
	go func() {
		<-arrived
		h.db.Update(func(tx *storage.Tx) error { return tx.DeleteWebhook("acct", w.ID) })
		close(release)
	}()
	h.runUntil("the outbox emptied", func() bool { return h.outboxLen() == 0 })
	if st := h.statusOf(w, ev); st != "" {
		t.Fatalf("a delivery (%s) was saved for a deleted webhook", st)
	}
}

// An event with more matching webhooks than requests may be in flight at
// once cannot go out in one piece: it waits in the queue instead of
// holding up the outbox.
func TestEventWiderThanTheWorkerPool(t *testing.T) {
	h := newHarness(t, testOptions(func(o *Options) { o.Workers = 1 }))
	rec := newReceiver(t, status(200))
	hooks := []storage.Webhook{h.webhook(rec.URL+"/a", "message.sent"), h.webhook(rec.URL+"/b", "message.sent")}
	wide, narrow := h.event("message.sent"), h.event("message.sent")
	h.runUntil("every delivery done", func() bool {
		for _, w := range hooks {
			for _, ev := range []storage.Event{wide, narrow} {
				if h.statusOf(w, ev) != storage.DeliveryDelivered {
					return false
				}
			}
		}
		return true
	})
	if rec.count() != 4 {
		t.Errorf("receiver saw %d requests, want 4", rec.count())
	}
}

// A backlog for a host at its cap moves from the outbox to the delivery
// queue (in bounded batches) while the host is busy, and nothing is lost
// when the server stops.
func TestBacklogForBusyHostIsQueued(t *testing.T) {
	hold := make(chan struct{})
	rec := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	defer close(hold)
	h := newHarness(t, testOptions(func(o *Options) { o.PerHost, o.Timeout = 1, time.Minute }))
	w := h.webhook(rec.URL, "message.sent")
	const n = 1200
	err := h.db.Update(func(tx *storage.Tx) error {
		for i := range n {
			id := uuid.Must(uuid.NewV7()).String()
			ev := storage.Event{ID: id, AccountID: "acct", Type: "message.sent", Timestamp: h.clock.Now(),
				Envelope: []byte(fmt.Sprintf(`{"id":%q,"n":%d}`, id, i)), ExpiresAt: h.clock.Now().Add(time.Hour)}
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pending := func() int {
		var p int
		h.db.View(func(tx *storage.Tx) error {
			p = tx.DeliveryCount(w.AccountID, w.ID, storage.DeliveryPending)
			return nil
		})
		return p
	}
	// The first event's request is out: its outbox entry stays until the
	// answer is saved.
	h.runUntil("the backlog queued", func() bool { return h.outboxLen() == 1 && pending() == n-1 })
	// The request that was out was put back at shutdown, as a pending delivery.
	if p := pending(); p != n || h.outboxLen() != 0 || rec.count() != 1 {
		t.Fatalf("%d pending after shutdown (want %d), %d in the outbox, receiver saw %d", p, n, h.outboxLen(), rec.count())
	}
}

// The queue steps one transaction at a time, for tests that drive the
// state machine without Run.

// fanOut turns every waiting event into queued deliveries (used by tests).
func (d *Dispatcher) fanOut() error {
	for {
		var more bool
		err := d.db.Update(func(tx *storage.Tx) error {
			entries, err := tx.Outbox(500)
			if err != nil {
				return err
			}
			more = len(entries) == 500
			return d.queueTx(tx, entries)
		})
		if err != nil || !more {
			return err
		}
	}
}

// claim takes up to max due deliveries, leaving out hosts already at their
// cap. Each is saved with a placeholder attempt and a lease (its next
// attempt moved past the request deadline) before anything is sent, so a
// crash re-sends it after the lease instead of losing it.
func (d *Dispatcher) claim(max int, perHost map[string]int) ([]job, error) {
	var jobs []job
	err := d.db.Update(func(tx *storage.Tx) error {
		var err error
		jobs, err = d.claimTx(tx, max, perHost)
		return err
	})
	return jobs, err
}

// record saves a batch of attempt results in one transaction and moves
// each delivery along the state machine.
func (d *Dispatcher) record(batch []result) error {
	if len(batch) == 0 {
		return nil
	}
	return d.db.Update(func(tx *storage.Tx) error { return d.recordTx(tx, batch) })
}
