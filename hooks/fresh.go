package hooks

import (
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// The fast path: an event goes out straight from the outbox, without a
// claim written first.

// freshEvent is an event taken from the outbox and sent at once, without a
// claim written first: until its first answers are saved its deliveries
// exist only in memory, and its outbox entry is the durable record that it
// still has to be delivered. The answers are then saved as new deliveries
// in the transaction that removes the entry, so a crash before that
// re-sends the event (at least once), and never loses it.
//
// Its answers are not held for one another: once the oldest waiting one has
// waited splitHold, they are saved with the requests still out, each as a
// delivery claimed as the queue path claims one (an Unanswered attempt and
// a lease), and the entry is removed. The event is then split: its later
// answers replace those attempts, as a retry's answer does. So a slow
// receiver holds up neither the log nor the retries of the others.
type freshEvent struct {
	seq     uint64
	jobs    []job     // its requests, one per webhook
	left    int       // requests still out
	results []result  // answers not handed to a write yet
	since   time.Time // when the oldest of results came back (the process's clock)
	ready   bool      // in loop.ready
	saving  bool      // a write holding some of its answers runs
	split   bool      // saved, with requests still out: their answers go the queue path's way
}

// freshSave is what one write saves of a fresh event: the answers back so
// far and, when some requests are still out, those requests, saved as
// claimed deliveries. The write reads these fields and ev.seq only.
type freshSave struct {
	ev      *freshEvent
	results []result
	out     []job
}

// save hands the event's answers to a write. Until an event is saved its
// results hold every answer back, so the requests still out are the jobs
// without one.
func (ev *freshEvent) save() freshSave {
	s := freshSave{ev: ev, results: ev.results}
	ev.results, ev.ready, ev.saving = nil, false, true
	if ev.left > 0 {
		answered := make(map[string]bool, len(s.results))
		for _, r := range s.results {
			answered[r.job.deliveryID] = true
		}
		for _, j := range ev.jobs {
			if !answered[j.deliveryID] {
				s.out = append(s.out, j)
			}
		}
	}
	return s
}

// outboxShards is one Run's share of the outbox: the shards it leases
// (see storage.Tx.LeaseOutboxShards), which it alone sends straight from,
// and where it stands in each shard. With one dispatcher it holds every
// shard; with several (one per node over a shared database) each holds
// about its fair share. The leases last Timeout plus OutboxLeaseMargin,
// are renewed when half over (sooner to give back shards it was asked to
// give) and are given up when Run returns.
type outboxShards struct {
	d      *Dispatcher
	holder string
	span   time.Duration
	renew  time.Time              // when the leases are renewed next
	held   storage.OutboxShardSet // leased to this Run
	give   storage.OutboxShardSet // of held, to give back once not busy
	// busy counts, per shard, the entries taken and not yet removed by a
	// write: a shard is given back only when it holds none.
	busy [storage.OutboxShards]int
	// after is where this Run stands in each shard: every entry of shard
	// s up to after[s] has been taken by it, and is either saved and
	// removed or still held in memory. It only moves forward, so a shard
	// lost and taken again is not read twice.
	after [storage.OutboxShards]uint64
}

func newOutboxShards(d *Dispatcher) outboxShards {
	return outboxShards{d: d, holder: uuid.Must(uuid.NewV7()).String(), span: d.opts.Timeout + d.opts.OutboxLeaseMargin}
}

// sendable returns the shards this Run may take entries from now (held,
// less those to give back), renewing the leases when due, and when the
// next renewal is due. After a failed renewal it sends nothing and tries
// again a quarter of a lease later.
func (o *outboxShards) sendable() (storage.OutboxShardSet, time.Time) {
	now := o.d.now()
	if now.Before(o.renew) && (o.give == 0 || o.busySet()&o.give != 0) {
		return o.held &^ o.give, o.renew
	}
	var l storage.OutboxLease
	busy := o.busySet()
	err := o.d.db.Update(func(tx *storage.Tx) error {
		var err error
		l, err = tx.LeaseOutboxShards(o.holder, now, now.Add(o.span), busy)
		return err
	})
	if err != nil {
		o.d.opts.Logger.Error("webhook outbox lease", "err", err)
		o.held, o.give, o.renew = 0, 0, now.Add(o.span/4)
		return 0, o.renew
	}
	o.held, o.give, o.renew = l.Held, l.Give, now.Add(o.span/2)
	return o.held &^ o.give, o.renew
}

func (o *outboxShards) busySet() storage.OutboxShardSet {
	var s storage.OutboxShardSet
	for i, n := range o.busy {
		if n > 0 {
			s |= 1 << i
		}
	}
	return s
}

// taken and saved keep the busy counts: entries taken from the outbox,
// entries removed from it by a write.
func (o *outboxShards) taken(seq uint64) { o.busy[storage.OutboxShard(seq)]++ }
func (o *outboxShards) saved(seq uint64) { o.busy[storage.OutboxShard(seq)]-- }

// releaseOutbox gives up the shard leases this Run still holds.
func (l *loop) releaseOutbox() error {
	return l.d.db.Update(func(tx *storage.Tx) error { return tx.ReleaseOutboxShards(l.outbox.holder) })
}

// outboxCursor is where a reader stands in each shard of the outbox.
type outboxCursor = [storage.OutboxShards]uint64

// maxOutboxScan bounds the outbox keys one take looks at, so the entries
// of shards other dispatchers hold cost a bounded walk.
const maxOutboxScan = 4096

// take reads the entries of shards after cur (read-only) and turns the
// events whose every matching webhook can be sent to now into jobs, up to
// free requests, moving cur past what it took. An event with a webhook
// whose host is at its cap is handed back in queue, to be saved as pending
// deliveries that wait in the delivery queue, and so is an event no
// webhook matches (to be removed). It reports whether more entries may be
// waiting beyond what it looked at.
func (d *Dispatcher) take(shards storage.OutboxShardSet, cur *outboxCursor, free int, perHost map[string]int) (jobs []job, events []*freshEvent, queue []storage.OutboxEntry, more bool, err error) {
	from := ^uint64(0)
	for s, at := range cur {
		if shards.Has(s) {
			from = min(from, at)
		}
	}
	if from == ^uint64(0) {
		return nil, nil, nil, false, nil
	}
	last := from
	limit := 2 * free
	err = d.db.View(func(tx *storage.Tx) error {
		entries, through, scanMore, err := tx.OutboxIn(shards, from, limit, maxOutboxScan)
		if err != nil {
			return err
		}
		more = scanMore
		now := d.now()
		match := webhookMatcher(tx)
		keysOf := map[string][][]byte{}
		added := map[string]int{}
		for _, e := range entries {
			if e.Seq <= cur[storage.OutboxShard(e.Seq)] {
				last = e.Seq // taken before: still held, in memory
				continue
			}
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
			first := len(jobs)
			for i, w := range matched {
				jobs = append(jobs, job{fresh: true, seq: e.Seq, deliveryID: uuid.Must(uuid.NewV7()).String(),
					webhookID: w.ID, accountID: w.AccountID, created: now, url: w.URL, host: hosts[i], keys: keysOf[w.ID],
					body: body, eventID: ev.ID, eventType: ev.Type})
			}
			// The event's jobs share take's array: a later append never
			// writes to them (it grows past them or copies them).
			events = append(events, &freshEvent{seq: e.Seq, jobs: jobs[first:len(jobs):len(jobs)], left: len(matched)})
			last = e.Seq
		}
		last = through // every entry looked at was taken, and the keys between were other shards'
		return nil
	})
	for s := range cur {
		if shards.Has(s) {
			cur[s] = max(cur[s], last)
		}
	}
	return jobs, events, queue, more, err
}

// recordFreshTx saves the deliveries of events sent straight from the
// outbox, each answered one with its one attempt and each request still out
// as claimed (an Unanswered attempt and the lease a claim gives, counted
// from when it was sent), and removes the events from the outbox. A webhook
// deleted while its request was out gets no delivery, and neither does an
// event another dispatcher has removed from the outbox (it took the shard
// over after this one's lease ended, sent the event too and saved its
// deliveries first).
func (d *Dispatcher) recordFreshTx(tx *storage.Tx, saves []freshSave) error {
	if len(saves) == 0 {
		return nil
	}
	now := d.now()
	exists := map[string]bool{}
	webhookExists := func(id string) bool {
		ok, seen := exists[id]
		if !seen {
			ok = tx.WebhookExists(id)
			exists[id] = ok
		}
		return ok
	}
	var dels []storage.Delivery
	for _, s := range saves {
		seq := s.ev.seq
		if !tx.InOutbox(seq) {
			continue
		}
		for _, r := range s.results {
			j := r.job
			if !webhookExists(j.webhookID) {
				continue
			}
			del := storage.Delivery{ID: j.deliveryID, WebhookID: j.webhookID, AccountID: j.accountID,
				EventID: j.eventID, EventType: j.eventType, Status: storage.DeliveryPending,
				Attempts: []storage.DeliveryAttempt{{At: r.at, Error: interrupted, Unanswered: true}}, CreatedAt: j.created}
			d.apply(&del, r, now)
			dels = append(dels, del)
		}
		for _, j := range s.out {
			if !webhookExists(j.webhookID) {
				continue
			}
			lease := j.created.Add(d.opts.Timeout + 30*time.Second)
			dels = append(dels, storage.Delivery{ID: j.deliveryID, WebhookID: j.webhookID, AccountID: j.accountID,
				EventID: j.eventID, EventType: j.eventType, Status: storage.DeliveryPending,
				Attempts:      []storage.DeliveryAttempt{{At: j.created, Error: interrupted, Unanswered: true}},
				NextAttemptAt: &lease, CreatedAt: j.created})
		}
		if err := tx.DoneOutbox(seq); err != nil {
			return err
		}
	}
	return tx.InsertDeliveries(dels)
}
