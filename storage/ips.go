package storage

import (
	"bytes"
	"time"
)

// IP is a source address registered by the administrator: the address mail
// leaves from, the name it greets with, the pool it belongs to, its warm-up
// schedule and the account it is dedicated to.
type IP struct {
	Address  string `json:"address"`  // canonical text form (netip.Addr.String)
	Hostname string `json:"hostname"` // EHLO name, lower case
	Pool     string `json:"pool"`
	Warmup   string `json:"warmup"` // schedule as queue.ParseSchedule reads it (mta/queue)
	// AccountID is the account the IP is dedicated to; "" for a shared IP.
	AccountID  string     `json:"account_id,omitempty"`
	AssignedAt *time.Time `json:"assigned_at,omitempty"`
	// AddedAt is when the IP was registered; its warm-up day 1 is that
	// calendar day (UTC).
	AddedAt time.Time `json:"added_at"`
}

// InsertIP stores a new IP; ErrExists when the address is registered.
func (tx *Tx) InsertIP(ip IP) error {
	if tx.bucket(bucketIPs).Get([]byte(ip.Address)) != nil {
		return ErrExists
	}
	return tx.PutIP(ip)
}

// PutIP stores ip, replacing the record of the same address.
func (tx *Tx) PutIP(ip IP) error {
	return putJSON(tx.bucket(bucketIPs), []byte(ip.Address), ip)
}

// IP reads one IP by its canonical address.
func (tx *Tx) IP(addr string) (IP, error) {
	var ip IP
	err := getJSON(tx.bucket(bucketIPs), []byte(addr), &ip)
	return ip, err
}

// IPs lists every registered IP in address (byte) order. Their number is
// set by the administrator (one per sending address the host owns), so a
// full walk is cheap.
func (tx *Tx) IPs() ([]IP, error) {
	var out []IP
	err := tx.bucket(bucketIPs).ForEach(func(k, v []byte) error {
		var ip IP
		if err := decodeJSON(k, v, &ip); err != nil {
			return err
		}
		out = append(out, ip)
		return nil
	})
	return out, err
}

// DeleteIP removes an IP and its daily counters; ErrNotFound when absent.
func (tx *Tx) DeleteIP(addr string) error {
	b := tx.bucket(bucketIPs)
	if b.Get([]byte(addr)) == nil {
		return ErrNotFound
	}
	if err := b.Delete([]byte(addr)); err != nil {
		return err
	}
	_, err := tx.trimIPCounts(addr, ^uint64(0))
	return err
}

func ipCountKey(addr string, day uint64) []byte {
	return append(prefix(addr), putU64(day)...)
}

// IPCount is how many messages left addr on day (days since 1970-01-01,
// UTC).
func (tx *Tx) IPCount(addr string, day uint64) int {
	return int(getU64(tx.bucket(bucketIPCounts).Get(ipCountKey(addr, day))))
}

// AddIPCount adds n to addr's count for day. Only the newest day is kept:
// the first write of a day removes the address's counters of earlier days
// (so each address holds one counter and no sweep is needed), and a write
// for a day older than the newest stored one is dropped, since caps only
// ever look at today.
func (tx *Tx) AddIPCount(addr string, day uint64, n int) error {
	b := tx.bucket(bucketIPCounts)
	key := ipCountKey(addr, day)
	old := b.Get(key)
	if old == nil {
		newer, err := tx.trimIPCounts(addr, day)
		if err != nil || newer {
			return err
		}
	}
	v := int64(getU64(old)) + int64(n)
	if v < 0 {
		v = 0
	}
	return b.Put(key, putU64(uint64(v)))
}

// trimIPCounts removes addr's counters of days before day and reports
// whether one of a later day exists.
func (tx *Tx) trimIPCounts(addr string, day uint64) (newer bool, err error) {
	b := tx.bucket(bucketIPCounts)
	pfx := prefix(addr)
	var stale [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, _ = c.Next() {
		if getU64(k[len(pfx):]) > day {
			return true, nil
		}
		stale = append(stale, bytes.Clone(k))
	}
	for _, k := range stale {
		if err := b.Delete(k); err != nil {
			return false, err
		}
	}
	return false, nil
}
