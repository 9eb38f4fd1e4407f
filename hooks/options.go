package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Options configure a Dispatcher. Start from DefaultOptions and change what
// differs: New uses every field as given and refuses values that make no
// sense, so a zero never stands in for a default.
type Options struct {
	// BaseDelay is the wait before the first retry; each further retry
	// doubles it, and no wait is longer than MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// Timeout is one request's deadline, reading the answer included.
	Timeout time.Duration
	// MaxRetries is how many retries may follow the first attempt; 0: none.
	MaxRetries int
	// Workers caps the requests in flight; PerHost caps those to one
	// receiver host (the URL's host and port).
	Workers int
	PerHost int
	// Poll is the longest the dispatcher waits with nothing to wake it (no
	// kick, answer or retry falling due) before it looks at the store again.
	Poll time.Duration
	// FailedRetention and DeliveredRetention are how long finished
	// deliveries are kept before the sweeper removes them.
	FailedRetention    time.Duration
	DeliveredRetention time.Duration
	// Guard decides which addresses requests may reach.
	Guard Guard
	// Lookup resolves a receiver's host name: for every connection, and
	// (in app) when a webhook's URL is checked at create, so
	// that the check and the connection see the same addresses. serve
	// gives the --dns-server resolver.
	Lookup func(ctx context.Context, host string) ([]net.IPAddr, error)
	// ShutdownGrace is how long the requests in flight may go on after
	// Run's context ends (serve's --shutdown-grace): Run takes no new work
	// at once, saves the answers that come back within the grace, and cuts
	// off and puts back the requests still out when it is over. Zero cuts
	// them off at once.
	ShutdownGrace time.Duration
	// OutboxLeaseMargin is how much longer than Timeout a dispatcher's
	// lease on its outbox shards lasts (see storage.LeaseOutboxShards):
	// it renews the lease when half over, and when it dies the others
	// take its shards once the lease has ended.
	OutboxLeaseMargin time.Duration
	// Now is the one clock the dispatcher reads: attempt times, signature
	// timestamps, latencies, leases and due times.
	Now    func() time.Time
	Logger *slog.Logger
	// Answered, when set, is told the outcome of every request made
	// ("delivered", "retry" or "failed"; see OutcomeName), as soon as it
	// ends; a request cut off by shutdown is no attempt and is not told.
	// It runs on the sending goroutine and must be quick.
	Answered func(outcome string)
}

// DefaultOptions are the documented defaults (docs/webhooks.md): retries
// after 30 s, doubling up to 1 h, at most 3 of them; a 30 s deadline; 64
// requests in flight, 8 per host; a 1 min poll; failed deliveries kept 7
// days, delivered ones 30 days; only public addresses reachable; requests
// in flight may finish for 15 s after shutdown begins; outbox shard leases
// of the deadline plus 1 min; the system clock and resolver; no logging.
func DefaultOptions() Options {
	return Options{
		BaseDelay:          30 * time.Second,
		MaxDelay:           time.Hour,
		Timeout:            30 * time.Second,
		MaxRetries:         3,
		Workers:            64,
		PerHost:            8,
		Poll:               time.Minute,
		FailedRetention:    7 * 24 * time.Hour,
		DeliveredRetention: 30 * 24 * time.Hour,
		Lookup:             net.DefaultResolver.LookupIPAddr,
		ShutdownGrace:      15 * time.Second,
		OutboxLeaseMargin:  time.Minute,
		Now:                time.Now,
		Logger:             slog.New(slog.DiscardHandler),
	}
}

// check reports every option that makes no sense, naming it.
func (o Options) check() error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"base delay", o.BaseDelay}, {"max delay", o.MaxDelay}, {"timeout", o.Timeout}, {"poll", o.Poll},
		{"failed retention", o.FailedRetention}, {"delivered retention", o.DeliveredRetention},
		{"outbox lease margin", o.OutboxLeaseMargin}} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("hooks: %s must be positive, not %s", f.name, f.d))
		}
	}
	if o.MaxDelay < o.BaseDelay {
		errs = append(errs, fmt.Errorf("hooks: max delay %s is below base delay %s", o.MaxDelay, o.BaseDelay))
	}
	if o.ShutdownGrace < 0 {
		errs = append(errs, fmt.Errorf("hooks: shutdown grace must not be negative, not %s", o.ShutdownGrace))
	}
	if o.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("hooks: max retries must be 0 (none) or more, not %d", o.MaxRetries))
	}
	if o.Workers < 1 || o.PerHost < 1 {
		errs = append(errs, fmt.Errorf("hooks: workers (%d) and per-host requests (%d) must be at least 1", o.Workers, o.PerHost))
	}
	for _, p := range o.Guard.Allow {
		if !p.IsValid() {
			errs = append(errs, fmt.Errorf("hooks: guard allows an invalid address range %q", p))
		}
	}
	if o.Now == nil || o.Logger == nil || o.Lookup == nil {
		errs = append(errs, errors.New("hooks: Now, Lookup and Logger are required"))
	}
	return errors.Join(errs...)
}
