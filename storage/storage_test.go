package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func openTest(t testing.TB) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestGroupCommitSharesOneTransaction(t *testing.T) {
	db := openTest(t)
	// Hold the committer busy so the next writes queue up behind it.
	release := make(chan struct{})
	go db.Update(func(tx *Tx) error { <-release; return nil })
	time.Sleep(50 * time.Millisecond)

	before := db.Commits()
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.Update(func(tx *Tx) error {
				_, _, err := tx.PutSuppression(Suppression{AccountID: "a", Recipient: fmt.Sprintf("u%02d@x.test", i)})
				return err
			})
		}()
	}
	time.Sleep(100 * time.Millisecond) // let all 50 queue
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	commits := db.Commits() - before
	if commits > 2 {
		t.Errorf("%d writers took %d commits; want them grouped", n, commits)
	}
	db.View(func(tx *Tx) error {
		if got := tx.SuppressionCount("a"); got != n {
			t.Errorf("count = %d, want %d", got, n)
		}
		return nil
	})
}

func TestFailedWriteIsRolledBackAlone(t *testing.T) {
	db := openTest(t)
	release := make(chan struct{})
	go db.Update(func(tx *Tx) error { <-release; return nil })
	time.Sleep(20 * time.Millisecond)
	boom := errors.New("boom")
	var wg sync.WaitGroup
	results := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = db.Update(func(tx *Tx) error {
				if _, _, err := tx.PutSuppression(Suppression{AccountID: "a", Recipient: fmt.Sprintf("%d@x.test", i)}); err != nil {
					return err
				}
				if i == 1 {
					return boom
				}
				return nil
			})
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if results[0] != nil || results[2] != nil || !errors.Is(results[1], boom) {
		t.Fatalf("results = %v", results)
	}
	db.View(func(tx *Tx) error {
		if _, err := tx.Suppression("a", "1@x.test", ""); !errors.Is(err, ErrNotFound) {
			t.Errorf("failed write leaked: %v", err)
		}
		for _, r := range []string{"0@x.test", "2@x.test"} {
			if _, err := tx.Suppression("a", r, ""); err != nil {
				t.Errorf("%s: %v", r, err)
			}
		}
		if n := tx.SuppressionCount("a"); n != 2 {
			t.Errorf("count %d, want 2", n)
		}
		return nil
	})
}

func TestPanicInWriteIsAnError(t *testing.T) {
	db := openTest(t)
	err := db.Update(func(tx *Tx) error { panic("oops") })
	if err == nil {
		t.Fatal("want error")
	}
	if err := db.Update(func(tx *Tx) error { return nil }); err != nil {
		t.Fatal("committer died:", err)
	}
}

func TestWriteFaultInjection(t *testing.T) {
	fault := errors.New("disk on fire")
	o := DefaultOptions()
	o.WriteFault = func() error { return fault }
	db, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *Tx) error { return nil }); !errors.Is(err, fault) {
		t.Fatalf("got %v", err)
	}
}

func TestUpdateAfterClose(t *testing.T) {
	db, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := db.Update(func(tx *Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v", err)
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o := DefaultOptions()
	o.LockTimeout = 50 * time.Millisecond
	if _, err := Open(dir, o); !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v", err)
	}
}

func TestScanPages(t *testing.T) {
	db := openTest(t)
	const n = 237
	db.Update(func(tx *Tx) error {
		for i := range n {
			tx.PutSuppression(Suppression{AccountID: "a", Recipient: fmt.Sprintf("u%03d@x.test", i)})
		}
		// Another tenant's records sit right after "a"'s in key order.
		tx.PutSuppression(Suppression{AccountID: "b", Recipient: "zz@x.test"})
		return nil
	})
	for _, reverse := range []bool{false, true} {
		var seen []string
		opts := ListOptions{Limit: 50, Reverse: reverse}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			var list []Suppression
			var res ListResult
			db.View(func(tx *Tx) error {
				var err error
				list, res, err = tx.Suppressions("a", opts)
				return err
			})
			for _, s := range list {
				seen = append(seen, s.Recipient)
			}
			if !res.HasMore {
				break
			}
			opts.After = res.Next
		}
		if len(seen) != n {
			t.Fatalf("reverse=%v: saw %d, want %d", reverse, len(seen), n)
		}
		for i := range seen {
			want := i
			if reverse {
				want = n - 1 - i
			}
			if seen[i] != fmt.Sprintf("u%03d@x.test", want) {
				t.Fatalf("reverse=%v: item %d = %s", reverse, i, seen[i])
			}
		}
	}
	// Page mode: offset skips.
	db.View(func(tx *Tx) error {
		list, res, _ := tx.Suppressions("a", ListOptions{Offset: 200, Limit: 50})
		if len(list) != 37 || res.HasMore || list[0].Recipient != "u200@x.test" {
			t.Errorf("offset page: %d items, more=%v", len(list), res.HasMore)
		}
		list, _, _ = tx.Suppressions("b", ListOptions{Limit: 50})
		if len(list) != 1 {
			t.Errorf("tenant b sees %d", len(list))
		}
		return nil
	})
}

func TestSweepExpired(t *testing.T) {
	db := openTest(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db.Update(func(tx *Tx) error {
		tx.PutIdempotencyRecord("k", "old", IdempotencyRecord{Status: 200, CreatedAt: now.Add(-25 * time.Hour), ExpiresAt: now.Add(-time.Hour)})
		tx.PutIdempotencyRecord("k", "new", IdempotencyRecord{Status: 200, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)})
		// Rewritten with a later expiry: its first expiry entry must not delete it.
		tx.PutIdempotencyRecord("k", "renewed", IdempotencyRecord{Status: 200, ExpiresAt: now.Add(-time.Minute)})
		tx.PutIdempotencyRecord("k", "renewed", IdempotencyRecord{Status: 201, ExpiresAt: now.Add(time.Hour)})
		return nil
	})
	var n int
	db.Update(func(tx *Tx) error {
		var err error
		n, err = tx.SweepExpired(now, 100)
		return err
	})
	if n != 2 {
		t.Errorf("swept %d entries, want 2", n)
	}
	db.View(func(tx *Tx) error {
		if _, err := tx.IdempotencyRecord("k", "old"); !errors.Is(err, ErrNotFound) {
			t.Error("old record kept")
		}
		if _, err := tx.IdempotencyRecord("k", "new"); err != nil {
			t.Error("new record swept")
		}
		if r, err := tx.IdempotencyRecord("k", "renewed"); err != nil || r.Status != 201 {
			t.Error("renewed record swept")
		}
		return nil
	})
}

func TestBackupWhileWritingAndRestore(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			db.Update(func(tx *Tx) error {
				_, _, err := tx.PutSuppression(Suppression{AccountID: "a", Recipient: fmt.Sprintf("w%06d@x.test", i)})
				return err
			})
		}
	}()
	time.Sleep(50 * time.Millisecond)
	out := filepath.Join(t.TempDir(), "backup.db")
	if _, err := db.Backup(out); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if _, err := db.Backup(db.Path()); err == nil {
		t.Error("backup over the live file was allowed")
	}
	// Restore refuses while the database is open.
	if _, err := Restore(out, dir, "", time.Now()); !errors.Is(err, ErrLocked) {
		t.Fatalf("restore while open: %v", err)
	}
	db.Close()

	kept, err := Restore(out, dir, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if kept == "" {
		t.Fatal("previous database not kept")
	}
	restored, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	restored.View(func(tx *Tx) error {
		list, _, err := tx.Suppressions("a", ListOptions{Limit: 1})
		if err != nil || len(list) != 1 || list[0].Recipient != "w000000@x.test" {
			t.Errorf("restored data: %v %v", list, err)
		}
		if tx.SuppressionCount("a") == 0 {
			t.Error("counts lost")
		}
		return nil
	})
	if err := Check(kept); err != nil {
		t.Errorf("kept database broken: %v", err)
	}
}

func TestRestoreRejectsGarbage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.db")
	if err := writeFile(bad, []byte("not a database at all")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Restore(bad, dir, "", time.Now()); err == nil {
		t.Fatal("garbage restored")
	}
}

func TestReleaseMappedKeepsData(t *testing.T) {
	db := openTest(t)
	if err := db.Update(func(tx *Tx) error { return tx.PutAccount(Account{ID: "a1", Name: "kept"}) }); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if a, err := tx.Account("a1"); err != nil || a.Name != "kept" {
			t.Errorf("after ReleaseMapped: %+v %v", a, err)
		}
		return nil
	})
}

// Sessions are indexed by person: ending one account's sessions of a
// person leaves the others, and ending all of them empties the index.
func TestSessionsByPerson(t *testing.T) {
	db, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	err = db.Update(func(tx *Tx) error {
		for i, acct := range []string{"a1", "a1", "a2", ""} {
			s := Session{Email: "ann@example.com", AccountID: acct, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := tx.PutSession([]byte{byte(i), 0, 1}, s); err != nil {
				return err
			}
		}
		return tx.PutSession([]byte("bob"), Session{Email: "bob@example.com", AccountID: "a1", ExpiresAt: now.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *Tx) error {
		if n, err := tx.DeleteSessions("ann@example.com", "a1"); n != 2 || err != nil {
			t.Errorf("ann's sessions in a1: %d %v", n, err)
		}
		if _, err := tx.Session([]byte{2, 0, 1}); err != nil {
			t.Errorf("ann's session in a2 ended too: %v", err)
		}
		if n, _ := tx.DeleteSessions("ann@example.com", ""); n != 2 {
			t.Errorf("ann's other sessions: %d, want 2", n)
		}
		if _, err := tx.Session([]byte("bob")); err != nil {
			t.Errorf("bob's session ended with ann's: %v", err)
		}
		return nil
	})
	// The sweeper removes a session at its absolute expiry.
	db.Update(func(tx *Tx) error {
		_, err := tx.SweepExpired(now.Add(time.Hour), 100)
		if _, err := tx.Session([]byte("bob")); !errors.Is(err, ErrNotFound) {
			t.Errorf("an expired session is kept: %v", err)
		}
		return err
	})
}
