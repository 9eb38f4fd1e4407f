package storage

import (
	"fmt"
	"testing"
	"time"
)

func shardSet(shards ...int) OutboxShardSet {
	var s OutboxShardSet
	for _, i := range shards {
		s |= 1 << i
	}
	return s
}

func shardRange(from, to int) OutboxShardSet {
	var s OutboxShardSet
	for i := from; i <= to; i++ {
		s |= 1 << i
	}
	return s
}

// The outbox's shards are shared out among the live dispatchers, each
// moving towards ceil(16 / live) at its renewals; a lease that runs is
// never taken, one that ended (its holder died) is.
func TestOutboxShardLeases(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(t)
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	span := time.Minute
	lease := func(holder string, at time.Time, busy OutboxShardSet) OutboxLease {
		t.Helper()
		var l OutboxLease
		if err := db.Update(func(tx *Tx) error {
			var err error
			l, err = tx.LeaseOutboxShards(holder, at, at.Add(span), busy)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	want := func(what string, got OutboxLease, held, give OutboxShardSet, nodes int) {
		t.Helper()
		if got.Held != held || got.Give != give || got.Nodes != nodes || got.Fair != (OutboxShards+nodes-1)/nodes {
			t.Fatalf("%s: held %016b give %016b nodes %d fair %d; want held %016b give %016b nodes %d",
				what, got.Held, got.Give, got.Nodes, got.Fair, held, give, nodes)
		}
	}

	want("a alone", lease("a", now, 0), AllOutboxShards, 0, 1)
	want("b joins: nothing free", lease("b", now, 0), 0, 0, 2)
	want("a gives back its highest half", lease("a", now.Add(30*time.Second), 0), shardRange(0, 7), 0, 2)
	want("b takes them", lease("b", now.Add(30*time.Second), 0), shardRange(8, 15), 0, 2)

	// c joins: fair share 6. a still holds unsaved entries of shard 7: it
	// keeps it (to give back once they are saved) and gives 6 back.
	at := now.Add(40 * time.Second)
	want("c joins", lease("c", at, 0), 0, 0, 3)
	want("a, busy on 7", lease("a", at, shardSet(7)), shardRange(0, 7)&^shardSet(6), shardSet(7), 3)
	want("c takes 6", lease("c", at, 0), shardSet(6), 0, 3)
	want("b gives back two", lease("b", at, 0), shardRange(8, 13), 0, 3)
	want("c takes them", lease("c", at, 0), shardSet(6, 14, 15), 0, 3)
	want("a, 7 saved", lease("a", at.Add(time.Second), 0), shardRange(0, 5), 0, 3)
	want("c takes 7", lease("c", at.Add(time.Second), 0), shardSet(6, 7, 14, 15), 0, 3)

	// b dies: its heartbeat and leases end at at+span. Before that, its
	// shards are not taken; after, a and c share them out.
	want("a, b's leases running", lease("a", at.Add(span-time.Second), 0), shardRange(0, 5), 0, 3)
	at = at.Add(span)
	want("a, b dead", lease("a", at, 0), shardRange(0, 5)|shardSet(8, 9), 0, 2)
	want("c, b dead", lease("c", at, 0), shardSet(6, 7, 14, 15)|shardRange(10, 13), 0, 2)
	var shards []OutboxShardHolder
	var nodes map[string]time.Time
	db.View(func(tx *Tx) error { shards, nodes = tx.OutboxShardLeases(); return nil })
	if _, ok := nodes["b"]; ok || len(nodes) != 2 {
		t.Errorf("heartbeats %v: b's ended one is still there", nodes)
	}
	for i, s := range shards {
		if s.Holder != "a" && s.Holder != "c" || !s.Until.Equal(at.Add(span)) {
			t.Errorf("shard %d: %+v", i, s)
		}
	}

	// A release frees the shards at once.
	if err := db.Update(func(tx *Tx) error { return tx.ReleaseOutboxShards("c") }); err != nil {
		t.Fatal(err)
	}
	want("a after c's release", lease("a", at.Add(time.Second), 0), AllOutboxShards, 0, 1)

	// Leases left by a process that ended are void when the embedded file
	// is opened again (one process at a time holds it); on a shared
	// database they are the other nodes' and stay.
	db.Close()
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Shared() {
		want("b on a shared database", lease("b", at.Add(time.Second), 0), 0, 0, 2)
	} else {
		want("b after reopening", lease("b", at.Add(time.Second), 0), AllOutboxShards, 0, 1)
	}
}

// OutboxIn reads only the given shards' entries, walks at most scan keys,
// and says how far it looked.
func TestOutboxIn(t *testing.T) {
	db := openTest(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	db.Update(func(tx *Tx) error { return tx.PutWebhook(Webhook{ID: "w1", AccountID: "a"}) })
	for i := range 40 {
		ev := Event{ID: fmt.Sprintf("e%02d", i), AccountID: "a", Type: "message.sent", Timestamp: now,
			Envelope: []byte(`{}`), ExpiresAt: now.Add(time.Hour)}
		if err := db.Update(func(tx *Tx) error { return tx.AppendEvent(ev) }); err != nil {
			t.Fatal(err)
		}
	}
	// Sequence numbers 1..40: shard 3 holds 3, 19, 35; shard 4 holds 4, 20, 36.
	db.View(func(tx *Tx) error {
		out, through, more, err := tx.OutboxIn(shardSet(3, 4), 0, 10, 1000)
		if err != nil || more || through != 40 || len(out) != 6 || out[0].Seq != 3 || out[5].Seq != 36 || out[1].Event.ID != "e03" {
			t.Errorf("shards 3 and 4: %+v through %d more %v err %v", out, through, more, err)
		}
		out, through, more, _ = tx.OutboxIn(shardSet(3, 4), 4, 2, 1000)
		if !more || through != 20 || len(out) != 2 || out[0].Seq != 19 || out[1].Seq != 20 {
			t.Errorf("two after 4: %+v through %d more %v", out, through, more)
		}
		out, through, more, _ = tx.OutboxIn(shardSet(3, 4), 4, 10, 10)
		if !more || through != 14 || len(out) != 0 {
			t.Errorf("ten keys after 4: %+v through %d more %v", out, through, more)
		}
		out, through, more, _ = tx.OutboxIn(AllOutboxShards, 38, 10, 10)
		if more || through != 40 || len(out) != 2 {
			t.Errorf("all after 38: %+v through %d more %v", out, through, more)
		}
		if !tx.InOutbox(40) || tx.InOutbox(41) {
			t.Error("InOutbox")
		}
		return nil
	})
}
