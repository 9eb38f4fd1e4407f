package hooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"mailbolt/storage"
)

// maxQueueScan bounds how many queue entries one claim looks at, so a
// backlog behind a busy host costs a bounded scan, not O(queue).
const maxQueueScan = 2000

// Dispatcher fans events out to webhooks and delivers them.
type Dispatcher struct {
	db     *storage.DB
	opts   Options
	client *http.Client
	kick   chan struct{}
	panics atomic.Int64
	holder atomic.Pointer[string] // the running Run's outbox lease holder
}

// New builds a Dispatcher over db, or says which options make no sense.
// Wake it with Kick when events or a replay are committed.
func New(db *storage.DB, opts Options) (*Dispatcher, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	return &Dispatcher{db: db, opts: opts, client: newClient(opts.Guard, opts.Lookup, opts.Timeout, opts.PerHost), kick: make(chan struct{}, 1)}, nil
}

// Options returns the options the dispatcher runs with.
func (d *Dispatcher) Options() Options { return d.opts }

// Kick wakes the dispatcher: new events or a replay are waiting.
func (d *Dispatcher) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Panics counts panics recovered while sending.
func (d *Dispatcher) Panics() int64 { return d.panics.Load() }

func (d *Dispatcher) now() time.Time { return d.opts.Now().UTC() }

// Run delivers until ctx ends. Requests in flight at shutdown are cut off
// and put back in the queue, not counted as attempts.
//
// Fresh events go out straight from the outbox (see freshEvent); retries
// and events whose receiver host is at its cap go through the delivery
// queue, where a delivery is claimed (lease and placeholder attempt saved)
// before it is sent. Writes run one at a time in the background, each
// saving every answer that came back since the previous one, so the loop
// keeps sending while a commit waits for its fsync.
//
// It returns what could not be saved at shutdown: answers not saved are
// sent again after the restart. A lease on the outbox it could not give
// up keeps other dispatchers from sending fresh events until it ends.
func (d *Dispatcher) Run(ctx context.Context) (err error) {
	l := d.newLoop()
	defer l.stopWorkers()
	defer l.stopSends()
	defer func() {
		if rerr := l.releaseOutbox(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("release the outbox lease: %w", rerr))
		}
	}()
	defer l.timer.Stop()
	return l.run(ctx)
}

func (d *Dispatcher) safeSend(ctx context.Context, j job) (r result) {
	defer func() {
		if p := recover(); p != nil {
			d.panics.Add(1)
			r = result{job: j, at: d.now(), err: fmt.Sprintf("internal error: %v", p)}
		}
		r.answered = d.now()
		d.report(r)
	}()
	return send(ctx, d.client, j, d.opts.Now)
}

// outcome is what an attempt's answer means for its delivery.
func (r result) outcome() Outcome {
	if r.refused {
		return Fail // the guard will refuse every retry too
	}
	return Classify(r.status)
}

// OutcomeName names an outcome in the metrics and the log.
func OutcomeName(o Outcome) string {
	switch o {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	}
	return "failed"
}

// report tells Options.Answered of an attempt, and logs one line when it
// failed (docs/operations.md, "Logs"); an attempt cut off by shutdown is
// neither.
func (d *Dispatcher) report(r result) {
	if r.aborted {
		return
	}
	o := r.outcome()
	if d.opts.Answered != nil {
		d.opts.Answered(OutcomeName(o))
	}
	if o == Delivered {
		return
	}
	d.opts.Logger.Warn("webhook delivery failed", "delivery_id", r.job.deliveryID, "event_id", r.job.eventID,
		"event_type", r.job.eventType, "host", r.job.host, "status", r.status, "err", r.err,
		"latency_ms", float64(r.latency.Microseconds())/1000, "outcome", OutcomeName(o))
}
