package transport

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/storage"
)

// receiver is an https: rua on the fixture's HTTPS server that fails the
// first fails uploads (503) and accepts the others (201).
type receiver struct {
	mu       sync.Mutex
	fails    int
	bodies   [][]byte // every upload, in order
	accepted int
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.bodies = append(rc.bodies, body)
	if len(rc.bodies) <= rc.fails {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	rc.accepted++
	w.WriteHeader(http.StatusCreated)
}

func (rc *receiver) counts() (uploads, accepted int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.bodies), rc.accepted
}

// logBuffer collects a logger's lines, safe for the worker's goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// retrySetup stores yesterday's counts for example.test, which publishes
// one https: rua served by rc, and returns a function that makes a
// Reporter on the fixture's current database (again after a restart).
func retrySetup(t *testing.T, rc *receiver, p RetryPolicy) (*fixture, func() *Reporter, *logBuffer) {
	f := setup(t)
	today := Day(f.clock)
	f.db.Update(func(tx *storage.Tx) error { return tx.AddTLSCount(today-1, "example.test", "sts", "", 5) })
	port := f.ps.srv.URL[strings.LastIndexByte(f.ps.srv.URL, ':')+1:]
	f.zone.TXT("_smtp._tls.example.test", "v=TLSRPTv1; rua=https://mta-sts.example.test:"+port+"/reports")
	f.ps.set(rc.serve)
	logs := &logBuffer{}
	return f, func() *Reporter {
		return NewReporter(ReporterOptions{DB: f.db, Resolver: &dns.Resolver{Server: f.zone.Addr}, Uploads: f.sts(),
			Org: "mta.mailbolt.test", Contact: "mailto:postmaster@mailbolt.test", Retry: p,
			Logger: slog.New(slog.NewTextHandler(logs, nil)), Now: func() time.Time { return f.clock }})
	}, logs
}

// pending lists the retries waiting, earliest first.
func pending(t *testing.T, db *storage.DB) []storage.TLSReportRetry {
	t.Helper()
	var out []storage.TLSReportRetry
	if err := db.View(func(tx *storage.Tx) (err error) {
		out, err = tx.DueTLSReportRetries(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 1000)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A receiver that fails the first three uploads gets the report again
// after 1, 2 and 4 minutes (base 1m, doubling), accepts the fourth, and is
// never sent it again; every upload is the same report.
func TestReportUploadRetriedUntilAccepted(t *testing.T) {
	rc := &receiver{fails: 3}
	f, reporter, logs := retrySetup(t, rc, RetryPolicy{Base: time.Minute, Max: time.Hour, Lifetime: 24 * time.Hour, MaxPending: 10})
	rep := reporter()
	if n, err := rep.SendDue(context.Background()); n != 0 || err != nil {
		t.Fatalf("first attempt: sent %d, %v", n, err)
	}
	p := pending(t, f.db)
	if len(p) != 1 || p[0].Attempts != 1 || !p[0].Next.Equal(f.clock.Add(time.Minute)) || p[0].Domain != "example.test" {
		t.Fatalf("after the first failure: %+v", p)
	}
	f.db.View(func(tx *storage.Tx) error {
		if left, _ := tx.TLSCounts(Day(f.clock) + 1); len(left) != 0 {
			t.Errorf("counts kept: %+v", left)
		}
		return nil
	})
	// Not due yet: nothing is sent.
	f.clock = f.clock.Add(59 * time.Second)
	if sent, gaveUp, err := rep.RetryDue(context.Background()); sent+gaveUp != 0 || err != nil {
		t.Fatalf("before its time: %d %d %v", sent, gaveUp, err)
	}
	if n, _ := rc.counts(); n != 1 {
		t.Fatalf("%d uploads before the retry is due", n)
	}
	for i, wait := range []time.Duration{time.Second, 2 * time.Minute, 4 * time.Minute} {
		f.clock = f.clock.Add(wait)
		sent, gaveUp, err := rep.RetryDue(context.Background())
		if err != nil || gaveUp != 0 || sent != i/2 { // the third retry is accepted
			t.Fatalf("retry %d: sent %d, gave up %d, %v", i+1, sent, gaveUp, err)
		}
	}
	uploads, accepted := rc.counts()
	if uploads != 4 || accepted != 1 {
		t.Fatalf("%d uploads, %d accepted; want 4 and 1", uploads, accepted)
	}
	for _, b := range rc.bodies[1:] {
		if !bytes.Equal(b, rc.bodies[0]) {
			t.Fatal("a retry sent other bytes than the first attempt")
		}
	}
	if r := gunzipReport(t, rc.bodies[3]); r["report-id"] != "2026-11-25.example.test@mta.mailbolt.test" {
		t.Fatalf("report %v", r)
	}
	if p := pending(t, f.db); len(p) != 0 {
		t.Fatalf("still pending after it was accepted: %+v", p)
	}
	f.clock = f.clock.Add(48 * time.Hour)
	rep.RetryDue(context.Background())
	if uploads, _ := rc.counts(); uploads != 4 {
		t.Fatalf("sent again after it was accepted: %d uploads", uploads)
	}
	if l := logs.String(); !strings.Contains(l, `msg="TLS report sent"`) || !strings.Contains(l, "attempts=4") ||
		strings.Count(l, `msg="TLS report not sent"`) != 3 {
		t.Fatalf("log:\n%s", l)
	}
}

// A receiver that always fails is retried until the lifetime is over,
// then the report is given up, logged, and never sent again.
func TestReportUploadGivenUpAfterLifetime(t *testing.T) {
	rc := &receiver{fails: 1 << 30}
	f, reporter, logs := retrySetup(t, rc, RetryPolicy{Base: time.Minute, Max: 2 * time.Minute, Lifetime: 10 * time.Minute, MaxPending: 10})
	rep := reporter()
	rep.SendDue(context.Background())
	// Attempts at 0, 1, 3, 5, 7 and 9 minutes; the next would be at 11,
	// after the lifetime: the sixth failure gives it up.
	gaveUp := 0
	for range 12 {
		f.clock = f.clock.Add(time.Minute)
		_, g, err := rep.RetryDue(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		gaveUp += g
	}
	if uploads, accepted := rc.counts(); uploads != 6 || accepted != 0 || gaveUp != 1 {
		t.Fatalf("%d uploads, %d accepted, %d given up; want 6, 0, 1", uploads, accepted, gaveUp)
	}
	if p := pending(t, f.db); len(p) != 0 {
		t.Fatalf("pending after it was given up: %+v", p)
	}
	l := logs.String()
	if strings.Count(l, `msg="TLS report given up"`) != 1 || !strings.Contains(l, "attempts=6") || !strings.Contains(l, `reason="retried for 10m0s"`) ||
		!strings.Contains(l, "HTTP 503") {
		t.Fatalf("log:\n%s", l)
	}
}

// The retries are in the database: after a restart the pending upload is
// made by the new process. An attempt in flight when the node stops was
// already counted and moved to its next time: it is not lost, and not
// made again at once.
func TestReportRetrySurvivesRestart(t *testing.T) {
	rc := &receiver{fails: 1}
	f, reporter, _ := retrySetup(t, rc, RetryPolicy{Base: time.Minute, Max: time.Hour, Lifetime: 24 * time.Hour, MaxPending: 10})
	reporter().SendDue(context.Background())

	// The retry is in flight (the receiver holds it) when the node stops.
	held, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	f.ps.set(func(w http.ResponseWriter, r *http.Request) {
		close(held)
		select {
		case <-r.Context().Done():
		case <-release:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ctx, stop := context.WithCancel(context.Background())
	f.clock = f.clock.Add(time.Minute)
	done := make(chan error)
	go func() { _, _, err := reporter().RetryDue(ctx); done <- err }()
	<-held
	stop()
	<-done

	f.db.Close()
	var err error
	if f.db, err = storage.Open(f.dir, f.sopts); err != nil {
		t.Fatal(err)
	}
	f.ps.set(rc.serve)
	rep := reporter()
	p := pending(t, f.db)
	if len(p) != 1 || p[0].Attempts != 2 || !p[0].Next.Equal(f.clock.Add(claimHold)) {
		t.Fatalf("after the restart: %+v", p)
	}
	if sent, _, err := rep.RetryDue(context.Background()); sent != 0 || err != nil {
		t.Fatalf("made again at once: %d %v", sent, err)
	}
	f.clock = f.clock.Add(claimHold)
	if sent, _, err := rep.RetryDue(context.Background()); sent != 1 || err != nil {
		t.Fatalf("after the restart: sent %d, %v", sent, err)
	}
	if uploads, accepted := rc.counts(); uploads != 2 || accepted != 1 {
		t.Fatalf("%d uploads, %d accepted; want 2 and 1", uploads, accepted)
	}
	if p := pending(t, f.db); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
}

// A retry goes through the same address guard as the first attempt: with
// loopback refused, the receiver on loopback is not reached.
func TestReportRetryThroughTheGuard(t *testing.T) {
	rc := &receiver{fails: 1}
	f, reporter, logs := retrySetup(t, rc, RetryPolicy{Base: time.Minute, Max: time.Hour, Lifetime: 24 * time.Hour, MaxPending: 10})
	rep := reporter()
	rep.SendDue(context.Background())
	s := f.sts()
	s.o.Guard.Allow = nil
	rep.o.Uploads = NewSTS(s.o)
	f.clock = f.clock.Add(time.Minute)
	if sent, _, err := rep.RetryDue(context.Background()); sent != 0 || err != nil {
		t.Fatalf("sent %d, %v", sent, err)
	}
	if uploads, _ := rc.counts(); uploads != 1 {
		t.Fatalf("%d uploads reached the receiver", uploads)
	}
	if p := pending(t, f.db); len(p) != 1 || p[0].Attempts != 2 || !strings.Contains(logs.String(), "loopback") {
		t.Fatalf("pending %+v, log:\n%s", p, logs.String())
	}
}

// At most MaxPending uploads wait: a report failing beyond is given up at
// once, and logged.
func TestReportRetriesCapped(t *testing.T) {
	rc := &receiver{fails: 1 << 30}
	f, reporter, logs := retrySetup(t, rc, RetryPolicy{Base: time.Minute, Max: time.Hour, Lifetime: 24 * time.Hour, MaxPending: 1})
	port := f.ps.srv.URL[strings.LastIndexByte(f.ps.srv.URL, ':')+1:]
	f.zone.TXT("_smtp._tls.other.test", "v=TLSRPTv1; rua=https://mta-sts.example.test:"+port+"/other")
	f.db.Update(func(tx *storage.Tx) error { return tx.AddTLSCount(Day(f.clock)-1, "other.test", "sts", "", 1) })
	reporter().SendDue(context.Background())
	if p := pending(t, f.db); len(p) != 1 || p[0].Domain != "example.test" {
		t.Fatalf("pending: %+v", p)
	}
	if l := logs.String(); !strings.Contains(l, `msg="TLS report given up" domain=other.test`) || !strings.Contains(l, "1 reports already wait") {
		t.Fatalf("log:\n%s", l)
	}
}

// The worker, on the real clock with delays of milliseconds: a receiver
// that fails twice gets the report accepted once, by the job's rounds.
func TestRunRetriesOnTheClock(t *testing.T) {
	rc := &receiver{fails: 2}
	f, _, logs := retrySetup(t, rc, RetryPolicy{})
	// The fixture's counts are of its fake clock's yesterday: these are
	// of the real one's.
	day := Day(time.Now().Add(-ReportGrace)) - 1
	f.db.Update(func(tx *storage.Tx) error {
		if err := tx.DeleteTLSCounts(^uint32(0)); err != nil {
			return err
		}
		return tx.AddTLSCount(day, "example.test", "sts", "", 1)
	})
	rep := NewReporter(ReporterOptions{DB: f.db, Resolver: &dns.Resolver{Server: f.zone.Addr}, Uploads: f.sts(), Org: "mta.mailbolt.test",
		Retry:  RetryPolicy{Base: 20 * time.Millisecond, Max: 40 * time.Millisecond, Lifetime: 10 * time.Second, MaxPending: 10},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if _, err := rep.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rep.RunRetries(ctx) }()
	defer func() { stop(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, accepted := rc.counts(); accepted > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not accepted in 10s; log:\n%s", logs.String())
		}
	}
	time.Sleep(200 * time.Millisecond) // rounds go on: nothing more is sent
	if uploads, accepted := rc.counts(); uploads != 3 || accepted != 1 {
		t.Fatalf("%d uploads, %d accepted; want 3 and 1", uploads, accepted)
	}
	if p := pending(t, f.db); len(p) != 0 {
		t.Fatalf("pending: %+v", p)
	}
}

// lockedClock is a clock the test moves while a reporter's goroutine
// reads it.
type lockedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *lockedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *lockedClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A retry whose upload is slow keeps its claim for as long as an upload
// may take, not only until its next retry would be due: a second round
// (another node's, once the job's lease has run out) finds nothing to
// take, so the report is not posted twice at once, and the slow
// attempt's success removes the retry.
func TestSlowReportRetryIsNotMadeTwice(t *testing.T) {
	rc := &receiver{fails: 1}
	f, reporter, _ := retrySetup(t, rc, RetryPolicy{Base: 20 * time.Second, Max: time.Hour, Lifetime: 24 * time.Hour, MaxPending: 10})
	reporter().SendDue(context.Background())
	clock := &lockedClock{now: f.clock.Add(20 * time.Second)}
	node := func() *Reporter { r := reporter(); r.o.Now = clock.Now; return r }

	held, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // a failure below must not leave the held post (and the server's close) waiting
	var posts sync.WaitGroup
	f.ps.set(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		posts.Add(1)
		defer posts.Done()
		select {
		case held <- struct{}{}:
			<-release
		default: // a second post while the first is held
		}
		rc.serve(w, r)
	})
	done := make(chan int)
	go func() { sent, _, _ := node().RetryDue(context.Background()); done <- sent }()
	<-held
	clock.add(45 * time.Second) // past the first retry's next due time (2 × 20 s)
	if sent, gaveUp, err := node().RetryDue(context.Background()); sent+gaveUp != 0 || err != nil {
		t.Fatalf("a second round while the first attempt is out: sent %d, gave up %d, %v", sent, gaveUp, err)
	}
	releaseOnce()
	if sent := <-done; sent != 1 {
		t.Fatalf("the slow attempt: sent %d", sent)
	}
	posts.Wait()
	if uploads, accepted := rc.counts(); uploads != 2 || accepted != 1 {
		t.Fatalf("%d uploads, %d accepted; want 2 (the first attempt, the slow retry) and 1", uploads, accepted)
	}
	if p := pending(t, f.db); len(p) != 0 {
		t.Fatalf("still pending after the accepted retry: %+v", p)
	}
}

// A failed first upload is timed from its failure, not from the start of
// the round that made it (a round of slow uploads can outlast the base
// delay): its first retry comes Base after it failed.
func TestReportRetryTimedFromItsFailure(t *testing.T) {
	rc := &receiver{fails: 1}
	f, reporter, _ := retrySetup(t, rc, RetryPolicy{Base: time.Minute, Max: time.Hour, Lifetime: 24 * time.Hour, MaxPending: 10})
	start := f.clock
	clock := &lockedClock{now: start}
	rep := reporter()
	rep.o.Now = func() time.Time { clock.add(10 * time.Minute); return clock.Now() } // each reading 10 minutes on
	rep.SendDue(context.Background())
	p := pending(t, f.db)
	if len(p) != 1 || !p[0].First.After(start.Add(10*time.Minute)) || !p[0].Next.Equal(p[0].First.Add(time.Minute)) {
		t.Fatalf("filed from the round's start: %+v (round began at %v)", p, start.Add(10*time.Minute))
	}
}

// Over the cap, a failed upload is logged as not sent, with no retry
// time, then given up with its error.
func TestReportGivenUpOverTheCapLogsItsError(t *testing.T) {
	rc := &receiver{fails: 10}
	f, reporter, logs := retrySetup(t, rc, RetryPolicy{Base: time.Minute, Max: time.Hour, Lifetime: 24 * time.Hour, MaxPending: 1})
	f.db.Update(func(tx *storage.Tx) error {
		_, err := tx.AddTLSReportRetries([]storage.TLSReportRetry{{URL: "https://other.test/r", Domain: "other.test", Body: []byte{1},
			Attempts: 1, First: f.clock, Next: f.clock.Add(time.Hour)}}, 1)
		return err
	})
	reporter().SendDue(context.Background())
	var notSent, givenUp string
	for _, line := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(line, `msg="TLS report not sent"`):
			notSent = line
		case strings.Contains(line, `msg="TLS report given up"`):
			givenUp = line
		}
	}
	if notSent == "" || strings.Contains(notSent, "retry_at") {
		t.Errorf("not sent line: %q", notSent)
	}
	if !strings.Contains(givenUp, "HTTP 503") || !strings.Contains(givenUp, "already wait") {
		t.Errorf("given up line without its error or reason: %q", givenUp)
	}
}
