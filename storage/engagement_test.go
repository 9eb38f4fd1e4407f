package storage

import (
	"errors"
	"testing"
	"time"
)

func TestLinksAndEngagement(t *testing.T) {
	db := openTest(t)
	err := db.Update(func(tx *Tx) error {
		if err := tx.InsertMessage(newMessage("a1", "m1", false, nil), MessageContent{}, nil); err != nil {
			return err
		}
		if err := tx.InsertMessage(newMessage("a1", "m2", false, nil), MessageContent{}, nil); err != nil {
			return err
		}
		return tx.PutLinks("m1", []string{"https://one.test/a", "https://two.test/b"})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		for i, want := range []string{"https://one.test/a", "https://two.test/b"} {
			if got, err := tx.Link("a1", "m1", i); err != nil || got != want {
				t.Errorf("link %d = %q, %v; want %q", i, got, err, want)
			}
		}
		if _, err := tx.Link("a1", "m1", 2); !errors.Is(err, ErrNotFound) {
			t.Errorf("link past the last: %v", err)
		}
		if _, err := tx.Link("a1", "m2", 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("link of a message without tracked links: %v", err)
		}
		if owner, err := tx.MessageOwner("m1"); err != nil || owner != "a1" {
			t.Errorf("owner %q, %v", owner, err)
		}
		if _, err := tx.MessageOwner("nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("owner of an unknown message: %v", err)
		}
		// No engagement yet is zero counts, not an error.
		if e, err := tx.Engagement("a1", "m1"); err != nil || e.Opens != 0 || e.FirstOpenAt != nil {
			t.Errorf("engagement before any: %+v, %v", e, err)
		}
		return nil
	})

	first := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	want := Engagement{Opens: 3, Clicks: 2, FirstOpenAt: &first, FirstClickAt: &first, LinkClicks: []int{0, 2}}
	if err := db.Update(func(tx *Tx) error { return tx.PutEngagement("m1", want) }); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		got, err := tx.Engagement("a1", "m1")
		if err != nil || got.Opens != 3 || got.Clicks != 2 || !got.FirstOpenAt.Equal(first) || len(got.LinkClicks) != 2 || got.LinkClicks[1] != 2 {
			t.Errorf("engagement %+v, %v; want %+v", got, err, want)
		}
		return nil
	})

	// A damaged record is an error, not zero counts to be written back.
	if err := db.Update(func(tx *Tx) error { return tx.bucket(bucketEngagement).Put([]byte("m2"), []byte("{not json")) }); err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if _, err := tx.Engagement("a1", "m2"); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("damaged engagement: %v, want a decode error", err)
		}
		return nil
	})
}

func TestServerSecretIsCopied(t *testing.T) {
	db := openTest(t)
	var s []byte
	db.View(func(tx *Tx) (err error) { s, err = tx.ServerSecret(); return err })
	if len(s) != 32 {
		t.Fatalf("secret of %d bytes", len(s))
	}
	s[0] ^= 0xff // the caller's copy, not the mapped page
	var again []byte
	db.View(func(tx *Tx) (err error) { again, err = tx.ServerSecret(); return err })
	if again[0] == s[0] {
		t.Error("ServerSecret returned the stored bytes, not a copy")
	}
}

func TestStatsAddAndRange(t *testing.T) {
	db := openTest(t)
	day := func(d int) time.Time { return time.Date(2026, 11, 1+d, 10, 0, 0, 0, time.UTC) }
	if StatDay(day(0)) != StatDay(day(0).Add(13*time.Hour)) || StatDay(day(1)) != StatDay(day(0))+1 {
		t.Fatal("StatDay does not count whole UTC days")
	}
	err := db.Update(func(tx *Tx) error {
		all := []string{"", "c:spring", "d:acme.test"}
		for _, s := range []struct {
			test bool
			dims []string
			d    int
			stat Stat
			n    uint64
		}{
			{false, all, 0, StatSent, 5},
			{false, all, 0, StatDelivered, 4},
			{false, all[:1], 0, StatSent, 1}, // not in the campaign or domain
			{false, all, 2, StatOpened, 7},
			{false, all, 9, StatSent, 1}, // outside the range read below
			{true, all, 0, StatSent, 100},
		} {
			if err := tx.AddStats("a1", s.test, s.dims, day(s.d), s.stat, s.n); err != nil {
				return err
			}
		}
		return tx.AddStats("a2", false, []string{""}, day(0), StatSent, 50)
	})
	if err != nil {
		t.Fatal(err)
	}
	d0 := StatDay(day(0))
	db.View(func(tx *Tx) error {
		got := tx.StatsRange("a1", false, "", d0, d0+3)
		if len(got) != 2 || got[d0][StatSent] != 6 || got[d0][StatDelivered] != 4 || got[d0+2][StatOpened] != 7 {
			t.Errorf("live, all: %v", got)
		}
		if got := tx.StatsRange("a1", false, "c:spring", d0, d0+3); got[d0][StatSent] != 5 {
			t.Errorf("campaign: %v", got)
		}
		if got := tx.StatsRange("a1", true, "", d0, d0+3); len(got) != 1 || got[d0][StatSent] != 100 {
			t.Errorf("test mode: %v", got)
		}
		if got := tx.StatsRange("a1", false, "d:other.test", d0, d0+3); len(got) != 0 {
			t.Errorf("a domain without mail: %v", got)
		}
		if got := tx.StatsRange("a1", false, "", d0+1, d0+1); len(got) != 0 {
			t.Errorf("a day without mail: %v", got)
		}
		if got := tx.StatsRange("a2", false, "", d0, d0); got[d0][StatSent] != 50 {
			t.Errorf("other account: %v", got)
		}
		return nil
	})
	// A counter record of the wrong size reads as zero and is rewritten.
	err = db.Update(func(tx *Tx) error {
		if err := tx.bucket(bucketStats).Put(statKey("a1", false, "", d0+5), []byte{1, 2, 3}); err != nil {
			return err
		}
		return tx.AddStats("a1", false, []string{""}, day(5), StatBouncedHard, 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		if got := tx.StatsRange("a1", false, "", d0+5, d0+5)[d0+5]; got[StatBouncedHard] != 1 || got[StatSent] != 0 {
			t.Errorf("rewritten damaged day: %v", got)
		}
		return nil
	})
}
