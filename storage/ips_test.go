package storage

import (
	"errors"
	"testing"
	"time"
)

func TestIPRecords(t *testing.T) {
	db := openTest(t)
	added := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ips := []IP{
		{Address: "192.0.2.2", Hostname: "mta2.example.com", Pool: "default", Warmup: "standard", AddedAt: added},
		{Address: "192.0.2.1", Hostname: "mta1.example.com", Pool: "default", Warmup: "none", AccountID: "acct", AddedAt: added},
		{Address: "2001:db8::1", Hostname: "mta6.example.com", Pool: "bulk", Warmup: "10,20", AddedAt: added},
	}
	err := db.Update(func(tx *Tx) error {
		for _, ip := range ips {
			if err := tx.InsertIP(ip); err != nil {
				return err
			}
		}
		if err := tx.InsertIP(ips[0]); !errors.Is(err, ErrExists) {
			t.Errorf("second insert of %s: %v, want ErrExists", ips[0].Address, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *Tx) error {
		all, err := tx.IPs()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ip := range all {
			got = append(got, ip.Address)
		}
		if want := []string{"192.0.2.1", "192.0.2.2", "2001:db8::1"}; !equalStrings(got, want) {
			t.Errorf("IPs() = %v, want %v", got, want)
		}
		ip, err := tx.IP("192.0.2.1")
		if err != nil || ip.AccountID != "acct" || ip.Warmup != "none" || !ip.AddedAt.Equal(added) {
			t.Errorf("IP(192.0.2.1) = %+v, %v", ip, err)
		}
		if _, err := tx.IP("192.0.2.9"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown IP: %v", err)
		}
		return nil
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ipCounterKeys lists the counters stored for addr, as day numbers.
func ipCounterKeys(t *testing.T, db *DB, addr string) []uint64 {
	t.Helper()
	var days []uint64
	db.View(func(tx *Tx) error {
		pfx := prefix(addr)
		c := tx.bucket(bucketIPCounts).Cursor()
		for k, _ := c.Seek(pfx); k != nil && len(k) == len(pfx)+8 && string(k[:len(pfx)]) == string(pfx); k, _ = c.Next() {
			days = append(days, getU64(k[len(pfx):]))
		}
		return nil
	})
	return days
}

func TestIPCountsPerDay(t *testing.T) {
	db := openTest(t)
	const a, b = "192.0.2.1", "192.0.2.10" // a is a prefix of b as text
	add := func(addr string, day uint64, n int) {
		t.Helper()
		if err := db.Update(func(tx *Tx) error { return tx.AddIPCount(addr, day, n) }); err != nil {
			t.Fatal(err)
		}
	}
	count := func(addr string, day uint64) (n int) {
		db.View(func(tx *Tx) error { n = tx.IPCount(addr, day); return nil })
		return n
	}

	add(a, 100, 1)
	add(a, 100, 2)
	add(b, 100, 5)
	if got := count(a, 100); got != 3 {
		t.Errorf("day 100 count of %s = %d, want 3", a, got)
	}
	if got := count(b, 100); got != 5 {
		t.Errorf("day 100 count of %s = %d, want 5", b, got)
	}
	if got := count(a, 101); got != 0 {
		t.Errorf("day 101 count before any send = %d, want 0", got)
	}

	// The first write of day 101 drops day 100's counter of that address
	// only.
	add(a, 101, 1)
	if got := count(a, 101); got != 1 {
		t.Errorf("day 101 count = %d, want 1", got)
	}
	if got := ipCounterKeys(t, db, a); !equalU64(got, []uint64{101}) {
		t.Errorf("counters of %s = %v, want [101]", a, got)
	}
	if got := count(b, 100); got != 5 {
		t.Errorf("%s lost its counter when %s's day changed: %d", b, a, got)
	}

	// Skipped days leave nothing behind either.
	add(a, 103, 4)
	add(a, 103, 1)
	if got := ipCounterKeys(t, db, a); !equalU64(got, []uint64{103}) {
		t.Errorf("counters of %s = %v, want [103]", a, got)
	}
	// A late write for an earlier day (a transaction that read the clock
	// just before midnight) neither resurrects that day nor touches today's.
	add(a, 102, 7)
	if got := ipCounterKeys(t, db, a); !equalU64(got, []uint64{103}) {
		t.Errorf("counters of %s after a late write = %v, want [103]", a, got)
	}
	if got := count(a, 103); got != 5 {
		t.Errorf("day 103 count = %d, want 5", got)
	}

	// Deleting the IP removes its counters.
	err := db.Update(func(tx *Tx) error {
		if err := tx.PutIP(IP{Address: a, Hostname: "h.example.com", Pool: "p", Warmup: "none"}); err != nil {
			return err
		}
		return tx.DeleteIP(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ipCounterKeys(t, db, a); len(got) != 0 {
		t.Errorf("counters left after DeleteIP: %v", got)
	}
	if got := count(b, 100); got != 5 {
		t.Errorf("DeleteIP(%s) touched %s: %d", a, b, got)
	}
	if err := db.Update(func(tx *Tx) error { return tx.DeleteIP(a) }); !errors.Is(err, ErrNotFound) {
		t.Errorf("second DeleteIP: %v, want ErrNotFound", err)
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
