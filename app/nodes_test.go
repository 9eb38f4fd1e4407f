package app

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/storage"
	"mailbolt/storage/pgtest"
	"mailbolt/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// sharedApps builds n Apps, each over its own handle on one fresh
// PostgreSQL database (skipped without PostgreSQL), all on clock c: n
// `serve` nodes as far as the App layer goes.
func sharedApps(t *testing.T, n int, c *clock) []*App {
	t.Helper()
	var out []*App
	for _, db := range storagetest.Nodes(t, n) {
		out = append(out, mustNew(t, db, options(c.now)))
	}
	return out
}

// Two nodes: one round of the sweep at a time runs, on the node holding
// the job's lease; when that node stops renewing, the other takes over
// once the lease has ended; a node stopping cleanly releases it at once.
func TestNodesSweepOnOneNodeAtATime(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	apps := sharedApps(t, 2, c)
	a, b := apps[0], apps[1]
	lease := 2 * time.Minute
	there := func(k string) bool {
		var err error
		b.db.View(func(tx *storage.Tx) error { _, err = tx.IdempotencyRecord("key1", k); return nil })
		return err == nil
	}
	round := func(x *App) bool {
		t.Helper()
		ran, err := x.leasedRound(context.Background(), JobSweep, lease, x.sweepRound)
		if err != nil {
			t.Fatal(err)
		}
		return ran
	}
	k := expiredAt(t, a, c, "k1")
	if !round(a) || there(k) {
		t.Fatal("a did not sweep with the job free")
	}
	// b's rounds while a holds the lease are skipped, whatever is due.
	c.add(time.Minute)
	k = expiredAt(t, a, c, "k2")
	if round(b) || !there(k) {
		t.Fatal("b swept while a held the job")
	}
	// a renews at its next round; b still skips.
	if !round(a) || there(k) {
		t.Fatal("a's renewed round did not sweep")
	}
	renewed := c.now()
	// a stops renewing (killed). Until its lease ends b skips; then it
	// takes the job over.
	k = expiredAt(t, a, c, "k3")
	c.set(renewed.Add(lease - time.Nanosecond))
	if round(b) || !there(k) {
		t.Fatal("b took the job before a's lease ended")
	}
	c.set(renewed.Add(lease))
	if !round(b) || there(k) {
		t.Fatal("b did not take the job over once a's lease ended")
	}
	// b runs the sweeper worker and is stopped: its lease is released at
	// once, and a takes the job at its next round.
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.opts.SweepInterval = time.Millisecond
	go func() { b.runSweeper(ctx); close(done) }()
	k = expiredAt(t, a, c, "k4")
	for there(k) { // until the worker's first round has swept
		time.Sleep(time.Millisecond)
	}
	stop()
	<-done
	if !round(a) {
		t.Fatal("a could not take the job b released when it stopped")
	}
}

func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// expiredAt stores an idempotency record under k that has expired: a
// round of the sweep removes it.
func expiredAt(t *testing.T, a *App, c *clock, k string) string {
	t.Helper()
	now := c.now()
	err := a.db.Update(func(tx *storage.Tx) error {
		return tx.PutIdempotencyRecord("key1", k, storage.IdempotencyRecord{Fingerprint: []byte("A"), Status: 200,
			CreatedAt: now.Add(-25 * time.Hour), ExpiresAt: now.Add(-time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// idemNodes is an account with a test-mode key, authenticated on each of
// the nodes, and the request every node runs for an Idempotency-Key: send
// one message, answering 201 with its id.
type idemNodes struct {
	apps   []*App
	caller []Principal
	secret string
	runs   atomic.Int32
}

func newIdemNodes(t *testing.T, apps []*App) *idemNodes {
	t.Helper()
	a := apps[0]
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	k, e := a.CreateKey(operatorOf(t, a, acct.ID), KeyInput{Name: "k", Mode: ModeTest})
	if e != nil {
		t.Fatal(e)
	}
	n := &idemNodes{apps: apps, secret: k.Secret}
	for _, x := range apps {
		p, e := x.Authenticate(k.Secret)
		if e != nil {
			t.Fatal(e)
		}
		n.caller = append(n.caller, p)
	}
	return n
}

// run is node i's request; before, when set, runs before its effect.
func (n *idemNodes) run(i int, before func()) func(Principal) Response {
	return func(p Principal) Response {
		n.runs.Add(1)
		render := func(m storage.Message) Response { return Response{Status: 201, Body: []byte(m.ID)} }
		Answer(p, render)
		if before != nil {
			before()
		}
		m, e := n.apps[i].SendMessage(p, MessageInput{From: "a@acme.test", To: []string{"x@dest.test"}, Subject: text("s"), Text: text("t")})
		if e != nil {
			return Response{Status: AsError(e).Status(), Body: []byte(e.Error())}
		}
		return render(m)
	}
}

func (n *idemNodes) messages(t *testing.T) int {
	t.Helper()
	list, _, _, e := n.apps[1].ListMessages(n.caller[1], MessageQuery{}, storage.ListOptions{Limit: 100}, false)
	if e != nil {
		t.Fatal(e)
	}
	return len(list)
}

// The same idempotent request fired at two nodes at once runs once: one
// message, and both callers get its answer.
func TestNodesIdempotentRequestRunsOnce(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	n := newIdemNodes(t, sharedApps(t, 2, c))
	const keys = 8
	for k := range keys {
		key := "order-" + string(rune('a'+k))
		var wg sync.WaitGroup
		start := make(chan struct{})
		answers := make([]Response, 2)
		replays := make([]bool, 2)
		for i := range 2 {
			wg.Go(func() {
				<-start
				// The run is held open a moment, so that the other
				// node's duplicate arrives while it is in flight.
				hold := func() { time.Sleep(50 * time.Millisecond) }
				resp, replayed, e := n.apps[i].Idempotent(context.Background(), n.caller[i], n.secret, key, []byte("fp"), n.run(i, hold))
				if e != nil {
					t.Errorf("node %d: %v", i, e)
				}
				answers[i], replays[i] = resp, replayed
			})
		}
		close(start)
		wg.Wait()
		if answers[0].Status != 201 || answers[1].Status != 201 || string(answers[0].Body) != string(answers[1].Body) {
			t.Errorf("%s: answers %d %q and %d %q", key, answers[0].Status, answers[0].Body, answers[1].Status, answers[1].Body)
		}
		if replays[0] == replays[1] {
			t.Errorf("%s: replayed %v and %v; want one run and one replay", key, replays[0], replays[1])
		}
	}
	if got := n.runs.Load(); got != keys {
		t.Errorf("%d runs for %d keys", got, keys)
	}
	if got := n.messages(t); got != keys {
		t.Errorf("%d messages for %d keys", got, keys)
	}
	// A different body under a used key is a conflict on either node.
	for i := range 2 {
		_, _, e := n.apps[i].Idempotent(context.Background(), n.caller[i], n.secret, "order-a", []byte("other"), n.run(i, nil))
		if !HasCode(e, CodeIdempotencyConflict) {
			t.Errorf("node %d, other body: %v", i, e)
		}
	}
}

// A node that took a key and then stalled past its in-flight marker: the
// duplicate on the other node runs the request; when the stalled one
// resumes, its effect is rolled back in its own transaction and it
// answers with the stored answer. One message.
func TestNodesIdempotentLateRunIsRolledBack(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	n := newIdemNodes(t, sharedApps(t, 2, c))
	inRun, resume := make(chan struct{}), make(chan struct{})
	type result struct {
		resp     Response
		replayed bool
		e        error
	}
	first := make(chan result, 1)
	go func() {
		resp, replayed, e := n.apps[0].Idempotent(context.Background(), n.caller[0], n.secret, "slow", []byte("fp"),
			n.run(0, func() { close(inRun); <-resume }))
		first <- result{resp, replayed, e}
	}()
	<-inRun
	// While node 0's marker holds, node 1 waits: give up after a moment.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, _, e := n.apps[1].Idempotent(ctx, n.caller[1], n.secret, "slow", []byte("fp"), n.run(1, nil))
	cancel()
	if !HasCode(e, CodeServiceUnavailable) {
		t.Fatalf("node 1 while node 0 runs: %v; want it to wait (and give up with its context)", e)
	}
	c.add(IdempotencyInFlight) // node 0's marker ends: node 1 runs the request
	second, replayed, e := n.apps[1].Idempotent(context.Background(), n.caller[1], n.secret, "slow", []byte("fp"), n.run(1, nil))
	if e != nil || replayed || second.Status != 201 {
		t.Fatalf("node 1 after the marker ended: %d %v %v", second.Status, replayed, e)
	}
	close(resume)
	r := <-first
	if r.e != nil || r.resp.Status != 201 || string(r.resp.Body) != string(second.Body) {
		t.Fatalf("node 0 resumed: %d %q %v; want node 1's answer %q", r.resp.Status, r.resp.Body, r.e, second.Body)
	}
	if got := n.messages(t); got != 1 {
		t.Errorf("%d messages; want 1", got)
	}
}

// An answer that is not kept (a 5xx) frees the key on every node: the
// retry on the other node runs.
func TestNodesUnkeptAnswerFreesTheKey(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	apps := sharedApps(t, 2, c)
	runs := 0
	run := func(status int) func(Principal) Response {
		return func(Principal) Response { runs++; return Response{Status: status} }
	}
	if resp, _, e := apps[0].Idempotent(context.Background(), pk("k1"), "s", "x", []byte("A"), run(503)); e != nil || resp.Status != 503 {
		t.Fatalf("first: %d %v", resp.Status, e)
	}
	apps[1].db.View(func(tx *storage.Tx) error {
		if rec, err := tx.IdempotencyRecord("k1", "x"); err == nil {
			t.Errorf("a record is left after an answer that is not kept: %+v", rec)
		}
		return nil
	})
	resp, replayed, e := apps[1].Idempotent(context.Background(), pk("k1"), "s", "x", []byte("A"), run(201))
	if e != nil || replayed || resp.Status != 201 || runs != 2 {
		t.Fatalf("retry on the other node: %d replayed=%v runs=%d %v", resp.Status, replayed, runs, e)
	}
	if _, replayed, _ := apps[0].Idempotent(context.Background(), pk("k1"), "s", "x", []byte("A"), run(201)); !replayed || runs != 2 {
		t.Fatalf("the kept answer was not replayed on the first node (runs %d)", runs)
	}
}
