package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"mailbolt/storage"
)

// Options configure a Queue. Start from DefaultOptions: every field is
// used as given.
type Options struct {
	// Sender delivers live mail. Without one, live messages fail each
	// attempt temporarily ("no outbound delivery configured") and wait.
	Sender Sender
	// RetryBase is the first delay after a temporary failure; each further
	// one doubles, up to RetryMax.
	RetryBase, RetryMax time.Duration
	// QueueLifetime is how long a recipient keeps being retried after its
	// message was accepted for delivery; then it soft-bounces.
	QueueLifetime time.Duration
	// Lease is how long a claimed message is held by one attempt before
	// another may take it over (serve's --delivery-lease). A restart on
	// the embedded file takes its own leases back at once; on a database
	// shared by several nodes a dead node's leases are taken over when
	// they end.
	Lease time.Duration
	// Concurrency is how many messages are in flight at once.
	Concurrency int
	// ClaimBatch caps the messages claimed in one transaction.
	ClaimBatch int
	// Poll is the longest the queue sleeps without a wake-up.
	Poll time.Duration
	// EventRetention is how long the events the queue records are kept.
	EventRetention time.Duration
	// ShutdownGrace is how long the attempts in flight may go on after
	// Run's context ends (serve's --shutdown-grace): Run stops claiming at
	// once, and an attempt still running when the grace is over is cut off
	// and recorded as interrupted. Zero cuts them off at once.
	ShutdownGrace time.Duration
	// UnsubscribeHeaders, when set, gives the List-Unsubscribe fields
	// (RFC 2369, RFC 8058) of recipient i of m, for messages that carry
	// them: each such recipient then gets its own copy and signature.
	UnsubscribeHeaders func(m storage.Message, i int) []byte
	// ReturnPathKey is the secret under which each recipient's VERP
	// return path carries its MAC (ReturnPath): at least 16 bytes.
	ReturnPathKey []byte
	// Attempted, when set, is told of every recipient's attempt once its
	// outcome is committed (serve counts them for the metrics). It runs on
	// the delivery worker and must be quick.
	Attempted func(Attempt)
	// LogRecipients puts the full recipient address in the delivery log
	// line (--log-recipients); without it only the domain is logged.
	LogRecipients bool
	Now           func() time.Time
	Logger        *slog.Logger
}

// DefaultOptions are the documented defaults (docs/delivery.md): retries
// after 5 min, doubling up to 2 h, for 120 h; a 15 min lease; 64 messages
// in flight, claimed 256 at a time; a 1 s poll; events kept 30 days;
// attempts in flight may finish for 15 s after shutdown begins.
func DefaultOptions() Options {
	return Options{
		RetryBase:      5 * time.Minute,
		RetryMax:       2 * time.Hour,
		QueueLifetime:  120 * time.Hour,
		Lease:          15 * time.Minute,
		Concurrency:    64,
		ClaimBatch:     256,
		Poll:           time.Second,
		EventRetention: 30 * 24 * time.Hour,
		ShutdownGrace:  15 * time.Second,
		Now:            time.Now,
		Logger:         slog.New(slog.DiscardHandler),
	}
}

func (o Options) check() error {
	var errs []error
	for name, d := range map[string]time.Duration{"retry base": o.RetryBase, "retry max": o.RetryMax,
		"queue lifetime": o.QueueLifetime, "lease": o.Lease, "poll": o.Poll, "event retention": o.EventRetention} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("queue: %s must be positive, not %s", name, d))
		}
	}
	if o.ShutdownGrace < 0 {
		errs = append(errs, fmt.Errorf("queue: shutdown grace must not be negative, not %s", o.ShutdownGrace))
	}
	if o.RetryMax < o.RetryBase {
		errs = append(errs, fmt.Errorf("queue: retry max %s is below retry base %s", o.RetryMax, o.RetryBase))
	}
	if o.Concurrency < 1 || o.ClaimBatch < 1 {
		errs = append(errs, fmt.Errorf("queue: concurrency (%d) and claim batch (%d) must be at least 1", o.Concurrency, o.ClaimBatch))
	}
	if len(o.ReturnPathKey) < 16 {
		errs = append(errs, errors.New("queue: ReturnPathKey must hold at least 16 bytes, or bounce addresses could be forged"))
	}
	if o.Now == nil || o.Logger == nil {
		errs = append(errs, errors.New("queue: Now and Logger are required"))
	}
	return errors.Join(errs...)
}

// Queue is the delivery worker over one database: it claims due messages,
// sends them, and records what happened, with the events and suppressions
// that follow.
type Queue struct {
	db      *storage.DB
	opts    Options
	log     *slog.Logger
	kick    chan struct{}
	signers sync.Map // domain id/selector -> crypto.Signer
	panics  atomic.Int64
}

// New builds a Queue over db. Wake it with Kick when a transaction files a
// message in the queue (storage's after-commit hooks do).
func New(db *storage.DB, opts Options) (*Queue, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	return &Queue{db: db, opts: opts, log: opts.Logger, kick: make(chan struct{}, 1)}, nil
}

// Options returns the options the queue runs with.
func (q *Queue) Options() Options { return q.opts }

func (q *Queue) now() time.Time { return q.opts.Now().UTC() }

// Kick wakes the queue: messages are waiting. It never blocks.
func (q *Queue) Kick() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Panics counts panics recovered in delivery attempts; tests assert zero.
func (q *Queue) Panics() int64 { return q.panics.Load() }

// Run delivers until ctx ends, then stops claiming and waits for the
// attempts in flight. Those are not cut off with ctx: an SMTP transaction
// cut short may already have been accepted by the receiving server, and
// retrying it after the restart would send the message twice. They get
// ShutdownGrace to finish and have their outcome recorded; an attempt still
// running then is cut off, recorded as interrupted and retried at once on
// the next start (at least once: the receiver may get it twice). Run first
// takes back the leases a previous process left (not on a shared database:
// see recoverLeases).
func (q *Queue) Run(ctx context.Context) error {
	o := q.opts
	if err := q.recoverLeases(); err != nil {
		q.log.Error("recovering delivery leases failed", "err", err)
	}
	// attempts ends only when the grace after ctx is over.
	attempts, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	sem := make(chan struct{}, o.Concurrency)
	done := make(chan struct{}, 1)
	var wg sync.WaitGroup
	// The attempts run on Concurrency long-lived workers rather than a
	// goroutine each: a worker's stack has grown to what an attempt needs
	// once, not again for every message.
	work := make(chan job)
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				q.attempt(attempts, j)
				<-sem
				select {
				case done <- struct{}{}:
				default:
				}
			}
		}()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for ctx.Err() == nil {
		free := o.Concurrency - len(sem)
		var next time.Time
		if free > 0 {
			jobs, n, err := q.claimDue(q.now(), min(free, o.ClaimBatch))
			if err != nil {
				q.log.Error("claiming messages failed", "err", err)
			}
			next = n
			for _, j := range jobs {
				sem <- struct{}{}
				work <- j
			}
			if len(jobs) == min(free, o.ClaimBatch) {
				continue // there may be more due now
			}
		}
		wait := o.Poll
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(q.now()), time.Millisecond))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
		case <-q.kick:
		case <-done:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
	if n := len(sem); n > 0 {
		q.log.Info("waiting for delivery attempts in flight", "attempts", n, "grace", o.ShutdownGrace.String())
	}
	close(work)
	cut := time.AfterFunc(o.ShutdownGrace, abandon)
	defer cut.Stop()
	wg.Wait()
	return nil
}

// attempt delivers one job, recovering a panic: the message keeps its
// lease and is tried again when the lease ends.
func (q *Queue) attempt(ctx context.Context, j job) {
	defer func() {
		if r := recover(); r != nil {
			q.panics.Add(1)
			q.log.Error("delivery attempt panicked", "message_id", j.msg.ID, "panic", fmt.Sprint(r))
		}
	}()
	q.deliver(ctx, j)
}

// Drain delivers everything due at the clock's time now and waits for
// each attempt, one claim after another, until nothing is due: Run's work
// without its waiting, for tools and tests that drive the clock.
func (q *Queue) Drain(ctx context.Context) error {
	for ctx.Err() == nil {
		jobs, _, err := q.claimDue(q.now(), q.opts.ClaimBatch)
		if err != nil || len(jobs) == 0 {
			return err
		}
		for _, j := range jobs {
			q.attempt(ctx, j)
		}
	}
	return ctx.Err()
}
