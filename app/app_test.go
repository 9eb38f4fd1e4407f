package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestApp(t *testing.T) (*App, *clock) {
	t.Helper()
	return newTestAppOn(t, storagetest.Options(t))
}

// newTestAppOn is newTestApp on a database opened with sopts: the
// embedded file's own tests (backup) give storage.DefaultOptions.
func newTestAppOn(t *testing.T, sopts storage.Options) (*App, *clock) {
	t.Helper()
	db, err := storage.Open(t.TempDir(), sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	return mustNew(t, db, options(c.now)), c
}

// faults are the run's storage options with write and read faults.
func faults(t testing.TB, write, read func() error) storage.Options {
	t.Helper()
	o := storagetest.Options(t)
	o.WriteFault, o.ReadFault = write, read
	return o
}

// options are DefaultOptions on the clock now.
func options(now func() time.Time) Options {
	o := DefaultOptions()
	o.Now = now
	return o
}

// mustNew builds an App or fails the test.
func mustNew(t testing.TB, db *storage.DB, opts Options) *App {
	t.Helper()
	a, err := New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestBootstrapOnce(t *testing.T) {
	a, _ := newTestApp(t)
	b, err := a.BootstrapIfEmpty()
	if err != nil || b == nil {
		t.Fatalf("first bootstrap: %v %v", b, err)
	}
	if b.Account.Name != "default" || len(b.LiveKey) != len(LivePrefix)+secretLen || b.TestKey[:len(TestPrefix)] != TestPrefix {
		t.Fatalf("bootstrap = %+v", b)
	}
	for _, k := range []string{b.LiveKey, b.TestKey} {
		p, e := a.Authenticate(k)
		if e != nil || p.Account.ID != b.Account.ID || !HasScope(p.Scopes, "grader:write") {
			t.Fatalf("bootstrap key %s: %v", k[:12], e)
		}
	}
	again, err := a.BootstrapIfEmpty()
	if err != nil || again != nil {
		t.Fatalf("second bootstrap created again: %v %v", again, err)
	}
}

func TestAuthenticateCodes(t *testing.T) {
	a, c := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	exp := c.now().Add(time.Hour)
	op := operatorOf(t, a, acct.ID)
	good, _ := a.CreateKey(op, KeyInput{Name: "k"})
	expiring, _ := a.CreateKey(op, KeyInput{Name: "e", ExpiresAt: &exp})
	revoked, _ := a.CreateKey(op, KeyInput{Name: "r"})
	a.RevokeKey(Operator(), revoked.Key.ID)

	c.add(2 * time.Hour)
	for _, tc := range []struct {
		secret, code string
	}{
		{"", CodeUnauthorized},
		{"nope", CodeInvalidAPIKey},
		{"svc_live_" + "x", CodeInvalidAPIKey},
		{revoked.Secret, CodeInvalidAPIKey},
		{expiring.Secret, CodeTokenExpired},
		{good.Secret, ""},
	} {
		_, e := a.Authenticate(tc.secret)
		got := ""
		if e != nil {
			got = AsError(e).Code
		}
		if got != tc.code {
			t.Errorf("Authenticate(%.12q) = %q, want %q", tc.secret, got, tc.code)
		}
	}
}

func TestCreateKeyValidation(t *testing.T) {
	a, c := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	past := c.now().Add(-time.Minute)
	op := operatorOf(t, a, acct.ID)
	for _, in := range []KeyInput{
		{Name: ""},
		{Name: "x", Scopes: []string{"messages:fly"}},
		{Name: "x", Scopes: []string{}},
		{Name: "x", ExpiresAt: &past},
		{Name: "bad\nname"},
		{Name: "x", Mode: "prod"},
	} {
		if _, e := a.CreateKey(op, in); e == nil || AsError(e).Code != CodeValidation {
			t.Errorf("CreateKey(%+v) = %v, want VALIDATION_ERROR", in, e)
		}
	}
	if _, e := a.OperatorIn(NewID()); e == nil || AsError(e).Status() != http.StatusNotFound {
		t.Errorf("operator in a missing account: %v", e)
	}
	if _, e := a.CreateKey(keyIn(NewID()), KeyInput{Name: "x"}); e == nil || AsError(e).Status() != http.StatusNotFound {
		t.Errorf("key for missing account: %v", e)
	}
}

func TestParseScopes(t *testing.T) {
	got, err := ParseScopes([]string{"messages:write", "events:read", "messages:write"})
	if err != nil || len(got) != 2 || got[0] != "events:read" {
		t.Errorf("got %v %v", got, err)
	}
	if got, _ := ParseScopes([]string{"messages:read", "*"}); len(got) != 1 || got[0] != "*" {
		t.Errorf("* not collapsed: %v", got)
	}
	if _, err := ParseScopes(nil); err == nil {
		t.Error("empty scopes accepted")
	}
	if CoversScopes([]string{"messages:read"}, []string{"messages:read", "messages:write"}) {
		t.Error("escalation allowed")
	}
	if CoversScopes([]string{"messages:read"}, []string{"*"}) {
		t.Error("escalation to * allowed")
	}
	if !CoversScopes([]string{"*"}, []string{"team:write"}) {
		t.Error("* does not cover")
	}
}

func TestIdempotentRunsOnceUnderConcurrency(t *testing.T) {
	a, _ := newTestApp(t)
	var runs atomic.Int32
	const n = 32
	var wg sync.WaitGroup
	replays := atomic.Int32{}
	bodies := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, replayed, e := a.Idempotent(context.Background(), pk("key1"), "s1", "idem", []byte("fp"), func(Principal) Response {
				runs.Add(1)
				time.Sleep(50 * time.Millisecond)
				return Response{Status: 202, Body: []byte("first")}
			})
			if e != nil {
				t.Error(e)
				return
			}
			if replayed {
				replays.Add(1)
			}
			bodies[i] = string(resp.Body)
		}()
	}
	wg.Wait()
	if runs.Load() != 1 || replays.Load() != n-1 {
		t.Fatalf("runs=%d replays=%d", runs.Load(), replays.Load())
	}
	for _, b := range bodies {
		if b != "first" {
			t.Fatalf("a caller got %q", b)
		}
	}
}

func TestIdempotentConflictScopeAndExpiry(t *testing.T) {
	a, c := newTestApp(t)
	run := func(status int) func(Principal) Response {
		return func(Principal) Response { return Response{Status: status, Body: []byte("x")} }
	}
	a.Idempotent(context.Background(), pk("k1"), "s1", "same", []byte("A"), run(201))
	if _, _, e := a.Idempotent(context.Background(), pk("k1"), "s1", "same", []byte("B"), run(201)); e == nil || AsError(e).Code != CodeIdempotencyConflict {
		t.Errorf("different body: %v", e)
	}
	// Another API key's identical idempotency key is a different slot.
	if _, replayed, _ := a.Idempotent(context.Background(), pk("k2"), "s2", "same", []byte("B"), run(201)); replayed {
		t.Error("k2 replayed k1's answer")
	}
	// 429 and 503 are not stored.
	a.Idempotent(context.Background(), pk("k1"), "s1", "busy", []byte("A"), run(429))
	if _, replayed, _ := a.Idempotent(context.Background(), pk("k1"), "s1", "busy", []byte("A"), run(201)); replayed {
		t.Error("429 was stored")
	}
	// After 24 h the key is fresh.
	c.add(24*time.Hour + time.Second)
	if _, replayed, e := a.Idempotent(context.Background(), pk("k1"), "s1", "same", []byte("B"), run(201)); replayed || e != nil {
		t.Errorf("expired key: replayed=%v e=%v", replayed, e)
	}
}

func pk(id string) Principal { return Principal{Kind: KindAPIKey, KeyID: id} }

// Idempotency records are kept per API key: a caller without one (the
// operator) would share one slot with every other such caller.
func TestIdempotentNeedsAKey(t *testing.T) {
	a, _ := newTestApp(t)
	ran := false
	_, _, e := a.Idempotent(context.Background(), Operator(), "", "k", []byte("A"), func(Principal) Response { ran = true; return Response{Status: 200} })
	if !HasCode(e, CodeForbidden) || ran {
		t.Fatalf("operator: %v (ran: %v)", e, ran)
	}
}

func TestIdempotentAnswersAreSealed(t *testing.T) {
	a, _ := newTestApp(t)
	secretBody := []byte(`{"key":"svc_live_TOPSECRET"}`)
	a.Idempotent(context.Background(), pk("k1"), "svc_live_owner", "x", []byte("A"), func(Principal) Response {
		return Response{Status: 201, Header: map[string][]string{"Location": {"/v1/x"}}, Body: secretBody}
	})
	a.db.View(func(tx *storage.Tx) error {
		rec, err := tx.IdempotencyRecord("k1", "x")
		if err != nil || rec.Status != 201 || bytes.Contains(rec.Sealed, []byte("TOPSECRET")) {
			t.Errorf("stored record exposes the answer: %v %q", err, rec.Sealed)
		}
		return nil
	})
	resp, replayed, e := a.Idempotent(context.Background(), pk("k1"), "svc_live_owner", "x", []byte("A"), nil)
	if e != nil || !replayed || !bytes.Equal(resp.Body, secretBody) || resp.Header["Location"][0] != "/v1/x" {
		t.Fatalf("replay: %v %v %q", e, replayed, resp.Body)
	}
	if _, _, e := a.Idempotent(context.Background(), pk("k1"), "svc_live_other", "x", []byte("A"), nil); e == nil {
		t.Fatal("another secret opened the stored answer")
	}
}

// Answers that may change on a retry are not stored: a refused caller
// (401, 403), a rate limit, a server failure.
func TestRefusalsAndFailuresAreNotStored(t *testing.T) {
	a, _ := newTestApp(t)
	for _, status := range []int{500, 503, 429, 401, 403} {
		a.Idempotent(context.Background(), pk("k1"), "s", fmt.Sprint(status), []byte("A"), func(Principal) Response { return Response{Status: status} })
		runs := 0
		a.Idempotent(context.Background(), pk("k1"), "s", fmt.Sprint(status), []byte("A"), func(Principal) Response { runs++; return Response{Status: 200} })
		if runs != 1 {
			t.Errorf("a %d answer was stored", status)
		}
	}
	for _, status := range []int{400, 404, 409, 422} {
		a.Idempotent(context.Background(), pk("k1"), "s", fmt.Sprint(status), []byte("A"), func(Principal) Response { return Response{Status: status} })
		if _, replayed, _ := a.Idempotent(context.Background(), pk("k1"), "s", fmt.Sprint(status), []byte("A"), nil); !replayed {
			t.Errorf("a %d answer was not stored", status)
		}
	}
}

func TestSweepRemovesExpiredIdempotency(t *testing.T) {
	a, c := newTestApp(t)
	a.Idempotent(context.Background(), pk("k1"), "s1", "x", []byte("A"), func(Principal) Response { return Response{Status: 200} })
	// Past the time of the in-flight marker nodes sharing a database write
	// first (its expiry entry is swept here), within the answer's: the
	// answer stays.
	c.add(IdempotencyInFlight + time.Minute)
	if _, err := a.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, replayed, e := a.Idempotent(context.Background(), pk("k1"), "s1", "x", []byte("A"), nil); !replayed || e != nil {
		t.Fatalf("the answer did not outlive its in-flight marker's time: replayed=%v %v", replayed, e)
	}
	c.add(25 * time.Hour)
	n, err := a.Sweep()
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	a.db.View(func(tx *storage.Tx) error {
		if _, err := tx.IdempotencyRecord("k1", "x"); err == nil {
			t.Error("record survived the sweep")
		}
		return nil
	})
}

func TestSuppressionsAndTeam(t *testing.T) {
	a, _ := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	s, created, e := a.AddSuppression(keyIn(acct.ID), "User@Example.COM", "", "")
	if e != nil || !created || s.Recipient != "user@example.com" || s.Reason != "manual" {
		t.Fatalf("%+v %v %v", s, created, e)
	}
	if _, created, _ := a.AddSuppression(keyIn(acct.ID), "user@example.com", "complaint", ""); created {
		t.Error("duplicate created")
	}
	for _, bad := range []string{"", "nope", "Name <a@b.test>", "a@b.test, c@d.test"} {
		if _, _, e := a.AddSuppression(keyIn(acct.ID), bad, "", ""); e == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, _, e := a.AddSuppression(keyIn(acct.ID), "x@y.test", "bored", ""); e == nil {
		t.Error("unknown reason accepted")
	}
	if e := a.DeleteSuppression(keyIn(acct.ID), "USER@example.com", ""); e != nil {
		t.Fatal(e)
	}
	if e := a.DeleteSuppression(keyIn(acct.ID), "user@example.com", ""); e == nil || AsError(e).Status() != 404 {
		t.Errorf("second delete: %v", e)
	}
	inv, e := a.Invite(keyIn(acct.ID), "Dev@Example.com", "developer")
	if e != nil || inv.Token == "" || inv.Member.Status != "invited" || inv.Member.Email != "dev@example.com" {
		t.Fatalf("%+v %v", inv, e)
	}
	if _, e := a.Invite(keyIn(acct.ID), "dev@example.com", "admin"); e == nil || AsError(e).Code != CodeConflict {
		t.Errorf("duplicate invite: %v", e)
	}
	if _, e := a.Invite(keyIn(acct.ID), "x@example.com", "god"); e == nil || AsError(e).Code != CodeValidation {
		t.Errorf("bad role: %v", e)
	}
}

func TestWorkersStopAndDoNotPanic(t *testing.T) {
	a, _ := newTestApp(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	k, _ := a.CreateKey(operatorOf(t, a, acct.ID), KeyInput{Name: "k"})
	a.Authenticate(k.Secret)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var used *time.Time
		a.db.View(func(tx *storage.Tx) error {
			got, _ := tx.APIKey(acct.ID, k.Key.ID)
			used = got.LastUsedAt
			return nil
		})
		if used != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("last_used_at never written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if a.Panics() != 0 {
		t.Fatalf("%d worker panics", a.Panics())
	}
}

// TestNewRefusesUnreadableSecret: with the server secret unreadable, New
// fails instead of signing links with an empty, forgeable key.
func TestNewRefusesUnreadableSecret(t *testing.T) {
	fault := errors.New("disk gone")
	db, err := storage.Open(t.TempDir(), faults(t, nil, func() error { return fault }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if a, err := New(db, DefaultOptions()); a != nil || !errors.Is(err, fault) {
		t.Fatalf("New = %v, %v; want the read error", a, err)
	}
}

// TestTokenLookupsReportStorageFailure: a storage failure while following
// a tracking, unsubscribe or invitation link is INTERNAL_ERROR, not a
// NOT_FOUND that would tell the visitor the link is bad.
func TestTokenLookupsReportStorageFailure(t *testing.T) {
	var fail atomic.Bool
	db, err := storage.Open(t.TempDir(), faults(t, nil, func() error {
		if fail.Load() {
			return errors.New("disk gone")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a := mustNew(t, db, DefaultOptions())
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	inv, e := a.Invite(keyIn(acct.ID), "dev@example.com", "admin")
	if e != nil {
		t.Fatal(e)
	}
	if _, err := a.Invitee(inv.Token); err != nil {
		t.Fatalf("Invitee: %v", err)
	}
	fail.Store(true)
	if _, err := a.Invitee(inv.Token); !HasCode(err, CodeInternal) {
		t.Errorf("Invitee with the disk gone: %v, want INTERNAL_ERROR", err)
	}
	tok := a.signToken(linkToken{tokenUnsubscribe, acct.ID, NewID(), 0})
	if _, err := a.UnsubscribeTarget(tok); !HasCode(err, CodeInternal) {
		t.Errorf("UnsubscribeTarget with the disk gone: %v, want INTERNAL_ERROR", err)
	}
	fail.Store(false)
	if _, err := a.UnsubscribeTarget(tok); !HasCode(err, CodeNotFound) {
		t.Errorf("UnsubscribeTarget of an unknown message: %v, want NOT_FOUND", err)
	}
}
