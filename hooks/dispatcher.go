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

// freshEvent is an event taken from the outbox and sent at once, without a
// claim written first: until every answer is back its deliveries exist only
// in memory, and its outbox entry is the durable record that it still has
// to be delivered. The answers are then saved as new deliveries in the
// transaction that removes the entry, so a crash before that re-sends the
// event (at least once), and never loses it.
type freshEvent struct {
	seq     uint64
	left    int // requests still out
	results []result
}

// writeIn is what one background transaction of the loop saves and claims.
type writeIn struct {
	results []result              // answers for deliveries claimed from the queue
	fresh   []*freshEvent         // events whose every answer is back
	queue   []storage.OutboxEntry // events to queue as pending deliveries (a host was busy) or drop
	claim   int                   // due deliveries to claim from the queue
	perHost map[string]int        // requests in flight per host, for the claim
}

type writeOut struct {
	in   writeIn
	jobs []job
	err  error
}

// queueBatch bounds the outbox entries held in memory to be queued (their
// hosts at the cap): with a backlog for a busy host, the outbox moves to
// the queue a batch per transaction, not all at once into memory.
const queueBatch = 500

// maxUnsaved bounds the answers held in memory waiting to be saved.
const maxUnsaved = 4096

// writeRetry is how long the loop waits after a failed write before it
// tries to save the same answers again.
const writeRetry = time.Second

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
	sendCtx, stopSends := context.WithCancel(context.Background())
	defer stopSends()
	results := make(chan result, d.opts.Workers)
	wrote := make(chan writeOut, 1)
	perHost := map[string]int{}
	fresh := map[uint64]*freshEvent{}
	inflight := 0
	// Sending straight from the outbox is leased through storage to one
	// dispatcher at a time (see storage.Tx.LeaseOutbox); the lease is
	// renewed well before it ends and given up when Run returns.
	holder := uuid.Must(uuid.NewV7()).String()
	var leaseUntil, leaseRetry time.Time
	defer d.db.Update(func(tx *storage.Tx) error { return tx.ReleaseOutbox(holder) })
	leaseFor := d.opts.Timeout + time.Minute
	ownOutbox := func() bool {
		now := d.now()
		if now.Before(leaseUntil.Add(-leaseFor / 2)) {
			return true
		}
		if now.Before(leaseRetry) {
			return false
		}
		var ok bool
		err := d.db.Update(func(tx *storage.Tx) error { ok = tx.LeaseOutbox(holder, now, now.Add(leaseFor)); return nil })
		if err != nil || !ok {
			leaseUntil, leaseRetry = time.Time{}, now.Add(leaseFor/4)
			return false
		}
		leaseUntil = now.Add(leaseFor)
		return true
	}
	var (
		kicked     bool // a kick came while a write was running
		wg         sync.WaitGroup
		batch      []result              // queued deliveries' answers to save
		ready      []*freshEvent         // fresh events to save
		toQueue    []storage.OutboxEntry // outbox entries to queue or drop
		cursor     uint64                // outbox entries up to here are taken
		writing    bool                  // a write is running
		claiming   bool                  // ... and it claims from the queue
		canClaim   = true                // false while due work waits on busy hosts
		writeAfter time.Time             // after a failed write
	)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	launch := func(jobs []job) {
		for _, j := range jobs {
			inflight++
			perHost[j.host]++
			wg.Add(1)
			go func() {
				defer wg.Done()
				results <- d.safeSend(sendCtx, j)
			}()
		}
	}
	// settle takes an answer off the books and files it for saving.
	settle := func(r result) {
		inflight--
		if perHost[r.job.host]--; perHost[r.job.host] <= 0 {
			delete(perHost, r.job.host)
		}
		if !r.job.fresh {
			batch = append(batch, r)
			return
		}
		ev := fresh[r.job.seq]
		ev.results = append(ev.results, r)
		if ev.left--; ev.left == 0 {
			delete(fresh, ev.seq)
			ready = append(ready, ev)
		}
	}
	startWrite := func(in writeIn) {
		writing, claiming, kicked = true, in.claim > 0, false
		go func() {
			jobs, err := d.write(in)
			wrote <- writeOut{in: in, jobs: jobs, err: err}
		}()
	}
	// wrote handles the end of a write; launchJobs is false at shutdown,
	// when claimed jobs are put back instead of sent.
	finishWrite := func(w writeOut, launchJobs bool) {
		writing, claiming = false, false
		if w.err != nil {
			d.opts.Logger.Error("webhook delivery write", "err", w.err)
			batch = append(w.in.results, batch...)
			ready = append(w.in.fresh, ready...)
			toQueue = append(w.in.queue, toQueue...)
			writeAfter = time.Now().Add(writeRetry)
			return
		}
		if w.in.claim > 0 && len(w.jobs) < w.in.claim && !kicked {
			// What is due now waits on busy hosts: the next answer, not
			// a timer, frees them. (A kick meanwhile may have queued
			// work the claim did not see.)
			canClaim = false
		}
		if launchJobs {
			launch(w.jobs)
			return
		}
		for _, j := range w.jobs {
			batch = append(batch, result{job: j, aborted: true})
		}
	}
	for {
		wait := time.Minute
		if !writing && time.Now().After(writeAfter) {
			in := writeIn{results: batch, fresh: ready, queue: toQueue}
			var due time.Time
			var queued bool
			d.db.View(func(tx *storage.Tx) error { due, queued = tx.NextDeliveryDue(); return nil })
			now := d.now()
			if inflight == 0 {
				canClaim = true // no busy host can hold anything back
			}
			if free := d.opts.Workers - inflight; free > 0 && queued {
				if due.After(now) {
					wait = min(wait, max(time.Millisecond, due.Sub(now)))
				} else if canClaim {
					// Queued work goes before fresh events.
					in.claim, in.perHost = free, maps.Clone(perHost)
				}
			}
			if in.claim > 0 || len(in.results)+len(in.fresh)+len(in.queue) > 0 {
				batch, ready, toQueue = nil, nil, nil
				startWrite(in)
			}
		} else if !writing {
			wait = min(wait, time.Until(writeAfter))
		}
		// Answers not saved yet are bounded: while writes fail, nothing
		// more is taken from the outbox.
		unsaved := len(batch) + len(ready)
		if free := d.opts.Workers - inflight; free > 0 && !claiming && len(toQueue) < queueBatch &&
			unsaved < maxUnsaved && !time.Now().Before(writeAfter) && ownOutbox() {
			jobs, events, queue, last, more, err := d.take(cursor, free, perHost)
			if err != nil {
				d.opts.Logger.Error("webhook outbox", "err", err)
				more = false
			}
			cursor = last
			for _, ev := range events {
				fresh[ev.seq] = ev
			}
			toQueue = append(toQueue, queue...)
			launch(jobs)
			if more && inflight < d.opts.Workers && len(toQueue) < queueBatch {
				wait = 0
			}
		}
		if len(toQueue) > 0 && !writing && time.Now().After(writeAfter) {
			wait = 0
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			stopSends()
			if writing {
				finishWrite(<-wrote, false)
			}
			go func() { wg.Wait(); close(results) }()
			for r := range results {
				settle(r)
			}
			_, err := d.write(writeIn{results: batch, fresh: ready, queue: toQueue})
			return err
		case <-d.kick:
			canClaim, kicked = true, true
		case <-timer.C:
			canClaim = true
		case w := <-wrote:
			finishWrite(w, true)
		case r := <-results:
			settle(r)
		drain:
			for {
				select {
				case r := <-results:
					settle(r)
				default:
					break drain
				}
			}
			canClaim = true
		}
	}
}

// write saves answers, queues or drops outbox entries and claims due
// deliveries, in one transaction.
func (d *Dispatcher) write(in writeIn) ([]job, error) {
	var jobs []job
	err := d.db.Update(func(tx *storage.Tx) error {
		jobs = nil
		if err := d.recordTx(tx, in.results); err != nil {
			return err
		}
		if err := d.recordFreshTx(tx, in.fresh); err != nil {
			return err
		}
		if err := d.queueTx(tx, in.queue); err != nil {
			return err
		}
		if in.claim > 0 {
			var err error
			jobs, err = d.claimTx(tx, in.claim, in.perHost)
			return err
		}
		return nil
	})
	return jobs, err
}

// take reads the outbox after cursor (read-only) and turns the events whose
// every matching webhook can be sent to now into jobs, up to free requests.
// An event with a webhook whose host is at its cap is handed back in queue,
// to be saved as pending deliveries that wait in the delivery queue, and so
// is an event no webhook matches (to be removed). It returns the new cursor
// and whether more entries may be waiting beyond what it looked at.
func (d *Dispatcher) take(cursor uint64, free int, perHost map[string]int) (jobs []job, events []*freshEvent, queue []storage.OutboxEntry, last uint64, more bool, err error) {
	last = cursor
	limit := 2 * free
	err = d.db.View(func(tx *storage.Tx) error {
		entries, err := tx.OutboxAfter(cursor, limit)
		if err != nil {
			return err
		}
		more = len(entries) == limit
		now := d.now()
		match := webhookMatcher(tx)
		keysOf := map[string][][]byte{}
		added := map[string]int{}
		for _, e := range entries {
			ev := e.Event
			matched, err := match(ev)
			if err != nil {
				return err
			}
			if len(matched) > free-len(jobs) && len(matched) <= d.opts.Workers {
				more = false // it waits for requests to come back
				return nil
			}
			busy := len(matched) == 0 || len(matched) > d.opts.Workers
			hosts := make([]string, len(matched))
			for i, w := range matched {
				hosts[i] = hostOf(w.URL)
				if added[hosts[i]]++; perHost[hosts[i]]+added[hosts[i]] > d.opts.PerHost {
					busy = true
				}
			}
			var body []byte
			if !busy {
				if body, err = tx.EventEnvelope(ev.AccountID, ev.ID); err != nil {
					busy = true // gone from the history: the queue path records why
				}
			}
			for _, w := range matched {
				if _, ok := keysOf[w.ID]; busy || ok {
					continue
				}
				keys, err := signingKeys(w, now)
				if err != nil {
					busy = true // the queue path fails that delivery and says why
					continue
				}
				keysOf[w.ID] = keys
			}
			if busy {
				for _, h := range hosts {
					added[h]--
				}
				queue = append(queue, e)
				last = e.Seq
				continue
			}
			for i, w := range matched {
				jobs = append(jobs, job{fresh: true, seq: e.Seq, deliveryID: uuid.Must(uuid.NewV7()).String(),
					webhookID: w.ID, accountID: w.AccountID, created: now, url: w.URL, host: hosts[i], keys: keysOf[w.ID],
					body: body, eventID: ev.ID, eventType: ev.Type})
			}
			events = append(events, &freshEvent{seq: e.Seq, left: len(matched)})
			last = e.Seq
		}
		return nil
	})
	return jobs, events, queue, last, more, err
}

func (d *Dispatcher) safeSend(ctx context.Context, j job) (r result) {
	defer func() {
		if p := recover(); p != nil {
			d.panics.Add(1)
			r = result{job: j, at: d.now(), err: fmt.Sprintf("internal error: %v", p)}
		}
		r.answered = d.now()
	}()
	return send(ctx, d.client, j, d.now())
}

// webhookMatcher returns a function that lists the webhooks an outbox
// event goes to (its account's, of its mode, subscribed to its type),
// reading each account's webhooks once per transaction.
func webhookMatcher(tx *storage.Tx) func(storage.Event) ([]storage.Webhook, error) {
	byAccount := map[string][]storage.Webhook{}
	return func(ev storage.Event) ([]storage.Webhook, error) {
		if ev.ID == "" {
			return nil, nil // expired before fan-out
		}
		subs, ok := byAccount[ev.AccountID]
		if !ok {
			var err error
			if subs, _, err = tx.Webhooks(ev.AccountID, storage.ListOptions{Limit: 10000}); err != nil {
				return nil, err
			}
			byAccount[ev.AccountID] = subs
		}
		var matched []storage.Webhook
		for _, w := range subs {
			if w.Test == ev.Test && slices.Contains(w.Events, ev.Type) {
				matched = append(matched, w)
			}
		}
		return matched, nil
	}
}

// queueTx turns outbox entries into one pending delivery per matching
// webhook, due now, and removes them from the outbox in the same
// transaction.
func (d *Dispatcher) queueTx(tx *storage.Tx, entries []storage.OutboxEntry) error {
	match := webhookMatcher(tx)
	now := d.now()
	var dels []storage.Delivery
	for _, e := range entries {
		ev := e.Event
		matched, err := match(ev)
		if err != nil {
			return err
		}
		for _, w := range matched {
			dels = append(dels, storage.Delivery{ID: uuid.Must(uuid.NewV7()).String(), WebhookID: w.ID, AccountID: w.AccountID,
				EventID: ev.ID, EventType: ev.Type, Status: storage.DeliveryPending, Attempts: []storage.DeliveryAttempt{},
				NextAttemptAt: &now, CreatedAt: now})
		}
		if err := tx.DoneOutbox(e.Seq); err != nil {
			return err
		}
	}
	return tx.InsertDeliveries(dels)
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
				// A damaged record: no request can be signed for it.
				del.Attempts = append(del.Attempts, storage.DeliveryAttempt{At: now, Error: "the webhook's signing secret cannot be read: " + err.Error()})
				d.finish(&del, storage.DeliveryFailed, now)
				if err := tx.ReplaceDelivery(old, del); err != nil {
					return err
				}
				continue
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

func (d *Dispatcher) recordTx(tx *storage.Tx, batch []result) error {
	now := d.now()
	for _, r := range batch {
		del, err := tx.Delivery(r.job.deliveryID)
		if err != nil || del.Status != storage.DeliveryPending || len(del.Attempts) == 0 {
			continue // deleted with its webhook, or already settled
		}
		old := del
		d.apply(&del, r, now)
		if err := tx.ReplaceDelivery(old, del); err != nil {
			return err
		}
	}
	return nil
}

// recordFreshTx saves the deliveries of events sent straight from the
// outbox, each with its one attempt, and removes the events from the
// outbox. A webhook deleted while its request was out gets no delivery.
func (d *Dispatcher) recordFreshTx(tx *storage.Tx, events []*freshEvent) error {
	if len(events) == 0 {
		return nil
	}
	now := d.now()
	exists := map[string]bool{}
	var dels []storage.Delivery
	for _, ev := range events {
		for _, r := range ev.results {
			j := r.job
			ok, seen := exists[j.webhookID]
			if !seen {
				ok = tx.WebhookExists(j.webhookID)
				exists[j.webhookID] = ok
			}
			if !ok {
				continue
			}
			del := storage.Delivery{ID: j.deliveryID, WebhookID: j.webhookID, AccountID: j.accountID,
				EventID: j.eventID, EventType: j.eventType, Status: storage.DeliveryPending,
				Attempts: []storage.DeliveryAttempt{{At: r.at, Error: interrupted}}, CreatedAt: j.created}
			d.apply(&del, r, now)
			dels = append(dels, del)
		}
		if err := tx.DoneOutbox(ev.seq); err != nil {
			return err
		}
	}
	return tx.InsertDeliveries(dels)
}

// apply moves a pending delivery along the state machine with the answer
// to its last attempt (the placeholder saved when it was claimed).
func (d *Dispatcher) apply(del *storage.Delivery, r result, now time.Time) {
	last := &del.Attempts[len(del.Attempts)-1]
	if r.aborted {
		// Shutdown cut the request off: undo the claim.
		del.Attempts = del.Attempts[:len(del.Attempts)-1]
		del.NextAttemptAt = &now
		return
	}
	if !r.answered.IsZero() {
		// Delays count from the attempt's end, not from when its answer
		// is saved (a fresh event's answers wait for its slowest webhook).
		now = r.answered
	}
	*last = storage.DeliveryAttempt{At: r.at, StatusCode: r.status, Error: r.err,
		LatencyMS: float64(r.latency.Microseconds()) / 1000, Response: r.response}
	outcome := Classify(r.status)
	if r.refused {
		outcome = Fail // the guard will refuse every retry too
	}
	switch outcome {
	case Delivered:
		d.finish(del, storage.DeliveryDelivered, now)
	case Retry:
		if del.Retries >= d.opts.MaxRetries {
			d.finish(del, storage.DeliveryFailed, now)
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
		d.finish(del, storage.DeliveryFailed, now)
	}
}
