package hooks

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"mailbolt/storage"
)

// loop is one Run of the dispatcher: the requests in flight, the answers
// waiting to be saved, and the one background write at a time. Its methods
// run on Run's goroutine only, except the sends and the write they start.
type loop struct {
	d         *Dispatcher
	sendCtx   context.Context // cancelled when the shutdown grace is over: cuts requests off
	stopSends context.CancelFunc
	results   chan result    // answers of the requests in flight
	wrote     chan writeOut  // the end of the running write
	work      chan job       // requests to send, to the workers
	endWork   sync.Once      // closes work
	wg        sync.WaitGroup // the workers
	timer     *time.Timer

	inflight int
	perHost  map[string]int         // requests in flight per host
	fresh    map[uint64]*freshEvent // fresh events with requests still out
	outbox   outboxShards           // the outbox shards it sends from

	batch   []result              // queued deliveries' answers to save
	ready   []*freshEvent         // fresh events with answers to save
	toQueue []storage.OutboxEntry // outbox entries to queue or drop

	writing    bool      // a write is running
	claiming   bool      // ... and it claims from the queue
	kicked     bool      // a kick came while a write was running
	canClaim   bool      // false while due work waits on busy hosts
	writeAfter time.Time // after a failed write
	takeHeld   hold      // a take waiting for more free senders
	writeHeld  hold      // answers waiting for a write to gather more
}

// hold is a wait of bounded length that starts when first asked for.
type hold struct{ since time.Time }

// wait starts the hold if it has not started and reports how much of limit
// is left, false once it is spent.
func (h *hold) wait(limit time.Duration) (time.Duration, bool) {
	if h.since.IsZero() {
		h.since = time.Now()
	}
	left := limit - time.Since(h.since)
	return left, left > 0
}

// takeHold bounds how long free senders wait for others to be free before
// a take (sendFresh), writeHold how long answers wait for more to be
// saved with them while requests are out (maybeWrite), and splitHold how
// long a fresh event's answers wait for its other requests before they are
// saved without them (freshDue). All are the process's own clock, not
// Options.Now: they pace the loop, they are not an attempt's time.
//
// splitHold spares the usual event, whose receivers all answer within
// milliseconds, the cost of a split (each request still out is written
// twice: claimed, then answered), and keeps a slow receiver from holding
// the others' answers back for longer than that.
const (
	takeHold  = time.Millisecond
	writeHold = 5 * time.Millisecond
	splitHold = 20 * time.Millisecond
)

func (d *Dispatcher) newLoop() *loop {
	sendCtx, stopSends := context.WithCancel(context.Background())
	outbox := newOutboxShards(d)
	d.holder.Store(&outbox.holder)
	l := &loop{
		d: d, sendCtx: sendCtx, stopSends: stopSends,
		results:  make(chan result, d.opts.Workers),
		wrote:    make(chan writeOut, 1),
		work:     make(chan job),
		timer:    time.NewTimer(time.Hour),
		perHost:  map[string]int{},
		fresh:    map[uint64]*freshEvent{},
		outbox:   outbox,
		canClaim: true,
	}
	// Workers-many long-lived senders rather than a goroutine per
	// request: a sender's stack grows to what a request needs once.
	for range d.opts.Workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for j := range l.work {
				l.results <- d.safeSend(l.sendCtx, j)
			}
		}()
	}
	return l
}

// stopWorkers ends the senders once they have sent what they were given.
func (l *loop) stopWorkers() { l.endWork.Do(func() { close(l.work) }) }

// run is Run's loop: start the next write when none runs, send fresh
// events while workers are free, then wait for whatever comes first.
func (l *loop) run(ctx context.Context) error {
	for {
		wait := l.maybeWrite(l.d.opts.Poll)
		wait = l.sendFresh(wait)
		if len(l.toQueue) > 0 && !l.writing && l.d.now().After(l.writeAfter) {
			wait = 0
		}
		l.timer.Reset(wait)
		select {
		case <-ctx.Done():
			return l.shutdown()
		case <-l.d.kick:
			l.canClaim, l.kicked = true, true
		case <-l.timer.C:
			l.canClaim = true
		case w := <-l.wrote:
			l.finishWrite(w, true)
		case r := <-l.results:
			l.settle(r)
			l.drainResults()
			l.canClaim = true
		}
	}
}

// maybeWrite starts a write when none runs and there is something to save
// or due work to claim (queued work goes before fresh events). It returns
// wait, shortened to when the next queued delivery falls due or the next
// write may be tried after a failed one.
func (l *loop) maybeWrite(wait time.Duration) time.Duration {
	if l.writing {
		return wait
	}
	if now := l.d.now(); !now.After(l.writeAfter) {
		return min(wait, l.writeAfter.Sub(now))
	}
	var in writeIn
	fresh, wait := l.freshDue(wait)
	var due time.Time
	var queued bool
	if err := l.d.db.View(func(tx *storage.Tx) error { due, queued = tx.NextDeliveryDue(); return nil }); err != nil {
		// Nothing is claimed this time; what waits to be saved still is.
		l.d.opts.Logger.Error("webhook queue", "err", err)
		queued = false
	}
	now := l.d.now()
	if l.inflight == 0 {
		l.canClaim = true // no busy host can hold anything back
	}
	if free := l.d.opts.Workers - l.inflight; free > 0 && queued {
		if due.After(now) {
			wait = min(wait, max(time.Millisecond, due.Sub(now)))
		} else if l.canClaim {
			in.claim, in.perHost = free, maps.Clone(l.perHost)
		}
	}
	n := len(l.batch) + fresh + len(l.toQueue)
	if in.claim == 0 && len(l.toQueue) == 0 && n > 0 && n < 4*l.d.opts.Workers && l.inflight > 0 {
		// More answers are on their way: let them join this write, so a
		// commit saves a few milliseconds of answers rather than the few
		// that came during the last commit. Never longer than writeHold:
		// until saved, an answer's event is re-sent after a crash.
		if left, ok := l.writeHeld.wait(writeHold); ok {
			return min(wait, left)
		}
	}
	l.writeHeld = hold{}
	if in.claim > 0 || n > 0 {
		in.results, in.fresh, in.queue = l.batch, l.takeFresh(false), l.toQueue
		l.batch, l.toQueue = nil, nil
		l.startWrite(in)
	}
	return wait
}

// freshDue counts the fresh events in ready whose answers are to be saved
// now: those with every answer back, and those whose oldest waiting answer
// has waited splitHold. It returns wait, shortened to when the next of the
// others has.
func (l *loop) freshDue(wait time.Duration) (int, time.Duration) {
	n := 0
	for _, ev := range l.ready {
		if ev.left == 0 {
			n++
		} else if left := splitHold - time.Since(ev.since); left > 0 {
			wait = min(wait, left)
		} else {
			n++
		}
	}
	return n, wait
}

// takeFresh hands the answers of the fresh events freshDue counts (all,
// at shutdown) to a write, and keeps the others in ready.
func (l *loop) takeFresh(all bool) []freshSave {
	var saves []freshSave
	keep := l.ready[:0]
	for _, ev := range l.ready {
		if !all && ev.left > 0 && time.Since(ev.since) < splitHold {
			keep = append(keep, ev)
			continue
		}
		saves = append(saves, ev.save())
	}
	clear(l.ready[len(keep):])
	l.ready = keep
	return saves
}

// sendFresh takes events from its outbox shards and sends them while
// workers are free, no write claims from the queue, what waits to be saved
// or queued is within its bounds, and no write failed in the last
// writeRetry. It returns wait, shortened to when its shard leases are to
// be renewed.
func (l *loop) sendFresh(wait time.Duration) time.Duration {
	free := l.d.opts.Workers - l.inflight
	unsaved := len(l.batch) + len(l.ready)
	if free > 0 && free < l.d.opts.Workers/8 && l.inflight > 0 {
		// Answers are streaming in: wait a moment for a few more senders
		// to be free, so one take (a read transaction) serves several
		// events, not one each. Never longer than takeHold.
		if left, ok := l.takeHeld.wait(takeHold); ok {
			return min(wait, left)
		}
	}
	l.takeHeld = hold{}
	if free <= 0 || l.claiming || len(l.toQueue) >= queueBatch || unsaved >= maxUnsaved ||
		l.d.now().Before(l.writeAfter) {
		return wait
	}
	shards, renew := l.outbox.sendable()
	wait = min(wait, max(time.Millisecond, renew.Sub(l.d.now())))
	if shards == 0 {
		return wait
	}
	jobs, events, queue, more, err := l.d.take(shards, &l.outbox.after, free, l.perHost)
	if err != nil {
		l.d.opts.Logger.Error("webhook outbox", "err", err)
		more = false
	}
	for _, ev := range events {
		l.fresh[ev.seq] = ev
		l.outbox.taken(ev.seq)
	}
	for _, e := range queue {
		l.outbox.taken(e.Seq)
	}
	l.toQueue = append(l.toQueue, queue...)
	l.launch(jobs)
	if more && l.inflight < l.d.opts.Workers && len(l.toQueue) < queueBatch {
		wait = 0
	}
	return wait
}

// shutdown sends nothing new, gives the requests in flight ShutdownGrace
// to be answered, then cuts off those still out; it waits for them and for
// the running write, and saves what is left: answers, and cut-off requests
// put back in the queue.
func (l *loop) shutdown() error {
	cut := time.AfterFunc(l.d.opts.ShutdownGrace, l.stopSends)
	defer cut.Stop()
	if l.writing {
		l.finishWrite(<-l.wrote, false)
	}
	l.stopWorkers()
	go func() { l.wg.Wait(); close(l.results) }()
	for r := range l.results {
		l.settle(r)
	}
	if len(l.batch)+len(l.ready)+len(l.toQueue) == 0 {
		return nil
	}
	if _, err := l.d.write(writeIn{results: l.batch, fresh: l.takeFresh(true), queue: l.toQueue}); err != nil {
		return fmt.Errorf("save the answers at shutdown: %w", err)
	}
	return nil
}

func (l *loop) launch(jobs []job) {
	for _, j := range jobs {
		l.inflight++
		l.perHost[j.host]++
		l.work <- j // a sender is free: fewer than Workers are in flight
	}
}

// settle takes an answer off the books and files it for saving.
func (l *loop) settle(r result) {
	l.inflight--
	if l.perHost[r.job.host]--; l.perHost[r.job.host] <= 0 {
		delete(l.perHost, r.job.host)
	}
	if !r.job.fresh {
		l.batch = append(l.batch, r)
		return
	}
	ev := l.fresh[r.job.seq]
	if ev.left--; ev.left == 0 {
		delete(l.fresh, ev.seq)
	}
	if ev.split {
		// Its delivery is saved, claimed: the answer replaces that attempt.
		l.batch = append(l.batch, r)
		return
	}
	if len(ev.results) == 0 && ev.left > 0 {
		ev.since = time.Now()
	}
	ev.results = append(ev.results, r)
	if !ev.ready && !ev.saving {
		ev.ready = true
		l.ready = append(l.ready, ev)
	}
}

// drainResults settles every answer already waiting.
func (l *loop) drainResults() {
	for {
		select {
		case r := <-l.results:
			l.settle(r)
		default:
			return
		}
	}
}

func (l *loop) startWrite(in writeIn) {
	l.writing, l.claiming, l.kicked = true, in.claim > 0, false
	go func() {
		jobs, err := l.d.write(in)
		l.wrote <- writeOut{in: in, jobs: jobs, err: err}
	}()
}

// finishWrite handles the end of a write; launchJobs is false at shutdown,
// when claimed jobs are put back instead of sent.
func (l *loop) finishWrite(w writeOut, launchJobs bool) {
	l.writing, l.claiming = false, false
	if w.err != nil {
		l.d.opts.Logger.Error("webhook delivery write", "err", w.err)
		l.batch = append(w.in.results, l.batch...)
		for _, s := range w.in.fresh {
			ev := s.ev
			ev.saving, ev.results = false, append(s.results, ev.results...)
			if !ev.ready {
				ev.ready = true
				l.ready = append(l.ready, ev)
			}
		}
		l.toQueue = append(w.in.queue, l.toQueue...)
		l.writeAfter = l.d.now().Add(writeRetry)
		return
	}
	for _, s := range w.in.fresh {
		// Saved (or found saved by another dispatcher): the answers
		// that came back meanwhile, and those to come, are for
		// deliveries claimed in the queue, or for none.
		ev := s.ev
		ev.saving, ev.split = false, true
		l.batch = append(l.batch, ev.results...)
		ev.results = nil
		l.outbox.saved(ev.seq)
	}
	for _, e := range w.in.queue {
		l.outbox.saved(e.Seq)
	}
	if w.in.claim > 0 && len(w.jobs) < w.in.claim && !l.kicked {
		// What is due now waits on busy hosts: the next answer, not
		// a timer, frees them. (A kick meanwhile may have queued
		// work the claim did not see.)
		l.canClaim = false
	}
	if launchJobs {
		l.launch(w.jobs)
		return
	}
	for _, j := range w.jobs {
		l.batch = append(l.batch, result{job: j, aborted: true})
	}
}
