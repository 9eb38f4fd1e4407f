package queue

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/mta"
	"mailbolt/storage"
	"mailbolt/storage/pgtest"
	"mailbolt/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// node is one `serve` node of a test: its own handle on the shared
// database and its own Queue, on a clock the test moves.
type node struct {
	db *storage.DB
	q  *Queue
}

// sharedNodes opens n nodes over one fresh PostgreSQL database (skipped
// without PostgreSQL), each with a delivery lease of lease.
func sharedNodes(t *testing.T, n int, c *clock, lease time.Duration) []node {
	t.Helper()
	var out []node
	for _, db := range storagetest.Nodes(t, n) {
		o := DefaultOptions()
		o.Now, o.ReturnPathKey, o.Lease = c.now, testKey, lease
		q, err := New(db, o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, node{db, q})
	}
	return out
}

// claimAll has every node claim due messages at now at the same time, in
// batches of batch, until none is left; it returns what each claimed.
func claimAll(t *testing.T, nodes []node, now time.Time, batch int) [][]job {
	t.Helper()
	got := make([][]job, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			for {
				jobs, next, err := n.q.claimDue(now, batch)
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = append(got[i], jobs...)
				if len(jobs) == 0 && (next.IsZero() || next.After(now)) {
					return // nothing due is left
				}
			}
		})
	}
	wg.Wait()
	return got
}

// Three nodes claiming one queue at the same time: every message is
// claimed once, by one node.
func TestNodesClaimEachMessageOnce(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	nodes := sharedNodes(t, 3, c, time.Minute)
	want := map[string]bool{}
	for range 60 {
		want[accept(t, nodes[0].q, nodes[0].db, c.t, "x@dest.test").ID] = true
	}
	seen := map[string]int{}
	for i, jobs := range claimAll(t, nodes, c.t, 4) {
		for _, j := range jobs {
			if prev, dup := seen[j.msg.ID]; dup {
				t.Errorf("message %s claimed by node %d and node %d", j.msg.ID, prev, i)
			}
			seen[j.msg.ID] = i
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d messages claimed; want %d", len(seen), len(want))
	}
}

// A node dies holding a claim: the other nodes neither take its lease
// back at their start nor claim the message before the lease ends; once
// it has ended exactly one of them claims the message and delivers it.
func TestNodesTakeOverADeadNodesLeaseWhenItEnds(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	lease := time.Minute
	nodes := sharedNodes(t, 3, c, lease)
	a, others := nodes[0], nodes[1:]
	m := accept(t, a.q, a.db, c.t, "x@dest.test")
	jobs, _, err := a.q.claimDue(c.t, 10)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("a's claim: %v, %d jobs", err, len(jobs))
	}
	a.db.Close() // a dies mid-attempt: nothing of the attempt is recorded
	b := others[0]
	// A node (re)starting meanwhile leaves a's live lease alone.
	for _, n := range others {
		if err := n.q.recoverLeases(); err != nil {
			t.Fatal(err)
		}
	}
	c.t = c.t.Add(lease - time.Nanosecond)
	for _, n := range others {
		if err := n.q.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	st, types := read(t, b.db, m)
	if st.Status != StatusSending || st.Recipients[0].Attempts != 1 || slices.Contains(types, EventDelivered) {
		t.Fatalf("before a's lease ended: %s, attempts %d, events %v", st.Status, st.Recipients[0].Attempts, types)
	}
	// The lease ends: both survivors race for the message; one wins.
	c.t = c.t.Add(time.Nanosecond)
	got := claimAll(t, others, c.t, 10)
	if n := len(got[0]) + len(got[1]); n != 1 {
		t.Fatalf("%d claims of the message once a's lease ended (b %d, c %d); want 1", n, len(got[0]), len(got[1]))
	}
	winner := others[0]
	j := append(got[0], got[1]...)[0]
	if len(got[1]) == 1 {
		winner = others[1]
	}
	winner.q.attempt(context.Background(), j)
	st, types = read(t, b.db, m)
	if st.Status != StatusDelivered || st.Recipients[0].Attempts != 2 || st.QueueAt != nil {
		t.Fatalf("after the take-over: %s, attempts %d, queue at %v", st.Status, st.Recipients[0].Attempts, st.QueueAt)
	}
	if got := strings.Join(types, ","); got != "message.sent,message.delivered" {
		t.Errorf("events %s", got)
	}
	b.db.View(func(tx *storage.Tx) error {
		if l := tx.Leases(); len(l) != 0 {
			t.Errorf("leases left: %v", l)
		}
		return nil
	})
}

// An attempt that finishes after its lease ended and another node claimed
// the message records nothing: the newer claim's state stands, and its
// own outcome is the one recorded.
func TestNodesLateAttemptDoesNotOverwriteTheNewClaim(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	lease := time.Minute
	nodes := sharedNodes(t, 2, c, lease)
	a, b := nodes[0], nodes[1]
	m := accept(t, a.q, a.db, c.t, "x@dest.test")
	late, _, err := a.q.claimDue(c.t, 10)
	if err != nil || len(late) != 1 {
		t.Fatalf("a's claim: %v, %d jobs", err, len(late))
	}
	c.t = c.t.Add(lease) // a's attempt hangs past its lease
	fresh, _, err := b.q.claimDue(c.t, 10)
	if err != nil || len(fresh) != 1 {
		t.Fatalf("b's claim after the lease: %v, %d jobs", err, len(fresh))
	}
	// a's attempt ends now with a temporary failure: recorded, it would
	// defer the message b is sending.
	c.t = c.t.Add(time.Second)
	tmp := []mta.RecipientResult{{Recipient: "x@dest.test", Status: mta.StatusTemporary, Code: 421, Text: "try later"}}
	if err := a.q.record(late[0], tmp, nil, false); err != nil {
		t.Fatal(err)
	}
	st, _ := read(t, b.db, m)
	if st.Status != StatusSending || st.Recipients[0].SMTPCode == 421 || st.Recipients[0].Attempts != 2 {
		t.Fatalf("the late attempt overwrote b's claim: %s, code %d, attempts %d", st.Status, st.Recipients[0].SMTPCode, st.Recipients[0].Attempts)
	}
	b.q.attempt(context.Background(), fresh[0])
	st, types := read(t, b.db, m)
	if st.Status != StatusDelivered || st.Recipients[0].SMTPCode != 250 {
		t.Fatalf("b's outcome: %s, code %d", st.Status, st.Recipients[0].SMTPCode)
	}
	if got := strings.Join(types, ","); got != "message.sent,message.delivered" {
		t.Errorf("events %s", got)
	}
	// A late outcome after b recorded its own changes nothing either.
	if err := a.q.record(late[0], tmp, nil, false); err != nil {
		t.Fatal(err)
	}
	if st2, _ := read(t, b.db, m); st2.Status != StatusDelivered || st2.Recipients[0].SMTPCode != 250 {
		t.Fatalf("after a second late record: %s, code %d", st2.Status, st2.Recipients[0].SMTPCode)
	}
}

// acceptLiveAt files a live message of a new account, from its verified
// domain, to one recipient, at now.
func acceptLiveAt(t *testing.T, q *Queue, db *storage.DB, now time.Time) storage.Message {
	t.Helper()
	m := storage.Message{ID: uuid.Must(uuid.NewV7()).String(), AccountID: uuid.NewString(),
		From: "a@acme.test", Domain: "acme.test", To: []string{"x@dest.test"}, Subject: "s",
		Recipients: []storage.Recipient{{Email: "x@dest.test", Kind: "to"}}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	sent, err := q.Accept(&m, now)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *storage.Tx) error {
		if err := tx.InsertDomain(storage.Domain{ID: uuid.NewString(), AccountID: m.AccountID, Name: m.Domain,
			Status: storage.DomainVerified, CreatedAt: now}); err != nil {
			return err
		}
		if err := File(tx, &m, sent); err != nil {
			return err
		}
		return tx.InsertMessage(m, storage.MessageContent{Subject: "s", Text: "t"}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Two nodes claiming at once from one warming IP: together they send
// exactly its daily cap, and the rest waits for the next day.
func TestNodesShareTheWarmupCap(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	nodes := sharedNodes(t, 2, c, time.Minute)
	const limit = 5
	err := nodes[0].db.Update(func(tx *storage.Tx) error {
		return tx.InsertIP(storage.IP{Address: "192.0.2.10", Hostname: "mta1.acme.test", Pool: DefaultPool,
			Warmup: "5,10", AddedAt: c.t})
	})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []storage.Message
	for range 3 * limit {
		msgs = append(msgs, acceptLiveAt(t, nodes[0].q, nodes[0].db, c.t))
	}
	got := claimAll(t, nodes, c.t, 1)
	if n := len(got[0]) + len(got[1]); n != limit {
		t.Fatalf("the nodes claimed %d+%d messages from an IP capped at %d a day", len(got[0]), len(got[1]), limit)
	}
	for _, jobs := range got {
		for _, j := range jobs {
			if j.src.Addr != "192.0.2.10" {
				t.Errorf("message %s leaves from %q", j.msg.ID, j.src.Addr)
			}
		}
	}
	waiting := 0
	nodes[1].db.View(func(tx *storage.Tx) error {
		if n := tx.IPCount("192.0.2.10", ipDay(c.t)); n != limit {
			t.Errorf("the IP's count today is %d; want %d", n, limit)
		}
		for _, m := range msgs {
			st, err := tx.Message(m.AccountID, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status == StatusDeferred && st.QueueAt != nil && st.QueueAt.Equal(NextReset(c.t)) {
				waiting++
			}
		}
		return nil
	})
	if waiting != 2*limit {
		t.Errorf("%d messages wait for the next day; want %d", waiting, 2*limit)
	}
}
