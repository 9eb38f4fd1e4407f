package storage

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// hookRecorder keeps the changes an after-commit hook was called with.
type hookRecorder struct {
	mu  sync.Mutex
	got []Change
}

func (r *hookRecorder) hook(c Change) { r.mu.Lock(); r.got = append(r.got, c); r.mu.Unlock() }

// take returns the calls so far and forgets them.
func (r *hookRecorder) take() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

func minuteAt(min int) *time.Time {
	t := time.Date(2026, 11, 22, 12, min, 0, 0, time.UTC)
	return &t
}

func TestAfterCommitSeesWhatWasFiled(t *testing.T) {
	db := openTest(t)
	var rec hookRecorder
	db.AfterCommit(rec.hook)
	msg := func(id string, queueAt *time.Time) Message {
		return Message{ID: id, AccountID: "a1", Status: "queued", QueueAt: queueAt, ExpiresAt: *minuteAt(600)}
	}
	// moveMessage re-files message id at queueAt, as a claim or a retry does.
	moveMessage := func(id string, queueAt *time.Time) func(tx *Tx) error {
		return func(tx *Tx) error {
			m, err := tx.Message("a1", id)
			if err != nil {
				return err
			}
			m.QueueAt = queueAt
			return tx.UpdateMessage(m)
		}
	}
	moveDelivery := func(id string, next *time.Time) func(tx *Tx) error {
		return func(tx *Tx) error {
			d, err := tx.DeliveryByID(id)
			if err != nil {
				return err
			}
			d.NextAttemptAt = next
			return tx.UpdateDelivery(d)
		}
	}
	event := func(id string) Event {
		return Event{ID: id, AccountID: "a1", Type: "message.sent", Envelope: []byte(`{}`), ExpiresAt: *minuteAt(600)}
	}
	for _, step := range []struct {
		name  string
		write func(tx *Tx) error
		want  Change
	}{
		{"a suppression", func(tx *Tx) error {
			_, _, err := tx.PutSuppression(Suppression{AccountID: "a1", Recipient: "x@y.test"})
			return err
		}, 0},
		{"an event of an account without webhooks", func(tx *Tx) error { return tx.AppendEvent(event("e1")) }, 0},
		{"a webhook", func(tx *Tx) error { return tx.PutWebhook(Webhook{ID: "w1", AccountID: "a1"}) }, 0},
		{"an event of an account with webhooks", func(tx *Tx) error { return tx.AppendEvent(event("e2")) }, OutboxWritten},
		{"the event fanned out", func(tx *Tx) error { return tx.DoneOutbox(1) }, 0},
		{"a queued message", func(tx *Tx) error { return tx.InsertMessage(msg("m1", minuteAt(0)), MessageContent{}, nil) }, MessageQueueWritten},
		{"a message not queued", func(tx *Tx) error { return tx.InsertMessage(msg("m2", nil), MessageContent{}, nil) }, 0},
		{"a message claimed (moved to its lease end)", moveMessage("m1", minuteAt(15)), 0},
		{"a message deferred (sooner than its lease end)", moveMessage("m1", minuteAt(5)), MessageQueueWritten},
		{"a message rewritten where it is", moveMessage("m1", minuteAt(5)), 0},
		{"a message done (out of the queue)", moveMessage("m1", nil), 0},
		{"a message queued again", moveMessage("m1", minuteAt(30)), MessageQueueWritten},
		{"a pending delivery", func(tx *Tx) error {
			return tx.InsertDelivery(Delivery{ID: "d1", WebhookID: "w1", AccountID: "a1", EventID: "e2", Status: DeliveryPending, NextAttemptAt: minuteAt(0)})
		}, WebhookQueueWritten},
		{"a delivery not queued", func(tx *Tx) error {
			return tx.InsertDelivery(Delivery{ID: "d2", WebhookID: "w1", AccountID: "a1", EventID: "e1", Status: DeliveryFailed})
		}, 0},
		{"a delivery claimed (moved to its lease end)", moveDelivery("d1", minuteAt(1)), 0},
		{"a delivery to retry (sooner than its lease end)", moveDelivery("d1", minuteAt(0)), WebhookQueueWritten},
		{"a failed delivery replayed", moveDelivery("d2", minuteAt(0)), WebhookQueueWritten},
		{"a message and its event in one transaction", func(tx *Tx) error {
			if err := tx.InsertMessage(msg("m3", minuteAt(0)), MessageContent{}, nil); err != nil {
				return err
			}
			return tx.AppendEvent(event("e3"))
		}, MessageQueueWritten | OutboxWritten},
	} {
		if err := db.Update(step.write); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		// Update has returned: the hook of its commit has run.
		got := rec.take()
		switch {
		case step.want == 0 && len(got) != 0:
			t.Errorf("%s: hook called with %v, want no call", step.name, got)
		case step.want != 0 && (len(got) != 1 || got[0] != step.want):
			t.Errorf("%s: hook called with %v, want [%v]", step.name, got, step.want)
		}
	}
}

func TestAfterCommitRunsOnceTheCommitIsDone(t *testing.T) {
	db := openTest(t)
	var mu sync.Mutex
	var seen []string
	db.AfterCommit(func(c Change) {
		// A new read transaction sees the writes: bbolt's commit, fsync
		// included, is over.
		err := db.View(func(tx *Tx) error { _, err := tx.Message("a1", "m1"); return err })
		mu.Lock()
		seen = append(seen, c.String()+" "+errString(err))
		mu.Unlock()
	})
	err := db.Update(func(tx *Tx) error {
		return tx.InsertMessage(Message{ID: "m1", AccountID: "a1", QueueAt: minuteAt(0), ExpiresAt: *minuteAt(600)}, MessageContent{}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "message_queue ok" {
		t.Fatalf("hook saw %q, want the message_queue change with the message readable", seen)
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func TestAfterCommitSkipsWhatIsRolledBack(t *testing.T) {
	db := openTest(t)
	var rec hookRecorder
	remove := db.AfterCommit(rec.hook)
	queueMessage := func(id string) func(tx *Tx) error {
		return func(tx *Tx) error {
			return tx.InsertMessage(Message{ID: id, AccountID: "a1", QueueAt: minuteAt(0), ExpiresAt: *minuteAt(600)}, MessageContent{}, nil)
		}
	}
	boom := errors.New("boom")

	// Alone: a unit of work that fails after filing work.
	err := db.Update(func(tx *Tx) error {
		if err := queueMessage("m0")(tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("rolled-back write reached the hook: %v", got)
	}
	err = db.Update(func(tx *Tx) error {
		queueMessage("m0p")(tx)
		panic("write panicked")
	})
	if err == nil {
		t.Fatal("a panicking write succeeded")
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("panicked write reached the hook: %v", got)
	}

	// In a group: the committer is held by a first write until two more
	// wait, so they share one transaction; the second files a message
	// then fails after the first wrote an event.
	if err := db.Update(func(tx *Tx) error { return tx.PutWebhook(Webhook{ID: "w1", AccountID: "a1"}) }); err != nil {
		t.Fatal(err)
	}
	rec.take()
	started, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() { holder <- db.Update(func(tx *Tx) error { close(started); <-release; return nil }) }()
	<-started
	waitOps := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); len(db.ops) != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes waiting, want %d", len(db.ops), n)
			}
		}
	}
	results := make(chan error, 2)
	go func() {
		results <- db.Update(func(tx *Tx) error {
			return tx.AppendEvent(Event{ID: "e1", AccountID: "a1", Type: "message.sent", ExpiresAt: *minuteAt(600)})
		})
	}()
	waitOps(1)
	failing := make(chan error, 1)
	go func() {
		failing <- db.Update(func(tx *Tx) error {
			if err := queueMessage("m1")(tx); err != nil {
				return err
			}
			return boom
		})
	}()
	waitOps(2)
	before := db.Commits()
	close(release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if err := <-results; err != nil {
		t.Fatal(err)
	}
	if err := <-failing; !errors.Is(err, boom) {
		t.Fatalf("failing write = %v", err)
	}
	if n := db.Commits() - before; n != 2 {
		t.Fatalf("%d commits after the holder's, want the holder's and one shared", n)
	}
	if got := rec.take(); len(got) != 1 || got[0] != OutboxWritten {
		t.Fatalf("hook saw %v, want only [outbox]: the failed write's message was rolled back", got)
	}

	remove()
	remove()
	if err := db.Update(queueMessage("m2")); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("removed hook called: %v", got)
	}
}
