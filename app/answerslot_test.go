package app

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"mailbolt/storage"
)

// crashAfter is a storage write fault that fails the write after the next
// n: what a crash between two commits leaves behind.
type crashAfter struct{ writes, failAt atomic.Int32 }

func (c *crashAfter) fault() error {
	if c.writes.Add(1) == c.failAt.Load() {
		return errors.New("injected: the process died here")
	}
	return nil
}

// arm fails the write after the next n.
func (c *crashAfter) arm(n int32) { c.failAt.Store(c.writes.Load() + n + 1) }

// markerWrites is how many writes an idempotent request makes before its
// effect's: on a database shared by nodes, the one of its in-flight marker
// (idempotency.go); none on the embedded file.
func markerWrites(db *storage.DB) int32 {
	if db.Shared() {
		return 1
	}
	return 0
}

// An idempotent write stores its answer in the transaction of its effect:
// a crash (here, a failed write) after that commit cannot leave the effect
// done and the answer unsaved, so the retry replays instead of running the
// request a second time (issue 13, item 12).
func TestIdempotentAnswerCommitsWithTheEffect(t *testing.T) {
	crash := &crashAfter{}
	db, err := storage.Open(t.TempDir(), faults(t, crash.fault, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{}
	a := mustNew(t, db, options(c.now))
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	caller := storedKeyIn(t, a, acct.ID)
	render := func(k CreatedKey) Response { return Response{Status: 201, Body: []byte(k.Key.ID + " " + k.Secret)} }
	run := func(p Principal) Response {
		Answer(p, render)
		k, e := a.CreateKey(p, KeyInput{Name: "ci"})
		if e != nil {
			return Response{Status: AsError(e).Status()}
		}
		return render(k)
	}
	crash.arm(markerWrites(db) + 1) // the effect's write commits; the one after it fails
	first, replayed, e := a.Idempotent(context.Background(), caller, "s", "once", []byte("fp"), run)
	if e != nil || replayed || first.Status != 201 {
		t.Fatalf("first: %d %v %v", first.Status, replayed, e)
	}
	crash.failAt.Store(0)
	again, replayed, e := a.Idempotent(context.Background(), caller, "s", "once", []byte("fp"), run)
	if e != nil || !replayed || string(again.Body) != string(first.Body) {
		t.Fatalf("retry: replayed=%v %q (first %q) %v", replayed, again.Body, first.Body, e)
	}
	keys, _, _, e := a.ListKeys(caller, storage.ListOptions{Limit: 10})
	if e != nil || len(keys) != 2 { // the caller's and the one made
		t.Fatalf("%d keys, want the caller's and 1 made (%v)", len(keys), e)
	}
}

// A use case whose transaction fails stores no answer: the retry runs.
func TestIdempotentFailedEffectStoresNothing(t *testing.T) {
	crash := &crashAfter{}
	db, err := storage.Open(t.TempDir(), faults(t, crash.fault, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{}
	a := mustNew(t, db, options(c.now))
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	caller := storedKeyIn(t, a, acct.ID)
	runs := 0
	run := func(p Principal) Response {
		runs++
		Answer(p, func(k CreatedKey) Response { return Response{Status: 201, Body: []byte(k.Key.ID)} })
		k, e := a.CreateKey(p, KeyInput{Name: "ci"})
		if e != nil {
			return Response{Status: AsError(e).Status()}
		}
		return Response{Status: 201, Body: []byte(k.Key.ID)}
	}
	crash.arm(markerWrites(db)) // the effect's own write fails
	if first, _, _ := a.Idempotent(context.Background(), caller, "s", "k", []byte("fp"), run); first.Status != 500 {
		t.Fatalf("first = %d", first.Status)
	}
	if again, replayed, _ := a.Idempotent(context.Background(), caller, "s", "k", []byte("fp"), run); replayed || again.Status != 201 || runs != 2 {
		t.Fatalf("retry: %d replayed=%v runs=%d", again.Status, replayed, runs)
	}
}

// A route that renders another type than its use case returns fails the
// request (500, nothing committed) rather than store a wrong answer.
func TestIdempotentAnswerOfTheWrongType(t *testing.T) {
	a, _ := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	caller := storedKeyIn(t, a, acct.ID)
	resp, _, _ := a.Idempotent(context.Background(), caller, "s", "k", []byte("fp"), func(p Principal) Response {
		Answer(p, func(string) Response { return Response{Status: 201} })
		if _, e := a.CreateKey(p, KeyInput{Name: "ci"}); e != nil {
			return Response{Status: AsError(e).Status()}
		}
		return Response{Status: 201}
	})
	keys, _, _, _ := a.ListKeys(caller, storage.ListOptions{Limit: 10})
	if resp.Status != 500 || len(keys) != 1 { // the caller's alone
		t.Fatalf("status %d, %d keys", resp.Status, len(keys))
	}
}
