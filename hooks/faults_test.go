package hooks

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// logBuffer collects log output; safe for the dispatcher's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *logBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// Store failures are logged or returned, never dropped: a failed read of
// the queue is logged (nothing is claimed), a failed write is logged and
// tried again, and Run returns both the answers it could not save at
// shutdown and the outbox lease it could not give up. The event whose
// answer was lost is sent again once the lease has run out.
func TestStoreFaultsAreReportedNotDropped(t *testing.T) {
	var failReads, failWrites atomic.Bool
	fault := func(on *atomic.Bool) func() error {
		return func() error {
			if on.Load() {
				return errors.New("disk on fire")
			}
			return nil
		}
	}
	logs := &logBuffer{}
	h := &harness{t: t, dir: t.TempDir(), clock: &fakeClock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)},
		dbOpts: storagetest.Options(t)}
	h.dbOpts.ReadFault, h.dbOpts.WriteFault = fault(&failReads), fault(&failWrites)
	h.opts = testOptions(func(o *Options) { o.Now, o.Logger = h.clock.Now, slog.New(slog.NewTextHandler(logs, nil)) })
	h.open()
	release := make(chan struct{})
	rec := newReceiver(t, hangUntil(release))
	w := h.webhook(rec.URL, "message.sent")
	ev := h.event("message.sent")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.d.Run(ctx) }()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("never: %s\nlog:\n%s", what, logs)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	waitFor("the request went out", func() bool { return rec.count() == 1 })
	failReads.Store(true)
	failWrites.Store(true)
	close(release)
	waitFor("the failures logged", func() bool {
		l := logs.String()
		return strings.Contains(l, `msg="webhook queue" err="disk on fire"`) &&
			strings.Contains(l, `msg="webhook delivery write" err="disk on fire"`)
	})
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "save the answers at shutdown: disk on fire") ||
		!strings.Contains(err.Error(), "release the outbox lease: disk on fire") {
		t.Fatalf("Run returned %v", err)
	}

	failReads.Store(false)
	failWrites.Store(false)
	h.clock.Add(h.opts.Timeout + time.Minute) // the lease left behind runs out
	h.runUntil("delivered again", func() bool { return h.statusOf(w, ev) == storage.DeliveryDelivered })
	if rec.count() != 2 {
		t.Errorf("receiver saw %d requests, want 2 (the unsaved answer's request is sent again)", rec.count())
	}
}
