package hooks

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"mailbolt/storage"
)

// Options configure a Dispatcher. Zero values take the documented defaults.
type Options struct {
	BaseDelay          time.Duration // first retry delay; 30 s
	MaxDelay           time.Duration // no single delay longer; 1 h
	Timeout            time.Duration // response deadline; 30 s
	MaxRetries         int           // retries after the first attempt; 3 (negative: none)
	Workers            int           // requests in flight; 64
	PerHost            int           // requests in flight per receiver host; 8
	FailedRetention    time.Duration // failed deliveries kept; 7 days
	DeliveredRetention time.Duration // delivered deliveries kept; 30 days
	Guard              Guard
	Now                func() time.Time
	Logger             *slog.Logger
}

// maxQueueScan bounds how many queue entries one claim looks at, so a
// backlog behind a busy host costs a bounded scan, not O(queue).
const maxQueueScan = 2000

// interrupted marks an attempt whose answer was never recorded: the
// process stopped while the request was out.
const interrupted = Interrupted

// Interrupted is the error of an attempt whose answer was never recorded.
// While the delivery's lease runs it means the request is in flight.
const Interrupted = "interrupted: no answer was recorded (the server stopped during the request)"

// Dispatcher fans events out to webhooks and delivers them.
type Dispatcher struct {
	db     *storage.DB
	opts   Options
	client *http.Client
	kick   chan struct{}
	panics atomic.Int64
}

// New builds a Dispatcher over db.
func New(db *storage.DB, opts Options) *Dispatcher {
	if opts.BaseDelay == 0 {
		opts.BaseDelay = 30 * time.Second
	}
	if opts.MaxDelay == 0 {
		opts.MaxDelay = time.Hour
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 3
	} else if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.Workers == 0 {
		opts.Workers = 64
	}
	if opts.PerHost == 0 {
		opts.PerHost = 8
	}
	if opts.FailedRetention == 0 {
		opts.FailedRetention = 7 * 24 * time.Hour
	}
	if opts.DeliveredRetention == 0 {
		opts.DeliveredRetention = 30 * 24 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{db: db, opts: opts, client: newClient(opts.Guard, opts.Timeout, opts.PerHost), kick: make(chan struct{}, 1)}
}

// Options returns the effective options.
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
func (d *Dispatcher) Run(ctx context.Context) error {
	l := d.newLoop()
	defer l.stopSends()
	defer l.releaseOutbox()
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
	}()
	return send(ctx, d.client, j, d.opts.Now)
}
