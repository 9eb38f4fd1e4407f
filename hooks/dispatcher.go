package hooks

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

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
// Each turn of the loop is one transaction (cycle): it records the answers
// that came back, fans new events out, and claims as much due work as
// there are free workers, so the queue costs one commit per turn however
// many deliveries move.
func (d *Dispatcher) Run(ctx context.Context) error {
	sendCtx, stopSends := context.WithCancel(context.Background())
	defer stopSends()
	results := make(chan result, d.opts.Workers)
	perHost := map[string]int{}
	inflight := 0
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var wg sync.WaitGroup
	var batch []result
	for {
		free := d.opts.Workers - inflight
		jobs, err := d.cycle(batch, free, perHost)
		if err != nil {
			d.opts.Logger.Error("webhook delivery cycle", "err", err)
		}
		batch = batch[:0]
		for _, j := range jobs {
			inflight++
			perHost[j.host]++
			wg.Add(1)
			go func() {
				defer wg.Done()
				results <- d.safeSend(sendCtx, j)
			}()
		}
		// When fewer jobs were claimed than workers were free, what is due
		// waits on busy hosts: the next answer, not a timer, frees them.
		timer.Reset(d.untilNext(inflight, len(jobs) < free && inflight+len(jobs) > 0))
		select {
		case <-ctx.Done():
			stopSends()
			go func() { wg.Wait(); close(results) }()
			var rest []result
			for r := range results {
				rest = append(rest, r)
			}
			return d.record(rest)
		case <-d.kick:
		case <-timer.C:
		case r := <-results:
			batch = append(batch, r)
		drain:
			for {
				select {
				case r := <-results:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			for _, r := range batch {
				inflight--
				if perHost[r.job.host]--; perHost[r.job.host] <= 0 {
					delete(perHost, r.job.host)
				}
			}
		}
	}
}

// cycle records results, fans out waiting events and claims up to free due
// deliveries, in one transaction. With nothing to record it first looks
// (read-only) whether there is any work, so an idle turn costs no commit.
func (d *Dispatcher) cycle(results []result, free int, perHost map[string]int) ([]job, error) {
	if len(results) == 0 {
		busy := false
		d.db.View(func(tx *storage.Tx) error {
			if out, _ := tx.Outbox(1); len(out) > 0 {
				busy = true
			} else if free > 0 {
				busy = len(tx.DeliveryQueue(d.now(), 1, 1, nil)) > 0
			}
			return nil
		})
		if !busy {
			return nil, nil
		}
	}
	var jobs []job
	err := d.db.Update(func(tx *storage.Tx) error {
		jobs = nil
		if err := d.recordTx(tx, results); err != nil {
			return err
		}
		var err error
		if free > 0 {
			if jobs, err = d.claimTx(tx, free, perHost); err != nil {
				return err
			}
		}
		busy := maps.Clone(perHost)
		for _, j := range jobs {
			busy[j.host]++
		}
		// Fan out about as many events as can be sent now: a long turn
		// delays every answer waiting to be recorded.
		fresh, err := d.fanOutTx(tx, free-len(jobs), busy, max(2*free, 64))
		jobs = append(jobs, fresh...)
		return err
	})
	return jobs, err
}

func (d *Dispatcher) safeSend(ctx context.Context, j job) (r result) {
	defer func() {
		if p := recover(); p != nil {
			d.panics.Add(1)
			r = result{job: j, at: d.now(), err: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	return send(ctx, d.client, j, d.now())
}

// untilNext is how long to sleep before looking at the queue again. When
// due work is held back by per-host caps (blocked), only an answer or a kick
// can change that, so the wait is for the next due time after now.
func (d *Dispatcher) untilNext(inflight int, blocked bool) time.Duration {
	const poll = time.Minute
	if inflight >= d.opts.Workers {
		return poll
	}
	var next time.Time
	var ok bool
	d.db.View(func(tx *storage.Tx) error { next, ok = tx.NextDeliveryDue(); return nil })
	if !ok {
		return poll
	}
	wait := next.Sub(d.now())
	if wait <= 0 && blocked {
		return poll
	}
	return min(poll, max(time.Millisecond, wait))
}

// fanOut turns every waiting event into deliveries (used by tests).
func (d *Dispatcher) fanOut() error {
	for {
		var more bool
		err := d.db.Update(func(tx *storage.Tx) error {
			_, err := d.fanOutTx(tx, 0, nil, 500)
			out, _ := tx.Outbox(1)
			more = len(out) > 0
			return err
		})
		if err != nil || !more {
			return err
		}
	}
}

// fanOutTx turns up to limit waiting events into one delivery per matching
// webhook, and removes them from the outbox in the same transaction. Up to
// budget of the new deliveries whose host is not busy are created already
// claimed (lease and placeholder attempt saved, as claimTx does) and
// returned as jobs: a fresh event costs one write, not two.
func (d *Dispatcher) fanOutTx(tx *storage.Tx, budget int, busy map[string]int, limit int) ([]job, error) {
	entries, err := tx.Outbox(limit)
	if err != nil {
		return nil, err
	}
	var jobs []job
	hooksOf := map[string][]storage.Webhook{}
	now := d.now()
	lease := now.Add(d.opts.Timeout + 30*time.Second)
	for _, e := range entries {
		ev := e.Event
		if ev.ID != "" {
			subs, ok := hooksOf[ev.AccountID]
			if !ok {
				subs, _, err = tx.Webhooks(ev.AccountID, storage.ListOptions{Limit: 10000})
				if err != nil {
					return nil, err
				}
				hooksOf[ev.AccountID] = subs
			}
			var body []byte
			for _, w := range subs {
				if w.Test != ev.Test || !slices.Contains(w.Events, ev.Type) {
					continue
				}
				del := storage.Delivery{ID: uuid.Must(uuid.NewV7()).String(), WebhookID: w.ID, AccountID: w.AccountID,
					EventID: ev.ID, EventType: ev.Type, Status: storage.DeliveryPending, Attempts: []storage.DeliveryAttempt{},
					NextAttemptAt: &now, CreatedAt: now}
				h := hostOf(w.URL)
				if len(jobs) < budget && busy[h] < d.opts.PerHost {
					if body == nil {
						if body, err = tx.EventEnvelope(ev.AccountID, ev.ID); err != nil {
							return nil, err
						}
					}
					keys, err := signingKeys(w, now)
					if err != nil {
						return nil, err
					}
					del.NextAttemptAt = &lease
					del.Attempts = []storage.DeliveryAttempt{{At: now, Error: interrupted}}
					busy[h]++
					jobs = append(jobs, job{deliveryID: del.ID, url: w.URL, host: h, keys: keys, body: body,
						eventID: ev.ID, eventType: ev.Type})
				}
				if err := tx.InsertDelivery(del); err != nil {
					return nil, err
				}
			}
		}
		if err := tx.DoneOutbox(e.Seq); err != nil {
			return nil, err
		}
	}
	return jobs, nil
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

func (d *Dispatcher) claimTx(tx *storage.Tx, max int, perHost map[string]int) ([]job, error) {
	var jobs []job
	err := func() error {
		now := d.now()
		claimed := map[string]int{}
		webhooks := map[string]*storage.Webhook{}
		hookOf := func(id string) *storage.Webhook {
			if w, ok := webhooks[id]; ok {
				return w
			}
			w, err := tx.WebhookByID(id)
			if err != nil {
				webhooks[id] = nil
				return nil
			}
			webhooks[id] = &w
			return &w
		}
		skip := func(webhookID string) bool {
			w := hookOf(webhookID)
			if w == nil {
				return false
			}
			h := hostOf(w.URL)
			return perHost[h]+claimed[h] >= d.opts.PerHost
		}
		for _, q := range tx.DeliveryQueue(now, max, maxQueueScan, skip) {
			del, err := tx.Delivery(q.ID)
			if err != nil {
				continue
			}
			old := del
			w := hookOf(q.WebhookID)
			if w == nil || del.Status != storage.DeliveryPending {
				del.NextAttemptAt = nil
				if err := tx.ReplaceDelivery(old, del); err != nil {
					return err
				}
				continue
			}
			h := hostOf(w.URL)
			if perHost[h]+claimed[h] >= d.opts.PerHost {
				continue
			}
			if n := len(del.Attempts); n > 0 && del.Attempts[n-1].Error == interrupted {
				// The previous request's fate is unknown: count it as a
				// retryable failure.
				if del.Retries >= d.opts.MaxRetries {
					d.finish(&del, storage.DeliveryFailed, now)
					if err := tx.ReplaceDelivery(old, del); err != nil {
						return err
					}
					continue
				}
				del.Retries++
			}
			body, err := tx.EventEnvelope(del.AccountID, del.EventID)
			if err != nil {
				del.Attempts = append(del.Attempts, storage.DeliveryAttempt{At: now, Error: "the event has expired from the history"})
				d.finish(&del, storage.DeliveryFailed, now)
				if err := tx.ReplaceDelivery(old, del); err != nil {
					return err
				}
				continue
			}
			keys, err := signingKeys(*w, now)
			if err != nil {
				return err
			}
			lease := now.Add(d.opts.Timeout + 30*time.Second)
			del.NextAttemptAt = &lease
			del.Attempts = append(del.Attempts, storage.DeliveryAttempt{At: now, Error: interrupted})
			if err := tx.ReplaceDelivery(old, del); err != nil {
				return err
			}
			claimed[h]++
			jobs = append(jobs, job{deliveryID: del.ID, url: w.URL, host: h, keys: keys, body: body,
				eventID: del.EventID, eventType: del.EventType})
		}
		return nil
	}()
	return jobs, err
}

// signingKeys are the keys a request is signed with: the current secret,
// and the previous one while its rotation window lasts.
func signingKeys(w storage.Webhook, now time.Time) ([][]byte, error) {
	key, err := DecodeSecret(w.Secret)
	if err != nil {
		return nil, err
	}
	keys := [][]byte{key}
	if w.PreviousSecret != "" && w.PreviousUntil != nil && now.Before(*w.PreviousUntil) {
		prev, err := DecodeSecret(w.PreviousSecret)
		if err != nil {
			return nil, err
		}
		keys = append(keys, prev)
	}
	return keys, nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

// finish moves a delivery to a final status with its retention.
func (d *Dispatcher) finish(del *storage.Delivery, status string, now time.Time) {
	del.Status = status
	del.NextAttemptAt = nil
	if status == storage.DeliveryDelivered {
		del.DeliveredAt = &now
		del.ExpiresAt = now.Add(d.opts.DeliveredRetention)
	} else {
		del.FailedAt = &now
		del.ExpiresAt = now.Add(d.opts.FailedRetention)
	}
}

// record saves a batch of attempt results in one transaction and moves
// each delivery along the state machine.
func (d *Dispatcher) record(batch []result) error {
	if len(batch) == 0 {
		return nil
	}
	return d.db.Update(func(tx *storage.Tx) error { return d.recordTx(tx, batch) })
}

func (d *Dispatcher) recordTx(tx *storage.Tx, batch []result) error {
	err := func() error {
		now := d.now()
		for _, r := range batch {
			del, err := tx.Delivery(r.job.deliveryID)
			if err != nil || del.Status != storage.DeliveryPending || len(del.Attempts) == 0 {
				continue // deleted with its webhook, or already settled
			}
			old := del
			last := &del.Attempts[len(del.Attempts)-1]
			if r.aborted {
				// Shutdown cut the request off: undo the claim.
				del.Attempts = del.Attempts[:len(del.Attempts)-1]
				del.NextAttemptAt = &now
				if err := tx.ReplaceDelivery(old, del); err != nil {
					return err
				}
				continue
			}
			*last = storage.DeliveryAttempt{At: r.at, StatusCode: r.status, Error: r.err,
				LatencyMS: float64(r.latency.Microseconds()) / 1000, Response: r.response}
			outcome := Classify(r.status)
			if r.refused {
				outcome = Fail // the guard will refuse every retry too
			}
			switch outcome {
			case Delivered:
				d.finish(&del, storage.DeliveryDelivered, now)
			case Retry:
				if del.Retries >= d.opts.MaxRetries {
					d.finish(&del, storage.DeliveryFailed, now)
					break
				}
				delay := Backoff(del.Retries, d.opts.BaseDelay, d.opts.MaxDelay)
				if ra, ok := RetryAfter(r.status, r.retryAfter, now); ok {
					delay = min(ra, d.opts.MaxDelay)
				}
				del.Retries++
				next := now.Add(delay)
				del.NextAttemptAt = &next
			default:
				d.finish(&del, storage.DeliveryFailed, now)
			}
			if err := tx.ReplaceDelivery(old, del); err != nil {
				return err
			}
		}
		return nil
	}()
	return err
}
