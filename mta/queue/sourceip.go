package queue

import (
	"fmt"
	"time"

	"mailbolt/storage"
)

// Which addresses a message may leave from (EligibleIPs). The operator
// registers the host's source addresses, each in a named pool with a
// warm-up schedule, and may dedicate an address to one account; an address
// dedicated to no account is shared.
//
//   - A message naming ip_pool X uses the IPs of pool X dedicated to its
//     account; if the account has none in X, the shared IPs of pool X. A
//     pool with neither is unknown to that account.
//   - A message without ip_pool uses the account's dedicated IPs, whatever
//     their pool; if it has none, the shared IPs of pool "default"; if
//     there are none either, the system's default source address and
//     hostname (the zero SourceIP).
//
// Among the eligible addresses Pick chooses the one that has sent the
// fewest messages today among those below their warm-up cap. When all are
// at their caps the message waits for the next daily reset (midnight UTC);
// it never overflows onto a cold IP or another pool.

// DefaultPool is the pool of an IP added without one, and the shared pool
// a message without ip_pool uses when its account has no dedicated IP.
const DefaultPool = "default"

// SourceIP is where one delivery attempt leaves from. The zero value means
// the system's default source address and the server's --hostname.
type SourceIP struct{ Addr, Hostname string }

// EligibleIPs applies the rule above: the IPs a message of accountID
// naming pool ("" for none) may leave from, and whether they are dedicated
// to the account.
func EligibleIPs(all []storage.IP, accountID, pool string) (ips []storage.IP, dedicated bool) {
	var shared []storage.IP
	sharedPool := pool
	if pool == "" {
		sharedPool = DefaultPool
	}
	for _, ip := range all {
		switch {
		case ip.AccountID == "" && ip.Pool == sharedPool:
			shared = append(shared, ip)
		case ip.AccountID != "" && ip.AccountID == accountID && (pool == "" || ip.Pool == pool):
			ips = append(ips, ip)
		}
	}
	if len(ips) > 0 {
		return ips, true
	}
	return shared, false
}

// ipDay numbers t's UTC calendar date (days since 1970-01-01), the key of
// the daily counters; it changes exactly at NextReset.
func ipDay(t time.Time) uint64 { return uint64(t.UTC().Unix() / 86400) }

// Warmup is where ip stands in its warm-up at now: its warm-up day and
// what it sent today.
func Warmup(tx *storage.Tx, ip storage.IP, now time.Time) (IPState, error) {
	sched, err := ParseSchedule(ip.Warmup)
	if err != nil {
		return IPState{}, fmt.Errorf("IP %s: %w", ip.Address, err)
	}
	return IPState{Addr: ip.Address, Day: WarmupDay(ip.AddedAt, now),
		SentToday: tx.IPCount(ip.Address, ipDay(now)), Schedule: sched}, nil
}

// PickSourceIP chooses the source address for one message of accountID in
// the named pool ("" = the account's default) at now, and counts the
// message against that IP's daily cap in tx. ok=false means every eligible
// IP is at its cap: the message must wait until `wait` (the next daily
// reset). With no eligible IP at all it returns the zero SourceIP and
// ok=true.
//
// A pool that was valid when the message was accepted may have lost its
// IPs since (removed or unassigned); the message then leaves from the
// default address rather than waiting forever (the queue logs a warning).
func PickSourceIP(tx *storage.Tx, accountID, pool string, now time.Time) (src SourceIP, ok bool, wait time.Time, err error) {
	all, err := tx.IPs() // byte order: ties in Pick go the same way every time
	if err != nil {
		return SourceIP{}, false, time.Time{}, fmt.Errorf("pick source IP: %w", err)
	}
	ips, _ := EligibleIPs(all, accountID, pool)
	if len(ips) == 0 {
		return SourceIP{}, true, time.Time{}, nil
	}
	now = now.UTC()
	states := make([]IPState, len(ips))
	for i, ip := range ips {
		if states[i], err = Warmup(tx, ip, now); err != nil {
			return SourceIP{}, false, time.Time{}, fmt.Errorf("pick source IP: %w", err)
		}
	}
	i, ok := Pick(states)
	if !ok {
		return SourceIP{}, false, NextReset(now), nil
	}
	if err := tx.AddIPCount(ips[i].Address, ipDay(now), 1); err != nil {
		return SourceIP{}, false, time.Time{}, fmt.Errorf("count source IP: %w", err)
	}
	return SourceIP{Addr: ips[i].Address, Hostname: ips[i].Hostname}, true, time.Time{}, nil
}
