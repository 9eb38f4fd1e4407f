package app

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Dedicated IPs and pools. The administrator registers the host's source
// addresses (AddIP), each in a named pool with a warm-up schedule, and may
// dedicate an address to one account (AssignIP) within the account's plan
// entitlement. An address assigned to no account is shared. Which of them
// a message may leave from, and how one is picked under warm-up, is the
// delivery queue's rule (mta/queue/sourceip.go).

// DefaultPool is the pool of an IP added without one, and the shared pool
// a message without ip_pool uses when its account has no dedicated IP.
const DefaultPool = queue.DefaultPool

var poolNameRe = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// CheckPoolName validates a pool name: 1 to 64 characters of a-z, 0-9, _
// and -.
func CheckPoolName(field, name string) error {
	if !poolNameRe.MatchString(name) {
		return Validation(field, fmt.Sprintf("%q is not a pool name: 1 to 64 characters of a-z, 0-9, _ and -", name))
	}
	return nil
}

// NormalizeIP parses an IPv4 or IPv6 address into its canonical text form
// (IPv4-mapped IPv6 addresses become IPv4). Addresses mail cannot leave
// from (unspecified, multicast, with a zone) are refused.
func NormalizeIP(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", Validation(field, "is required")
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return "", Validation(field, fmt.Sprintf("%q is not an IP address", s))
	}
	addr = addr.Unmap()
	switch {
	case addr.Zone() != "":
		return "", Validation(field, fmt.Sprintf("%q has a zone; give a global address", s))
	case addr.IsUnspecified(), addr.IsMulticast():
		return "", Validation(field, fmt.Sprintf("%q cannot be a source address", s))
	}
	return addr.String(), nil
}

// AddIP registers a source address in a pool with a warm-up schedule
// ("" means queue.DefaultWarmup; see queue.ParseSchedule) and pool ("" means
// DefaultPool). Warm-up day 1 is today. The IP starts shared.
func (a *App) AddIP(addr, hostname, pool, warmup string) (storage.IP, error) {
	addr, e := NormalizeIP("address", addr)
	if e != nil {
		return storage.IP{}, e
	}
	hostname, e = NormalizeDomain("hostname", hostname)
	if e != nil {
		return storage.IP{}, e
	}
	if pool == "" {
		pool = DefaultPool
	}
	if e := CheckPoolName("pool", pool); e != nil {
		return storage.IP{}, e
	}
	if strings.TrimSpace(warmup) == "" {
		warmup = queue.DefaultWarmup
	}
	sched, err := queue.ParseSchedule(warmup)
	if err != nil {
		return storage.IP{}, Validation("warmup", err.Error())
	}
	ip := storage.IP{Address: addr, Hostname: hostname, Pool: pool, Warmup: sched.String(), AddedAt: a.Now()}
	err = a.db.Update(func(tx *storage.Tx) error { return tx.InsertIP(ip) })
	return ip, storageErr(err, "IP "+addr)
}

// AssignIP dedicates an IP to an account, or makes it shared again when
// accountID is "". The account may hold at most its plan's DedicatedIPs;
// an IP dedicated to another account must be released first, so that a
// reputation never moves between tenants by accident. Assigning an IP to
// the account that holds it is a no-op.
func (a *App) AssignIP(addr, accountID string) (storage.IP, error) {
	addr, e := NormalizeIP("address", addr)
	if e != nil {
		return storage.IP{}, e
	}
	now := a.Now()
	var ip storage.IP
	err := a.db.Update(func(tx *storage.Tx) error {
		var err error
		if ip, err = tx.IP(addr); err != nil {
			return storageErr(err, "IP "+addr)
		}
		if accountID == "" {
			if ip.AccountID == "" {
				return nil
			}
			ip.AccountID, ip.AssignedAt = "", nil
			return tx.PutIP(ip)
		}
		acct, err := tx.Account(accountID)
		if err != nil {
			return storageErr(err, "account")
		}
		switch ip.AccountID {
		case accountID:
			return nil
		case "":
		default:
			return Conflict(fmt.Sprintf("IP %s is assigned to account %s; unassign it first", addr, ip.AccountID))
		}
		all, err := tx.IPs()
		if err != nil {
			return err
		}
		held := 0
		for _, other := range all {
			if other.AccountID == accountID {
				held++
			}
		}
		if limit := Limits(acct).DedicatedIPs; held+1 > limit {
			return &Error{Code: CodeConflict,
				Message: fmt.Sprintf("account %s has used its dedicated-IP entitlement (plan %s: %d; assigned: %d); unassign one first or change the plan", acct.ID, acct.Plan, limit, held),
				Details: map[string]any{"plan": acct.Plan, "entitled": limit, "assigned": held}}
		}
		ip.AccountID, ip.AssignedAt = accountID, &now
		return tx.PutIP(ip)
	})
	return ip, storageErr(err, "IP "+addr)
}

// RemoveIP unregisters an IP; mail stops leaving from it at once. Messages
// that named its pool and have no other IP there fall back as described
// in mta/queue/sourceip.go.
func (a *App) RemoveIP(addr string) error {
	addr, e := NormalizeIP("address", addr)
	if e != nil {
		return e
	}
	return storageErr(a.db.Update(func(tx *storage.Tx) error { return tx.DeleteIP(addr) }), "IP "+addr)
}

// IPStatus is an IP with where it stands in its warm-up today.
type IPStatus struct {
	storage.IP
	WarmupDay  int  `json:"warmup_day"`  // 1 on the day it was added
	WarmupDays int  `json:"warmup_days"` // capped days of its schedule; unlimited after
	DailyCap   *int `json:"daily_cap"`   // today's cap; nil when unlimited
	SentToday  int  `json:"sent_today"`  // messages sent from it today (UTC)
}

func ipStatus(tx *storage.Tx, ip storage.IP, now time.Time) (IPStatus, error) {
	st, err := queue.Warmup(tx, ip, now)
	if err != nil {
		return IPStatus{}, err
	}
	s := IPStatus{IP: ip, WarmupDay: st.Day, WarmupDays: st.Schedule.Days(), SentToday: st.SentToday}
	if limit, unlimited := st.Schedule.Cap(st.Day); !unlimited {
		s.DailyCap = &limit
	}
	return s, nil
}

// sortedIPs reads every IP in numeric address order.
func sortedIPs(tx *storage.Tx) ([]storage.IP, error) {
	all, err := tx.IPs()
	slices.SortFunc(all, func(x, y storage.IP) int {
		ax, _ := netip.ParseAddr(x.Address)
		ay, _ := netip.ParseAddr(y.Address)
		return ax.Compare(ay)
	})
	return all, err
}

func (a *App) ipStatuses(keep func(storage.IP) bool) ([]IPStatus, error) {
	now := a.Now()
	var out []IPStatus
	err := a.db.View(func(tx *storage.Tx) error {
		all, err := sortedIPs(tx)
		if err != nil {
			return err
		}
		for _, ip := range all {
			if !keep(ip) {
				continue
			}
			s, err := ipStatus(tx, ip, now)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	return out, storageErr(err, "IP")
}

// ListIPs lists every registered IP with its warm-up state, in address
// order (administration).
func (a *App) ListIPs() ([]IPStatus, error) {
	return a.ipStatuses(func(storage.IP) bool { return true })
}

// AccountIPs lists the IPs dedicated to one account. Shared IPs are not
// listed: their counts tell of other tenants' mail.
func (a *App) AccountIPs(p Principal) ([]IPStatus, error) {
	if err := a.authorize(p, ScopeIPsRead); err != nil {
		return nil, err
	}
	accountID := p.Account.ID
	return a.ipStatuses(func(ip storage.IP) bool { return ip.AccountID == accountID })
}

// PoolSummary is one pool as the administrator sees it.
type PoolSummary struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
	Accounts  []string `json:"accounts"` // accounts holding an IP of the pool
	Shared    int      `json:"shared"`   // how many of its IPs are shared
}

// ListPools lists every pool with its addresses and the accounts its IPs
// are assigned to, by pool name (administration).
func (a *App) ListPools() ([]PoolSummary, error) {
	var out []PoolSummary
	err := a.db.View(func(tx *storage.Tx) error {
		all, err := sortedIPs(tx)
		if err != nil {
			return err
		}
		byName := map[string]*PoolSummary{}
		for _, ip := range all {
			p := byName[ip.Pool]
			if p == nil {
				p = &PoolSummary{Name: ip.Pool, Addresses: []string{}, Accounts: []string{}}
				byName[ip.Pool] = p
			}
			p.Addresses = append(p.Addresses, ip.Address)
			switch {
			case ip.AccountID == "":
				p.Shared++
			case !slices.Contains(p.Accounts, ip.AccountID):
				p.Accounts = append(p.Accounts, ip.AccountID)
			}
		}
		for _, p := range byName {
			slices.Sort(p.Accounts)
			out = append(out, *p)
		}
		slices.SortFunc(out, func(x, y PoolSummary) int { return strings.Compare(x.Name, y.Name) })
		return nil
	})
	return out, storageErr(err, "IP pool")
}

// AccountPool is a pool an account's messages may name as ip_pool, with
// the addresses such a message would leave from.
type AccountPool struct {
	Name      string   `json:"name"`
	Dedicated bool     `json:"dedicated"` // the addresses are the account's own; else shared
	Addresses []string `json:"addresses"`
}

// AccountPools lists the pools usable by an account, by name: every pool
// holding an IP dedicated to it, and every pool with shared IPs.
func (a *App) AccountPools(p Principal) ([]AccountPool, error) {
	if err := a.authorize(p, ScopeIPsRead); err != nil {
		return nil, err
	}
	accountID := p.Account.ID
	var out []AccountPool
	err := a.db.View(func(tx *storage.Tx) error {
		all, err := sortedIPs(tx)
		if err != nil {
			return err
		}
		var names []string
		for _, ip := range all {
			if !slices.Contains(names, ip.Pool) {
				names = append(names, ip.Pool)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			ips, dedicated := queue.EligibleIPs(all, accountID, name)
			if len(ips) == 0 {
				continue
			}
			p := AccountPool{Name: name, Dedicated: dedicated, Addresses: []string{}}
			for _, ip := range ips {
				p.Addresses = append(p.Addresses, ip.Address)
			}
			out = append(out, p)
		}
		return nil
	})
	return out, storageErr(err, "IP pool")
}

// CheckPool reports 400 VALIDATION_ERROR (field "ip_pool") when pool is not
// usable by the account. "" is always usable.
func (a *App) CheckPool(tx *storage.Tx, accountID, pool string) error {
	if pool == "" {
		return nil
	}
	if e := CheckPoolName("ip_pool", pool); e != nil {
		return e
	}
	all, err := tx.IPs()
	if err != nil {
		return Internal(err)
	}
	if ips, _ := queue.EligibleIPs(all, accountID, pool); len(ips) == 0 {
		return Validation("ip_pool", fmt.Sprintf("unknown IP pool %q: it has no IP dedicated to this account and no shared IP", pool))
	}
	return nil
}
