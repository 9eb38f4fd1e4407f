package hooks

// Several nodes over one PostgreSQL database, each a *storage.DB handle
// with its own Dispatcher: the outbox's shards are shared out among them,
// and a dead node's shards are taken over once its leases end.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
	"mailbolt/storage/pgtest"
	"mailbolt/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// node is one serve process's share: its database handle and dispatcher.
type node struct {
	db      *storage.DB
	d       *Dispatcher
	sent    atomic.Int64 // requests its dispatcher made and saw end
	cancel  context.CancelFunc
	done    chan error
	started bool
	dead    bool
}

// cluster is several nodes on one fake clock.
type cluster struct {
	t     *testing.T
	clock *fakeClock
	span  time.Duration // the outbox shard lease
	nodes []*node
}

// newCluster makes n dispatchers over one fresh PostgreSQL database (each
// node its own handle), or, when shared is false, over one embedded
// database (several dispatchers in one process). Each is woken by its
// handle's after-commit hook (NOTIFY across PostgreSQL nodes), as in
// serve. None runs until start.
func newCluster(t *testing.T, n int, shared bool) *cluster {
	var dbs []*storage.DB
	if shared {
		dbs = storagetest.Nodes(t, n)
	} else {
		db, err := storage.Open(t.TempDir(), storage.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		for range n {
			dbs = append(dbs, db)
		}
	}
	c := &cluster{t: t, clock: &fakeClock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}}
	for _, db := range dbs {
		nd := &node{db: db, done: make(chan error, 1)}
		opts := testOptions(func(o *Options) {
			o.Now = c.clock.Now
			o.Workers, o.PerHost = 64, 64
			o.Timeout, o.OutboxLeaseMargin = 30*time.Second, time.Second
			o.Answered = func(string) { nd.sent.Add(1) }
		})
		c.span = opts.Timeout + opts.OutboxLeaseMargin
		nd.d = mustNew(t, db, opts)
		db.AfterCommit(func(storage.Change) { nd.d.Kick() })
		c.nodes = append(c.nodes, nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.live() {
			nd.cancel()
			if err := <-nd.done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	})
	return c
}

// start runs the nodes' dispatchers, and waits for the heartbeat each
// writes when it first leases shards.
func (c *cluster) start(nodes ...*node) {
	c.t.Helper()
	for _, nd := range nodes {
		ctx, cancel := context.WithCancel(context.Background())
		nd.cancel, nd.started = cancel, true
		go func() { nd.done <- nd.d.Run(ctx) }()
	}
	c.waitFor("every node started has a heartbeat", func() bool {
		_, beats := c.leases()
		for _, nd := range nodes {
			if _, ok := beats[nd.holder()]; !ok {
				return false
			}
		}
		return true
	})
}

// live are the nodes started and not killed.
func (c *cluster) live() []*node {
	var out []*node
	for _, nd := range c.nodes {
		if nd.started && !nd.dead {
			out = append(out, nd)
		}
	}
	return out
}

// waitFor polls done (each node works on its own goroutine) until it
// holds, failing the test after 10 s.
func (c *cluster) waitFor(what string, done func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			c.t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *cluster) leases() ([]storage.OutboxShardHolder, map[string]time.Time) {
	var shards []storage.OutboxShardHolder
	var nodes map[string]time.Time
	c.nodes[0].db.View(func(tx *storage.Tx) error { shards, nodes = tx.OutboxShardLeases(); return nil })
	return shards, nodes
}

func (nd *node) holder() string {
	if h := nd.d.holder.Load(); h != nil {
		return *h
	}
	return ""
}

// tick moves the clock half a lease on and waits until every live node
// has renewed its leases at the new time (a kick wakes it).
func (c *cluster) tick() {
	c.t.Helper()
	c.clock.Add(c.span / 2)
	want := c.clock.Now().Add(c.span)
	for _, nd := range c.live() {
		nd.d.Kick()
	}
	c.waitFor("every live node renews its outbox leases", func() bool {
		_, beats := c.leases()
		for _, nd := range c.live() {
			if !beats[nd.holder()].Equal(want) {
				return false
			}
		}
		return true
	})
}

// held counts the shards each live node holds, by holder.
func (c *cluster) held() map[string]int {
	shards, _ := c.leases()
	n := map[string]int{}
	for _, s := range shards {
		n[s.Holder]++
	}
	return n
}

// settle ticks until the shards are shared out: every one held by a live
// node, each holding its fair share or the remainder (6, 6, 4 of 16 for
// three).
func (c *cluster) settle() {
	c.t.Helper()
	live := c.live()
	fair := (storage.OutboxShards + len(live) - 1) / len(live)
	least := storage.OutboxShards - (len(live)-1)*fair
	for range 8 {
		c.tick()
		held, ok := c.held(), true
		total := 0
		for _, nd := range live {
			n := held[nd.holder()]
			total += n
			ok = ok && n >= least && n <= fair
		}
		if ok && total == storage.OutboxShards {
			return
		}
	}
	c.t.Fatalf("the shards were not shared out among %d nodes: %v", len(live), c.held())
}

// shardsOf is the set of shards nd holds.
func (c *cluster) shardsOf(nd *node) storage.OutboxShardSet {
	shards, _ := c.leases()
	var s storage.OutboxShardSet
	for i, l := range shards {
		if l.Holder == nd.holder() {
			s |= 1 << i
		}
	}
	return s
}

// kill stops nd the way a SIGKILL would: its connections go first, so
// nothing it held is saved and its leases are not given up.
func (c *cluster) kill(nd *node) {
	c.t.Helper()
	nd.db.Close()
	nd.cancel()
	<-nd.done // an error: nothing could be saved
	nd.dead = true
}

// appendEvent records an event of typ on one node and returns its outbox
// sequence number.
func (c *cluster) appendEvent(on *node, typ string) (storage.Event, uint64) {
	c.t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	now := c.clock.Now()
	body, _ := json.Marshal(map[string]any{"id": id, "event": typ, "timestamp": now.Format(time.RFC3339), "data": map[string]any{}})
	ev := storage.Event{ID: id, AccountID: "acct", Type: typ, Timestamp: now, Envelope: body, ExpiresAt: now.Add(24 * time.Hour)}
	var seq uint64
	err := on.db.Update(func(tx *storage.Tx) error {
		if err := tx.AppendEvent(ev); err != nil {
			return err
		}
		out, through, _, err := tx.OutboxIn(storage.AllOutboxShards, 0, 1<<20, 1<<20)
		if len(out) == 0 || out[len(out)-1].Event.ID != id {
			return fmt.Errorf("the event's outbox entry is not the last (through %d): %v", through, err)
		}
		seq = out[len(out)-1].Seq
		return err
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return ev, seq
}

func (c *cluster) webhook(url string, events ...string) storage.Webhook {
	c.t.Helper()
	w := storage.Webhook{ID: uuid.Must(uuid.NewV7()).String(), AccountID: "acct", URL: url, Events: events,
		Secret: testSecret, CreatedAt: c.clock.Now()}
	if err := c.nodes[0].db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(w) }); err != nil {
		c.t.Fatal(err)
	}
	return w
}

func (c *cluster) outboxLen() int {
	var n int
	c.live()[0].db.View(func(tx *storage.Tx) error {
		out, _ := tx.Outbox(1 << 20)
		n = len(out)
		return nil
	})
	return n
}

// delivered counts w's delivered deliveries.
func (c *cluster) delivered(w storage.Webhook) int {
	var n int
	c.live()[0].db.View(func(tx *storage.Tx) error {
		n = tx.DeliveryCount(w.AccountID, w.ID, storage.DeliveryDelivered)
		return nil
	})
	return n
}

// deliveries counts the saved deliveries of each event to w.
func (c *cluster) deliveries(w storage.Webhook) map[string]int {
	byEvent := map[string]int{}
	c.live()[0].db.View(func(tx *storage.Tx) error {
		list, _, err := tx.Deliveries(w.AccountID, w.ID, "", storage.ListOptions{Limit: 10000})
		if err != nil {
			c.t.Fatal(err)
		}
		for _, d := range list {
			byEvent[d.EventID]++
		}
		return nil
	})
	return byEvent
}

// arrivals counts the requests a receiver got, by event id.
type arrivals struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *arrivals) add(id string) { a.mu.Lock(); a.n[id]++; a.mu.Unlock() }
func (a *arrivals) of(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[id]
}

// countingReceiver records each request's event id, then answers through
// handler.
func countingReceiver(t *testing.T, handler http.HandlerFunc) (*receiver, *arrivals) {
	a := &arrivals{n: map[string]int{}}
	rec := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		a.add(r.Header.Get("X-Service-Event-Id"))
		handler(w, r)
	})
	return rec, a
}

// gatedReceiver holds every request until open is called, then answers
// 200 (and at once from then on).
func gatedReceiver(t *testing.T) (rec *receiver, got *arrivals, open func()) {
	gate := make(chan struct{})
	var opened sync.Once
	open = func() { opened.Do(func() { close(gate) }) }
	rec, got = countingReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	t.Cleanup(open) // before the receiver's Close, which waits for its requests
	return rec, got, open
}

// With three nodes running at once, every event reaches each webhook
// subscribed to it exactly once, saved as one delivered delivery, and
// every node sends a share of them.
func TestOutboxSharedAmongNodes(t *testing.T) {
	c := newCluster(t, 3, true)
	c.start(c.nodes...)
	recSent, sentTo := countingReceiver(t, status(200))
	recAll, allTo := countingReceiver(t, status(204))
	wSent := c.webhook(recSent.URL, "message.sent")
	wAll := c.webhook(recAll.URL, "message.sent", "message.bounced")
	c.settle()

	const n = 96 // six per shard
	var events []storage.Event
	for i := range n {
		typ := "message.sent"
		if i%3 == 2 {
			typ = "message.bounced"
		}
		ev, _ := c.appendEvent(c.nodes[i%3], typ)
		events = append(events, ev)
	}
	c.waitFor("every event delivered and saved", func() bool {
		return c.outboxLen() == 0 && c.delivered(wSent) == n*2/3 && c.delivered(wAll) == n
	})
	sentSaved, allSaved := c.deliveries(wSent), c.deliveries(wAll)
	for _, ev := range events {
		wantSent := 1
		if ev.Type == "message.bounced" {
			wantSent = 0
		}
		if got := sentTo.of(ev.ID); got != wantSent || sentSaved[ev.ID] != wantSent {
			t.Errorf("%s %s: message.sent webhook got it %d times, %d deliveries saved; want %d", ev.Type, ev.ID, got, sentSaved[ev.ID], wantSent)
		}
		if got := allTo.of(ev.ID); got != 1 || allSaved[ev.ID] != 1 {
			t.Errorf("%s %s: the other webhook got it %d times, %d deliveries saved; want 1", ev.Type, ev.ID, got, allSaved[ev.ID])
		}
	}
	var total int64
	for i, nd := range c.nodes {
		if nd.sent.Load() == 0 {
			t.Errorf("node %d sent nothing (holds %d shards): the outbox is not shared", i, c.held()[nd.holder()])
		}
		total += nd.sent.Load()
	}
	if total != n*2/3+n {
		t.Errorf("the nodes made %d requests, want %d", total, n*2/3+n)
	}
}

// A node that dies keeps its shards until its leases end; then the others
// take them over. The events it had in flight are sent again (at least
// once, never lost); those appended after its death wait in the outbox
// until its leases end, then go out once.
func TestDeadNodesShardsAreTakenOver(t *testing.T) {
	c := newCluster(t, 3, true)
	c.start(c.nodes...)
	rec, got, open := gatedReceiver(t)
	w := c.webhook(rec.URL, "message.sent")
	c.settle()
	victim := c.nodes[2]
	theirs := c.shardsOf(victim)

	// Batch 1: every request is out (the receiver holds them) when the
	// victim dies.
	type sent struct {
		ev  storage.Event
		seq uint64
	}
	var batch1, batch2 []sent
	for range 48 {
		ev, seq := c.appendEvent(c.nodes[0], "message.sent")
		batch1 = append(batch1, sent{ev, seq})
	}
	c.waitFor("every batch-1 request is out", func() bool { return rec.count() == len(batch1) })
	c.kill(victim)
	open()

	// Batch 2, after the death.
	for range 48 {
		ev, seq := c.appendEvent(c.nodes[0], "message.sent")
		batch2 = append(batch2, sent{ev, seq})
	}
	isTheirs := func(s sent) bool { return theirs.Has(storage.OutboxShard(s.seq)) }
	var left int
	for _, s := range append(append([]sent{}, batch1...), batch2...) {
		if isTheirs(s) {
			left++
		}
	}
	if left == 0 || theirs.Len() == 0 {
		t.Fatalf("the victim held shards %016b, none of the events: the test shows nothing", theirs)
	}
	c.waitFor("the survivors deliver every event of their own shards", func() bool {
		return c.delivered(w) == len(batch1)+len(batch2)-left
	})
	// The victim's leases run until the clock passes their end: its
	// shards' entries are all still waiting, none taken by the others.
	if n := c.outboxLen(); n != left {
		t.Fatalf("outbox holds %d entries, want the %d of the dead node's shards", n, left)
	}
	for _, s := range batch2 {
		if isTheirs(s) && got.of(s.ev.ID) != 0 {
			t.Errorf("event %d of the dead node's shard %d was sent before its lease ended", s.seq, storage.OutboxShard(s.seq))
		}
	}

	// Two half-lease ticks pass the victim's lease end (it last renewed
	// at the tick that settled the cluster).
	c.tick()
	c.tick()
	c.waitFor("the survivors take the dead node's shards and deliver the rest", func() bool {
		return c.outboxLen() == 0 && c.delivered(w) == len(batch1)+len(batch2)
	})
	saved := c.deliveries(w)
	for _, s := range batch1 {
		want := 1
		if isTheirs(s) {
			want = 2 // cut off by the death, sent again by a survivor
		}
		if got.of(s.ev.ID) != want || saved[s.ev.ID] != 1 {
			t.Errorf("batch 1, event %d (shard %d): received %d times, %d deliveries saved; want %d and 1",
				s.seq, storage.OutboxShard(s.seq), got.of(s.ev.ID), saved[s.ev.ID], want)
		}
	}
	for _, s := range batch2 {
		if got.of(s.ev.ID) != 1 || saved[s.ev.ID] != 1 {
			t.Errorf("batch 2, event %d (shard %d): received %d times, %d deliveries saved; want 1 and 1",
				s.seq, storage.OutboxShard(s.seq), got.of(s.ev.ID), saved[s.ev.ID])
		}
	}
	held := c.held()
	for _, nd := range c.live() {
		if held[nd.holder()] != storage.OutboxShards/2 {
			t.Errorf("after the takeover: %v, want 8 shards each for the two survivors", held)
		}
	}
}

// A dispatcher asked to give shards back while it still has their events
// out keeps them until those are saved, taking no new event of theirs
// meanwhile; then it gives them back, and the newcomer sends what waited.
// (Two dispatchers over one embedded database share the shards the same
// way as nodes over PostgreSQL.)
func TestBusyShardsAreGivenBackOnceSaved(t *testing.T) {
	c := newCluster(t, 2, false)
	first, second := c.nodes[0], c.nodes[1]
	c.start(first)
	rec, got, open := gatedReceiver(t)
	w := c.webhook(rec.URL, "message.sent")
	c.tick()
	if held := c.held()[first.holder()]; held != storage.OutboxShards {
		t.Fatalf("alone, the first dispatcher holds %d shards", held)
	}
	var out []storage.Event // two per shard, all out when the second starts
	for range 2 * storage.OutboxShards {
		ev, _ := c.appendEvent(first, "message.sent")
		out = append(out, ev)
	}
	c.waitFor("every request is out", func() bool { return rec.count() == len(out) })

	c.start(second)
	c.tick()
	if held := c.held(); held[first.holder()] != storage.OutboxShards || held[second.holder()] != 0 {
		t.Fatalf("with every shard busy the first should keep all 16: %v", held)
	}
	upper := shardRange(8, 15) // the first's to give back
	var waiting []storage.Event
	for range storage.OutboxShards {
		ev, seq := c.appendEvent(first, "message.sent")
		if upper.Has(storage.OutboxShard(seq)) {
			waiting = append(waiting, ev)
		} else {
			out = append(out, ev)
		}
	}
	c.waitFor("the new events of the shards kept are out", func() bool { return rec.count() >= len(out) })
	for _, ev := range waiting {
		if got.of(ev.ID) != 0 {
			t.Fatalf("event %s of a shard being given back was sent", ev.ID)
		}
	}

	open()
	c.waitFor("the first gives shards 8-15 back once its answers are saved", func() bool {
		return c.shardsOf(first) == shardRange(0, 7)
	})
	c.tick() // the second's renewal takes them
	if s := c.shardsOf(second); s != upper {
		t.Fatalf("the second holds %016b, want %016b", s, upper)
	}
	all := len(out) + len(waiting)
	c.waitFor("every event delivered", func() bool { return c.delivered(w) == all && c.outboxLen() == 0 })
	saved := c.deliveries(w)
	for _, ev := range append(out, waiting...) {
		if got.of(ev.ID) != 1 || saved[ev.ID] != 1 {
			t.Errorf("event %s received %d times, %d deliveries saved; want 1 and 1", ev.ID, got.of(ev.ID), saved[ev.ID])
		}
	}
	if first.sent.Load() != int64(len(out)) || second.sent.Load() != int64(len(waiting)) {
		t.Errorf("the first sent %d, the second %d; want %d and %d", first.sent.Load(), second.sent.Load(), len(out), len(waiting))
	}
}

func shardRange(from, to int) storage.OutboxShardSet {
	var s storage.OutboxShardSet
	for i := from; i <= to; i++ {
		s |= 1 << i
	}
	return s
}

// A node that dies after saving a fresh event's first answer, with its
// request to a slower webhook still out, leaves no outbox entry behind: the
// survivor does not send the event again to the webhook that answered; it
// retries the request that was out, as an interrupted attempt, once that
// delivery's lease (the deadline plus 30 s) has passed.
func TestDeadNodesSplitEventIsRetriedNotResent(t *testing.T) {
	c := newCluster(t, 2, true)
	c.start(c.nodes...)
	fast, fastGot := countingReceiver(t, status(200))
	gated, gatedGot, open := gatedReceiver(t)
	wFast, wGated := c.webhook(fast.URL, "message.sent"), c.webhook(gated.URL, "message.sent")
	c.settle()
	// The event goes to a shard of the second node, the one to die (the
	// cluster reads leases through the first): events no webhook takes
	// move the sequence on until the next lands there.
	sender := c.nodes[1]
	for _, seq := c.appendEvent(c.nodes[0], "message.opened"); !c.shardsOf(sender).Has(storage.OutboxShard(seq + 1)); {
		_, seq = c.appendEvent(c.nodes[0], "message.opened")
	}
	ev, seq := c.appendEvent(c.nodes[0], "message.sent")
	if !c.shardsOf(sender).Has(storage.OutboxShard(seq)) {
		t.Fatalf("event %d is not in a shard of the second node (%016b)", seq, c.shardsOf(sender))
	}
	c.waitFor("the fast answer saved while the gated request is out", func() bool {
		return c.delivered(wFast) == 1 && c.deliveries(wGated)[ev.ID] == 1 && gated.count() == 1
	})
	if n := c.outboxLen(); n != 0 {
		t.Fatalf("the outbox holds %d entries once the first answer is saved", n)
	}
	c.kill(sender)
	open()
	for range 4 { // 62 s: past the gated delivery's lease
		c.tick()
	}
	c.waitFor("the survivor retries the request that was out", func() bool { return c.delivered(wGated) == 1 })
	if fastGot.of(ev.ID) != 1 || gatedGot.of(ev.ID) != 2 {
		t.Errorf("the fast webhook got the event %d times (want 1), the gated one %d (want 2)", fastGot.of(ev.ID), gatedGot.of(ev.ID))
	}
	if c.deliveries(wFast)[ev.ID] != 1 || c.deliveries(wGated)[ev.ID] != 1 {
		t.Errorf("deliveries saved: %v and %v, want one each", c.deliveries(wFast), c.deliveries(wGated))
	}
	c.live()[0].db.View(func(tx *storage.Tx) error {
		d, err := tx.DeliveryByEvent(wGated.AccountID, wGated.ID, ev.ID)
		if err != nil || len(d.Attempts) != 2 || d.Attempts[0].Error != interrupted || d.Attempts[1].StatusCode != 200 {
			t.Errorf("the gated delivery: %+v %v, want an interrupted attempt, then 200", d, err)
		}
		return nil
	})
}
