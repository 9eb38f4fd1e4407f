package queue

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// testKey signs bounce addresses in tests.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// testQueue is a Queue over a fresh database, on a clock the test moves.
func testQueue(t *testing.T, db *storage.DB, c *clock) *Queue {
	t.Helper()
	o := DefaultOptions()
	o.Now, o.ReturnPathKey = c.now, testKey
	q, err := New(db, o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func openDB(t *testing.T) *storage.DB {
	t.Helper()
	return openDBOn(t, storagetest.Options(t))
}

// openDBOn is openDB with sopts: the embedded file's own tests give
// storage.DefaultOptions.
func openDBOn(t *testing.T, sopts storage.Options) *storage.DB {
	t.Helper()
	db, err := storage.Open(t.TempDir(), sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// accept stores a sandbox (test-mode) message to rcpts the way the
// messages API does: Accept, then File and insert in one transaction.
func accept(t *testing.T, q *Queue, db *storage.DB, now time.Time, rcpts ...string) storage.Message {
	t.Helper()
	m := storage.Message{ID: uuid.Must(uuid.NewV7()).String(), AccountID: uuid.NewString(), Test: true,
		From: "a@acme.test", Domain: "acme.test", Subject: "s", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	for _, r := range rcpts {
		m.To = append(m.To, r)
		m.Recipients = append(m.Recipients, storage.Recipient{Email: r, Kind: "to"})
	}
	sent, err := q.Accept(&m, now)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *storage.Tx) error {
		if err := File(tx, &m, sent); err != nil {
			return err
		}
		return tx.InsertMessage(m, storage.MessageContent{Subject: "s", Text: "t"}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func read(t *testing.T, db *storage.DB, m storage.Message) (storage.Message, []string) {
	t.Helper()
	var got storage.Message
	var types []string
	err := db.View(func(tx *storage.Tx) error {
		var err error
		if got, err = tx.Message(m.AccountID, m.ID); err != nil {
			return err
		}
		evs, _, _, err := tx.Events(m.AccountID, storage.EventFilter{Test: true, MessageID: m.ID}, storage.ListOptions{Limit: 100}, false)
		for _, ev := range evs { // ids are UUIDv7: oldest first
			types = append(types, ev.Type)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, types
}

func TestBackoffSchedule(t *testing.T) {
	want := []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, 80 * time.Minute, 2 * time.Hour, 2 * time.Hour}
	for i, w := range want {
		if got := Backoff(i+1, 5*time.Minute, 2*time.Hour); got != w {
			t.Errorf("attempt %d: %v, want %v", i+1, got, w)
		}
	}
}

// The embedded file has one process at a time, so the next one takes
// back every lease at start; nodes sharing PostgreSQL wait for a lease to
// end instead (nodes_test.go), so this test stays on the file.
func TestLeasesOfADeadProcessAreTakenBackAtStart(t *testing.T) {
	db := openDBOn(t, storage.DefaultOptions())
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	q := testQueue(t, db, c)
	m := accept(t, q, db, c.t, "x@dest.test")
	jobs, _, err := q.claimDue(c.t, 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %d", err, len(jobs))
	}
	// The process dies here, before sending. Until its lease ends no other
	// turn takes the message…
	if err := q.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := read(t, db, m); st.Status != StatusSending {
		t.Fatalf("a leased message was taken again: %s", st.Status)
	}
	// …but the next process takes it back at start, and it is delivered
	// once, on its second attempt.
	next := testQueue(t, db, c)
	if err := next.recoverLeases(); err != nil {
		t.Fatal(err)
	}
	if err := next.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, types := read(t, db, m)
	if st.Status != StatusDelivered || st.Recipients[0].Attempts != 2 {
		t.Fatalf("after the restart: %s, attempts %d", st.Status, st.Recipients[0].Attempts)
	}
	if got := strings.Join(types, ","); got != "message.sent,message.delivered" {
		t.Errorf("events %s", got)
	}
}

// TestRunWakesOnKick: a Queue whose poll is an hour delivers a message
// filed while it sleeps as soon as it is kicked.
func TestRunWakesOnKick(t *testing.T) {
	db := openDB(t)
	c := &clock{t: time.Now().UTC()}
	o := DefaultOptions()
	o.Poll, o.ReturnPathKey = time.Hour, testKey
	q, err := New(db, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // Run is asleep now
	m := accept(t, q, db, c.now(), "x@dest.test")
	q.Kick()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, _ := read(t, db, m); st.Status == StatusDelivered {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the kicked queue did not deliver")
}

// TestRecipientMoves holds the transition table to the states: every move
// starts and ends in a recipient state, and a move it lacks is refused.
func TestRecipientMoves(t *testing.T) {
	recipientStates := []string{StatusQueued, StatusSending, StatusDeferred, StatusDelivered, StatusBounced,
		StatusFailed, StatusCancelled, StatusSuppressed}
	for mv, why := range recipientMoves {
		if !slices.Contains(recipientStates, mv.from) || !slices.Contains(recipientStates, mv.to) || why == "" {
			t.Errorf("move %v (%q) is not between recipient states", mv, why)
		}
	}
	for _, from := range recipientStates {
		for _, to := range recipientStates {
			r := storage.Recipient{Email: "x@dest.test", Status: from}
			_, listed := recipientMoves[move{from, to}]
			if err := setStatus(&r, to); (err == nil) != listed {
				t.Errorf("%s → %s: err %v, listed %v", from, to, err, listed)
			}
		}
	}
	// Final states stay final: nothing leaves them but a late bounce report.
	for _, from := range []string{StatusBounced, StatusFailed, StatusCancelled, StatusSuppressed} {
		for mv := range recipientMoves {
			if mv.from == from {
				t.Errorf("%s is final, yet the table moves it to %s", from, mv.to)
			}
		}
	}
}

// TestStatusRules checks the order in which recipient states sum up to a
// message's state (docs/sending.md, "Message states").
func TestStatusRules(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		rcpts []string
		want  string
	}{
		{StatusScheduled, []string{StatusQueued}, StatusScheduled},
		{StatusCancelled, []string{StatusCancelled}, StatusCancelled},
		{StatusSending, []string{StatusDelivered, StatusSending, StatusDeferred}, StatusSending},
		{StatusSending, []string{StatusDelivered, StatusDeferred, StatusQueued}, StatusDeferred},
		{StatusSending, []string{StatusDelivered, StatusQueued}, StatusQueued},
		{StatusSending, []string{StatusBounced, StatusDelivered, StatusSuppressed}, StatusDelivered},
		{StatusSending, []string{StatusBounced, StatusFailed}, StatusBounced},
		{StatusSending, []string{StatusFailed, StatusSuppressed}, StatusFailed},
		{StatusQueued, []string{StatusSuppressed, StatusSuppressed}, StatusSuppressed},
	} {
		m := storage.Message{Status: tc.msg}
		for _, s := range tc.rcpts {
			m.Recipients = append(m.Recipients, storage.Recipient{Status: s})
		}
		if got := Status(m); got != tc.want {
			t.Errorf("%s with %v = %s, want %s", tc.msg, tc.rcpts, got, tc.want)
		}
	}
}

func TestCancel(t *testing.T) {
	now := time.Now()
	m := storage.Message{Status: StatusScheduled, Recipients: []storage.Recipient{{Status: StatusQueued}}}
	if err := Cancel(&m, now); err != nil || m.Status != StatusCancelled || m.Recipients[0].Status != StatusCancelled || m.QueueAt != nil {
		t.Fatalf("cancel scheduled: %v %+v", err, m)
	}
	if err := Cancel(&m, now); !errors.Is(err, ErrCancelled) {
		t.Errorf("cancel twice: %v", err)
	}
	sending := storage.Message{Status: StatusSending, Recipients: []storage.Recipient{{Status: StatusSending}}}
	if err := Cancel(&sending, now); !errors.Is(err, ErrNotCancellable) || sending.Status != StatusSending {
		t.Errorf("cancel sending: %v %s", err, sending.Status)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	o := DefaultOptions()
	o.Concurrency = 0
	o.RetryMax = time.Second
	if _, err := New(nil, o); err == nil || !strings.Contains(err.Error(), "concurrency") || !strings.Contains(err.Error(), "retry max") {
		t.Errorf("New with bad options: %v", err)
	}
}

// A claim with nothing due commits nothing: an idle queue that wakes costs
// no fsync. A due message is still claimed, and the time of the next one
// is reported either way.
func TestIdleClaimWritesNothing(t *testing.T) {
	db := openDB(t)
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	q := testQueue(t, db, c)
	before := db.Commits()
	jobs, next, err := q.claimDue(c.now(), 10)
	if err != nil || len(jobs) != 0 || !next.IsZero() || db.Commits() != before {
		t.Fatalf("empty queue: %d jobs, next %v, %v, %d commits", len(jobs), next, err, db.Commits()-before)
	}
	accept(t, q, db, c.now(), "ann@dest.test")
	before = db.Commits()
	if jobs, _, err = q.claimDue(c.now().Add(-time.Minute), 10); err != nil || len(jobs) != 0 || db.Commits() != before {
		t.Fatalf("nothing due yet: %d jobs, %v, %d commits", len(jobs), err, db.Commits()-before)
	}
	if jobs, _, err = q.claimDue(c.now(), 10); err != nil || len(jobs) != 1 || db.Commits() != before+1 {
		t.Fatalf("one due: %d jobs, %v, %d commits", len(jobs), err, db.Commits()-before)
	}
}

// An attempt that never records its outcome (it panicked, or hung past
// its lease) leaves its message due again when the lease ends, even in
// the process that made it: it is claimed and sent once more.
func TestLeaseEndMakesAnUnrecordedAttemptDueAgain(t *testing.T) {
	db := openDB(t)
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	q := testQueue(t, db, c)
	m := accept(t, q, db, c.t, "x@dest.test")
	if jobs, _, err := q.claimDue(c.t, 10); err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %d", err, len(jobs))
	}
	c.t = c.t.Add(q.Options().Lease)
	if err := q.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, types := read(t, db, m)
	if st.Status != StatusDelivered || st.Recipients[0].Attempts != 2 {
		t.Fatalf("after the lease ended: %s, attempts %d", st.Status, st.Recipients[0].Attempts)
	}
	if got := strings.Join(types, ","); got != "message.sent,message.delivered" {
		t.Errorf("events %s", got)
	}
}
