package storage

import (
	"bytes"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Failed TLS report uploads wait in due order up to the cap; a claim
// counts the attempt and moves the retry later, once: a second claim of
// the same listing finds it gone, as another node's would. Deleting
// drops it.
func TestTLSReportRetries(t *testing.T) {
	db := openTest(t)
	t0 := time.Date(2026, 11, 27, 0, 10, 0, 0, time.UTC)
	retry := func(url string, due time.Duration) TLSReportRetry {
		return TLSReportRetry{URL: url, Domain: "example.test", ReportID: "r", Body: []byte{0x1f, 0x8b, 0}, Attempts: 1, First: t0, Next: t0.Add(due)}
	}
	var kept int
	err := db.Update(func(tx *Tx) (err error) {
		kept, err = tx.AddTLSReportRetries([]TLSReportRetry{retry("https://b.test/", 2*time.Minute), retry("https://a.test/", time.Minute),
			retry("https://c.test/", 3*time.Minute)}, 2)
		return err
	})
	if err != nil || kept != 2 {
		t.Fatalf("kept %d of 3 under a cap of 2: %v", kept, err)
	}
	due := func(at time.Time) []TLSReportRetry {
		var out []TLSReportRetry
		db.View(func(tx *Tx) (err error) { out, err = tx.DueTLSReportRetries(at, 10); return err })
		return out
	}
	if got := due(t0); len(got) != 0 {
		t.Fatalf("due before its time: %+v", got)
	}
	got := due(t0.Add(time.Hour))
	if len(got) != 2 || got[0].URL != "https://a.test/" || got[1].URL != "https://b.test/" || got[0].ID == got[1].ID ||
		!bytes.Equal(got[0].Body, []byte{0x1f, 0x8b, 0}) || !got[0].First.Equal(t0) || !got[0].Next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("due: %+v", got)
	}
	// Full: nothing more is kept.
	db.Update(func(tx *Tx) (err error) {
		kept, err = tx.AddTLSReportRetries([]TLSReportRetry{retry("https://d.test/", 0)}, 2)
		return err
	})
	if kept != 0 {
		t.Fatal("kept beyond the cap")
	}

	later := t0.Add(10 * time.Minute)
	var claimed TLSReportRetry
	err = db.Update(func(tx *Tx) (err error) { claimed, err = tx.ClaimTLSReportRetry(got[0], later); return err })
	if err != nil || claimed.Attempts != 2 || !claimed.Next.Equal(later) || claimed.ID != got[0].ID || claimed.URL != "https://a.test/" {
		t.Fatalf("claimed %+v, %v", claimed, err)
	}
	err = db.Update(func(tx *Tx) error { _, err := tx.ClaimTLSReportRetry(got[0], later); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("second claim of one listing: %v", err)
	}
	if d := due(t0.Add(5 * time.Minute)); len(d) != 1 || d[0].URL != "https://b.test/" {
		t.Fatalf("after the claim, due: %+v", d)
	}
	if d := due(later); len(d) != 2 || d[1].ID != claimed.ID || d[1].Attempts != 2 {
		t.Fatalf("the claimed retry is due again at its new time: %+v", d)
	}
	db.Update(func(tx *Tx) error { return tx.DeleteTLSReportRetry(claimed) })
	db.View(func(tx *Tx) error {
		if n := tx.TLSReportRetries(); n != 1 {
			t.Errorf("%d left after a delete, want 1", n)
		}
		return nil
	})
}

// Migration 18 adds the empty retry bucket to a file at version 17, whose
// other records stay as they were.
func TestMigration18AddsTLSReportRetries(t *testing.T) {
	b, path := openAt(t, 17)
	b.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTLSRetries) != nil {
			t.Fatal("bucket exists at version 17")
		}
		return tx.Bucket(bucketTLSCounts).Put(tlsCountKey(5, "a.test", "sts"), []byte(`{"Day":5,"Domain":"a.test","Policy":"sts","Success":3}`))
	})
	db := openMigrated(t, b, path)
	db.View(func(tx *Tx) error {
		if n := tx.TLSReportRetries(); n != 0 {
			t.Errorf("%d retries after the migration", n)
		}
		if c, err := tx.TLSCounts(6); err != nil || len(c) != 1 || c[0].Success != 3 {
			t.Errorf("counts after the migration: %+v %v", c, err)
		}
		if v := schemaVersion(tx.btx); v < 18 {
			t.Errorf("schema version %d, want 18 or later", v)
		}
		return nil
	})
}
