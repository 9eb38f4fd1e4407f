package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"mailbolt/grader"
	"mailbolt/hooks"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Options configure an App. Start from DefaultOptions: every field is
// used as given.
type Options struct {
	Now            func() time.Time // clock
	Logger         *slog.Logger
	IdempotencyTTL time.Duration // how long an idempotent answer is kept
	SweepInterval  time.Duration // how often expired records are removed
	SweepBatch     int           // records removed per transaction
	KeyUsageEvery  time.Duration // last_used_at is written at most this often per key
	Domains        DomainOptions
	// DomainCheckTick is how often the scheduler looks for domains due a
	// re-check.
	DomainCheckTick time.Duration
	// EventRetention is how long events are kept in the history.
	EventRetention time.Duration
	// MessageRetention is how long a message is kept once its queue
	// lifetime is over.
	MessageRetention time.Duration
	Webhooks         WebhookOptions
	// Delivery configures the delivery queue; its Now, Logger,
	// EventRetention and UnsubscribeHeaders come from the App.
	Delivery queue.Options
	// PublicURL is the base of tracking and unsubscribe links
	// (--public-url), e.g. https://mail.example.com.
	PublicURL string
	// GeoDB, when set, locates who opens and clicks.
	GeoDB *GeoDB
	// SystemFrom is the sender of mail the service sends itself (team
	// invitations); none when empty.
	SystemFrom string
	Grader     GraderOptions
	// ReleaseMappedEvery is how often the database file's pages that
	// reads touched are handed back to the kernel (see
	// storage.DB.ReleaseMapped), so resident memory follows what is in use,
	// not the file's size.
	ReleaseMappedEvery time.Duration
	// MaxMessageSize bounds one message as built for the wire, and a
	// template's rendered output (--max-message-size).
	MaxMessageSize int64
	// RenderTimeout is the time budget of one template render.
	RenderTimeout time.Duration
	// RenderSteps bounds the tag visits one render could make over its
	// data (see RenderLimits).
	RenderSteps int64
	// Sessions bound dashboard sessions.
	Sessions SessionOptions
	// InvitationTTL is how long a team invitation can be accepted.
	InvitationTTL time.Duration
}

// DefaultOptions are the documented defaults (docs/configuration.md):
// idempotent answers kept 24 h, a sweep every minute of at most 500 records
// per transaction, key usage written at most once a minute per key, domains
// re-checked daily (looked for every minute, 15 s per check, 7 days of
// DKIM rotation grace), events and messages kept 30 days, webhooks and the
// delivery queue on their own packages' defaults with secrets rotating out
// over 24 h, grader checks cached 5 min, mapped pages handed back every
// second, messages of at most 10 MiB, template renders of at most 1 s and
// 1,000,000 tag visits, dashboard sessions ending after 12 h idle or 7
// days, team invitations accepted within 7 days, the system clock and no
// log.
func DefaultOptions() Options {
	return Options{
		Now:            time.Now,
		Logger:         slog.New(slog.DiscardHandler),
		IdempotencyTTL: 24 * time.Hour,
		SweepInterval:  time.Minute,
		SweepBatch:     500,
		KeyUsageEvery:  time.Minute,
		Domains: DomainOptions{Hostname: "localhost", RecheckInterval: 24 * time.Hour,
			RotationGrace: 7 * 24 * time.Hour, CheckTimeout: 15 * time.Second},
		DomainCheckTick:    time.Minute,
		EventRetention:     30 * 24 * time.Hour,
		MessageRetention:   30 * 24 * time.Hour,
		Webhooks:           WebhookOptions{RotationWindow: 24 * time.Hour, Dispatch: hooks.DefaultOptions()},
		Delivery:           queue.DefaultOptions(),
		Grader:             GraderOptions{CacheTTL: 5 * time.Minute, Config: grader.DefaultConfig()},
		ReleaseMappedEvery: time.Second,
		MaxMessageSize:     10 << 20,
		RenderTimeout:      time.Second,
		RenderSteps:        1_000_000,
		Sessions:           SessionOptions{IdleTimeout: 12 * time.Hour, MaxAge: 7 * 24 * time.Hour},
		InvitationTTL:      7 * 24 * time.Hour,
	}
}

func (o Options) check() error {
	for name, d := range map[string]time.Duration{"idempotency TTL": o.IdempotencyTTL, "sweep interval": o.SweepInterval,
		"key usage interval": o.KeyUsageEvery, "domain check tick": o.DomainCheckTick, "event retention": o.EventRetention,
		"message retention": o.MessageRetention, "mapped-page release interval": o.ReleaseMappedEvery,
		"grader cache TTL": o.Grader.CacheTTL, "webhook secret rotation window": o.Webhooks.RotationWindow,
		"domain recheck interval": o.Domains.RecheckInterval, "DKIM rotation grace": o.Domains.RotationGrace,
		"domain check timeout": o.Domains.CheckTimeout, "render timeout": o.RenderTimeout,
		"session idle timeout": o.Sessions.IdleTimeout, "session lifetime": o.Sessions.MaxAge,
		"invitation lifetime": o.InvitationTTL} {
		if d <= 0 {
			return fmt.Errorf("app: the %s must be positive", name)
		}
	}
	switch {
	case o.Now == nil || o.Logger == nil:
		return errors.New("app: a clock and a logger are needed (slog.DiscardHandler for no log)")
	case o.SweepBatch < 1:
		return errors.New("app: the sweep batch must be 1 or more")
	case o.MaxMessageSize < 1 || o.RenderSteps < 1:
		return errors.New("app: the message size limit and the render step limit must be 1 or more")
	case o.Domains.Hostname == "":
		return errors.New("app: the mail host name is needed")
	}
	return nil
}

// WebhookOptions configure webhooks.
type WebhookOptions struct {
	// RotationWindow is how long a rotated-out secret keeps signing.
	RotationWindow time.Duration
	// Dispatch configures the webhook worker: its Guard and its Lookup
	// also check a webhook's URL when it is created (one resolver for the
	// check and the connections), and its FailedRetention
	// is how long a failed delivery may be replayed. Its Now and Logger are
	// replaced by the App's own.
	Dispatch hooks.Options
}

// App is the set of use cases over one database.
type App struct {
	db   *storage.DB
	opts Options
	log  *slog.Logger

	idemMu   sync.Mutex
	inflight map[string]chan struct{}

	usageMu   sync.Mutex
	usageSeen map[string]time.Time
	usage     chan string

	panics   atomic.Int64
	running  atomic.Bool // Run is running its workers
	stopping atomic.Bool // BeginShutdown was called
	hooks    *hooks.Dispatcher
	queue    *queue.Queue

	tokenKey []byte // signs tracking and unsubscribe links
	// cursorKey signs list cursors (SealCursor).
	cursorKey []byte
	// returnPathKey is the key of the MAC in bounce addresses
	// (queue.ReturnPath), and returnPathSince when this database's mail
	// started carrying it: old-form addresses are honoured for a while.
	returnPathKey   []byte
	returnPathSince time.Time
	graderCache     graderCache
	// smtpRate counts SMTP-submitted messages per key per second
	// (submission_smtp.go), across nodes (counters.go).
	smtpRate *Limiter
}

// New builds an App over db. It fails when the database cannot be read or
// holds no server secret: tracking and unsubscribe links would be signed
// with an empty key, and anyone could forge them.
func New(db *storage.DB, opts Options) (*App, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	a := &App{
		db: db, opts: opts, log: opts.Logger,
		inflight:  map[string]chan struct{}{},
		usageSeen: map[string]time.Time{},
		usage:     make(chan string, 1024),
	}
	a.smtpRate = a.NewLimiter("smtp-key")
	var err error
	if a.hooks, err = hooks.New(db, a.hooksOptions()); err != nil {
		return nil, err
	}
	var secret []byte
	if err := db.View(func(tx *storage.Tx) (err error) { secret, err = tx.ServerSecret(); return err }); err != nil {
		return nil, fmt.Errorf("read the server secret: %w", err)
	}
	if len(secret) < minServerSecret {
		return nil, fmt.Errorf("the database holds no server secret (%d bytes): it was not migrated", len(secret))
	}
	a.tokenKey, a.returnPathKey, a.cursorKey = tokenKey(secret), returnPathKey(secret), cursorKey(secret)
	if a.returnPathSince, err = recordReturnPathSince(db, a.Now()); err != nil {
		return nil, err
	}
	qo := opts.Delivery
	qo.Now, qo.Logger, qo.EventRetention, qo.UnsubscribeHeaders = opts.Now, opts.Logger, opts.EventRetention, a.unsubscribeHeaders
	qo.ReturnPathKey = a.returnPathKey
	if a.queue, err = queue.New(db, qo); err != nil {
		return nil, err
	}
	db.AfterCommit(a.wake)
	return a, nil
}

// wake is the one after-commit hook: it wakes the worker that waits for
// what a commit filed, whichever use case or worker wrote it. The App lives
// as long as its database, so the hook is never removed.
func (a *App) wake(c storage.Change) {
	if c&(storage.OutboxWritten|storage.WebhookQueueWritten) != 0 {
		a.hooks.Kick()
	}
	if c&storage.MessageQueueWritten != 0 {
		a.queue.Kick()
	}
}

// minServerSecret is the shortest server secret accepted: migration 7
// writes 32 random bytes.
const minServerSecret = 32

// SetPublicURL sets the base of tracking and unsubscribe links when it is
// known only once the server listens. Call it before serving.
func (a *App) SetPublicURL(u string) { a.opts.PublicURL = u }

// PublicURL is the base of the links the server hands out (--public-url,
// or the one derived from the HTTP address).
func (a *App) PublicURL() string { return a.opts.PublicURL }

// DB is the database the App works on.
func (a *App) DB() *storage.DB { return a.db }

// Now is the App's clock, in UTC.
func (a *App) Now() time.Time { return a.opts.Now().UTC() }

// Panics counts panics recovered in background workers; tests assert zero.
func (a *App) Panics() int64 { return a.panics.Load() + a.hooks.Panics() + a.queue.Panics() }

// Run runs the background workers (retention sweeper, key-usage writer)
// until ctx ends, then waits for them to stop.
func (a *App) Run(ctx context.Context) error {
	a.running.Store(true)
	defer a.running.Store(false)
	var wg sync.WaitGroup
	for name, worker := range map[string]func(context.Context){
		"sweeper":       a.runSweeper,
		"key_usage":     a.runKeyUsage,
		"domain_checks": a.runDomainChecks,
		"webhooks": func(ctx context.Context) {
			if err := a.hooks.Run(ctx); err != nil {
				a.log.Error("webhook dispatcher stopped with an error", "err", err)
			}
		},
		"delivery": func(ctx context.Context) {
			if err := a.queue.Run(ctx); err != nil {
				a.log.Error("delivery queue stopped with an error", "err", err)
			}
		},
		"release_mapped": func(ctx context.Context) {
			a.every(ctx, a.opts.ReleaseMappedEvery, "releasing mapped pages", func(context.Context) error {
				return a.db.ReleaseMapped()
			})
		},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.supervise(ctx, name, worker)
		}()
	}
	wg.Wait()
	return nil
}

// supervise runs worker, restarting it after a recovered panic, until ctx ends.
func (a *App) supervise(ctx context.Context, name string, worker func(context.Context)) {
	for ctx.Err() == nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					a.panics.Add(1)
					a.log.Error("worker panicked", "worker", name, "panic", fmt.Sprint(r))
				}
			}()
			worker(ctx)
		}()
		if ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// NewID returns a fresh time-ordered resource id (UUIDv7).
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// storageErr maps a storage failure to the caller's view of it.
func storageErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return NotFound(what)
	case errors.Is(err, storage.ErrExists):
		return Conflict(what + " already exists")
	}
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	return Internal(err)
}

// everyLeased is every for periodic work that several nodes sharing one
// database must not all do: each round first takes the job's lease
// (storage.DB.LeaseJob, for two intervals) and is skipped while another
// node holds it. The holder renews it every round; when it stops (killed),
// another node takes the job over at its first round after the lease ends,
// and when it stops cleanly it releases the lease at once.
func (a *App) everyLeased(ctx context.Context, interval time.Duration, job, what string, fn func(context.Context) error) {
	held := false
	defer func() {
		if !held {
			return
		}
		if err := a.db.ReleaseJob(job); err != nil {
			a.log.Warn("releasing a periodic job's lease failed", "job", job, "err", err)
		}
	}()
	a.every(ctx, interval, what, func(ctx context.Context) error {
		ran, err := a.leasedRound(ctx, job, 2*interval, fn)
		held = held || ran
		return err
	})
}

// leasedRound runs one round of job if this node takes (or holds) its
// lease for lease; ran says whether it did.
func (a *App) leasedRound(ctx context.Context, job string, lease time.Duration, fn func(context.Context) error) (ran bool, err error) {
	ok, err := a.db.LeaseJob(job, a.Now(), lease)
	if err != nil || !ok {
		return false, err
	}
	return true, fn(ctx)
}

// every runs fn each interval until ctx ends, logging its error under what.
func (a *App) every(ctx context.Context, interval time.Duration, what string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				a.log.Error(what+" failed", "err", err)
			}
		}
	}
}
