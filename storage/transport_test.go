package storage

import (
	"errors"
	"testing"
	"time"
)

// The policy cache keeps one policy per domain; TLS counts add up per day,
// domain and policy, list the days before a given one, and go once deleted.
func TestSTSPoliciesAndTLSCounts(t *testing.T) {
	db := openTest(t)
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	err := db.Update(func(tx *Tx) error {
		if _, err := tx.STSPolicy("example.com"); !errors.Is(err, ErrNotFound) {
			t.Errorf("empty cache: %v", err)
		}
		for _, id := range []string{"1", "2"} {
			if err := tx.PutSTSPolicy(STSPolicy{Domain: "example.com", ID: id, Policy: "version: STSv1\r\n", FetchedAt: now, Expires: now.Add(time.Hour)}); err != nil {
				return err
			}
		}
		for _, c := range []struct {
			day             uint32
			domain, failure string
		}{{10, "a.test", ""}, {10, "a.test", ""}, {10, "a.test", "certificate-host-mismatch"}, {11, "a.test", ""}, {9, "b.test", "starttls-not-supported"}} {
			if err := tx.AddTLSCount(c.day, c.domain, "sts", c.failure, 1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if p, err := tx.STSPolicy("example.com"); err != nil || p.ID != "2" || !p.Expires.Equal(now.Add(time.Hour)) {
			t.Errorf("policy %+v %v", p, err)
		}
		if all, err := tx.STSPolicies(); err != nil || len(all) != 1 {
			t.Errorf("policies %+v %v", all, err)
		}
		counts, err := tx.TLSCounts(11)
		if err != nil || len(counts) != 2 || counts[0].Domain != "b.test" || counts[1].Success != 2 || counts[1].Failures["certificate-host-mismatch"] != 1 {
			t.Errorf("counts %+v %v", counts, err)
		}
		return nil
	})
	db.Update(func(tx *Tx) error { return tx.DeleteTLSCounts(11) })
	db.View(func(tx *Tx) error {
		if counts, _ := tx.TLSCounts(12); len(counts) != 1 || counts[0].Day != 11 {
			t.Errorf("after delete: %+v", counts)
		}
		return nil
	})
}
