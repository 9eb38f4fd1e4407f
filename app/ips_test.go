package app

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/queue"
	"mailbolt/storage"
)

func mustAddIP(t *testing.T, a *App, addr, pool, warmup string) storage.IP {
	t.Helper()
	ip, e := a.AddIP(addr, "mta."+strings.NewReplacer(".", "-", ":", "-").Replace(addr)+".example.com", pool, warmup)
	if e != nil {
		t.Fatalf("AddIP(%s): %v", addr, e)
	}
	return ip
}

func mustAssign(t *testing.T, a *App, addr, accountID string) {
	t.Helper()
	if _, e := a.AssignIP(addr, accountID); e != nil {
		t.Fatalf("AssignIP(%s, %s): %v", addr, accountID, e)
	}
}

func mustAccount(t *testing.T, a *App, name, plan string) storage.Account {
	t.Helper()
	acct, e := a.CreateAccount(AccountInput{Name: name, Plan: plan})
	if e != nil {
		t.Fatal(e)
	}
	return acct
}

// pick runs PickSourceIP in its own write transaction at the app's clock.
func pick(t *testing.T, a *App, accountID, pool string) (queue.SourceIP, bool, time.Time) {
	t.Helper()
	var (
		src  queue.SourceIP
		ok   bool
		wait time.Time
	)
	err := a.db.Update(func(tx *storage.Tx) error {
		var err error
		src, ok, wait, err = queue.PickSourceIP(tx, accountID, pool, a.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return src, ok, wait
}

func TestAddIPValidation(t *testing.T) {
	a, _ := newTestApp(t)
	for _, tc := range []struct {
		addr, hostname, pool, warmup string
		field                        string // "" when valid
		wantAddr, wantHost, wantPool string
		wantWarmup                   string
	}{
		{addr: "192.0.2.1", hostname: "mta1.example.com", pool: "default", wantAddr: "192.0.2.1", wantHost: "mta1.example.com", wantPool: "default", wantWarmup: "standard"},
		{addr: " ::ffff:192.0.2.2 ", hostname: "MTA2.Example.COM.", pool: "", warmup: "NONE", wantAddr: "192.0.2.2", wantHost: "mta2.example.com", wantPool: "default", wantWarmup: "none"},
		{addr: "2001:DB8:0:0::1", hostname: "mta6.example.com", pool: "bulk_2-x", warmup: " 10, 20,40", wantAddr: "2001:db8::1", wantHost: "mta6.example.com", wantPool: "bulk_2-x", wantWarmup: "10,20,40"},
		{addr: "127.0.0.2", hostname: "mx.mailbolt.test", pool: "p", warmup: "standard", wantAddr: "127.0.0.2", wantHost: "mx.mailbolt.test", wantPool: "p", wantWarmup: "standard"},
		{addr: "", hostname: "h.example.com", field: "address"},
		{addr: "192.0.2.300", hostname: "h.example.com", field: "address"},
		{addr: "mta.example.com", hostname: "h.example.com", field: "address"},
		{addr: "192.0.2.0/24", hostname: "h.example.com", field: "address"},
		{addr: "fe80::1%eth0", hostname: "h.example.com", field: "address"},
		{addr: "0.0.0.0", hostname: "h.example.com", field: "address"},
		{addr: "::", hostname: "h.example.com", field: "address"},
		{addr: "224.0.0.1", hostname: "h.example.com", field: "address"},
		{addr: "192.0.2.9", hostname: "", field: "hostname"},
		{addr: "192.0.2.9", hostname: "localhost", field: "hostname"},
		{addr: "192.0.2.9", hostname: "bad_name.example.com", field: "hostname"},
		{addr: "192.0.2.9", hostname: "192.0.2.9", field: "hostname"},
		{addr: "192.0.2.9", hostname: "h.example.com", pool: "Bulk", field: "pool"},
		{addr: "192.0.2.9", hostname: "h.example.com", pool: "a b", field: "pool"},
		{addr: "192.0.2.9", hostname: "h.example.com", pool: strings.Repeat("p", 65), field: "pool"},
		{addr: "192.0.2.9", hostname: "h.example.com", warmup: "fast", field: "warmup"},
		{addr: "192.0.2.9", hostname: "h.example.com", warmup: "100,50", field: "warmup"},
	} {
		ip, e := a.AddIP(tc.addr, tc.hostname, tc.pool, tc.warmup)
		if tc.field != "" {
			if e == nil || AsError(e).Status() != http.StatusBadRequest || AsError(e).Code != CodeValidation || AsError(e).Details["field"] != tc.field {
				t.Errorf("AddIP(%q, %q, %q, %q) = %+v, want 400 on %s", tc.addr, tc.hostname, tc.pool, tc.warmup, e, tc.field)
			}
			continue
		}
		if e != nil {
			t.Errorf("AddIP(%q, %q, %q, %q): %v", tc.addr, tc.hostname, tc.pool, tc.warmup, e)
			continue
		}
		if ip.Address != tc.wantAddr || ip.Hostname != tc.wantHost || ip.Pool != tc.wantPool || ip.Warmup != tc.wantWarmup ||
			ip.AccountID != "" || !ip.AddedAt.Equal(a.Now()) {
			t.Errorf("AddIP(%q, ...) = %+v", tc.addr, ip)
		}
	}
	// The same address in any spelling is a conflict.
	if _, e := a.AddIP("::FFFF:192.0.2.1", "other.example.com", "other", ""); e == nil || AsError(e).Status() != http.StatusConflict {
		t.Errorf("duplicate address: %v, want 409", e)
	}
	all, _ := a.ListIPs()
	var addrs []string
	for _, ip := range all {
		addrs = append(addrs, ip.Address)
	}
	if want := []string{"127.0.0.2", "192.0.2.1", "192.0.2.2", "2001:db8::1"}; !slices.Equal(addrs, want) {
		t.Errorf("ListIPs addresses = %v, want %v", addrs, want)
	}
}

func TestAssignIPEntitlement(t *testing.T) {
	a, _ := newTestApp(t)
	for i := 1; i <= 16; i++ {
		mustAddIP(t, a, "192.0.2."+strconv.Itoa(i), "default", "none")
	}
	next := 1
	addr := func() string { s := "192.0.2." + strconv.Itoa(next); next++; return s }
	for _, tc := range []struct {
		plan     string
		entitled int
	}{
		{"free", 0}, {"pro", 0}, {"growth", 1}, {"scale", 3}, {"enterprise", 10},
	} {
		acct := mustAccount(t, a, tc.plan+" account", tc.plan)
		for i := 0; i < tc.entitled; i++ {
			mustAssign(t, a, addr(), acct.ID)
		}
		over := addr()
		_, e := a.AssignIP(over, acct.ID)
		if e == nil || AsError(e).Status() != http.StatusConflict || AsError(e).Code != CodeConflict ||
			AsError(e).Details["entitled"] != tc.entitled || AsError(e).Details["assigned"] != tc.entitled {
			t.Errorf("plan %s: assigning IP %d: %+v, want 409 entitled=%d", tc.plan, tc.entitled+1, e, tc.entitled)
		}
		next-- // the refused address is still free
		if got, _ := a.AccountIPs(keyIn(acct.ID)); len(got) != tc.entitled {
			t.Errorf("plan %s: account holds %d IPs, want %d", tc.plan, len(got), tc.entitled)
		}
	}
}

func TestAssignIPRules(t *testing.T) {
	a, _ := newTestApp(t)
	growth := mustAccount(t, a, "grower", "growth")
	other := mustAccount(t, a, "other", "scale")
	mustAddIP(t, a, "192.0.2.1", "default", "")
	mustAddIP(t, a, "192.0.2.2", "default", "")

	ip, e := a.AssignIP(" 192.0.2.1 ", growth.ID)
	if e != nil || ip.AccountID != growth.ID || ip.AssignedAt == nil {
		t.Fatalf("assign: %+v %v", ip, e)
	}
	// Again to the same account: a no-op, not a second IP against the plan.
	if _, e := a.AssignIP("192.0.2.1", growth.ID); e != nil {
		t.Errorf("re-assign to the holder: %v", e)
	}
	// Another account must wait until the IP is released.
	if _, e := a.AssignIP("192.0.2.1", other.ID); e == nil || AsError(e).Status() != http.StatusConflict {
		t.Errorf("assign a held IP to another account: %v, want 409", e)
	}
	for _, tc := range []struct {
		addr, account string
		status        int
	}{
		{"192.0.2.9", growth.ID, http.StatusNotFound},
		{"192.0.2.2", "no-such-account", http.StatusNotFound},
		{"not-an-ip", growth.ID, http.StatusBadRequest},
		{"192.0.2.9", "", http.StatusNotFound},
	} {
		if _, e := a.AssignIP(tc.addr, tc.account); e == nil || AsError(e).Status() != tc.status {
			t.Errorf("AssignIP(%q, %q) = %v, want %d", tc.addr, tc.account, e, tc.status)
		}
	}
	// Releasing frees the entitlement for another address.
	if ip, e := a.AssignIP("192.0.2.1", ""); e != nil || ip.AccountID != "" || ip.AssignedAt != nil {
		t.Fatalf("unassign: %+v %v", ip, e)
	}
	mustAssign(t, a, "192.0.2.2", growth.ID)
	mustAssign(t, a, "192.0.2.1", other.ID)

	if e := a.RemoveIP("192.0.2.2"); e != nil {
		t.Fatal(e)
	}
	if got, _ := a.AccountIPs(keyIn(growth.ID)); len(got) != 0 {
		t.Errorf("removed IP still listed: %+v", got)
	}
	if e := a.RemoveIP("192.0.2.2"); e == nil || AsError(e).Status() != http.StatusNotFound {
		t.Errorf("second remove: %v", e)
	}
}

func TestPoolEligibility(t *testing.T) {
	a, _ := newTestApp(t)
	acctA := mustAccount(t, a, "a", "scale")
	acctB := mustAccount(t, a, "b", "scale")
	acctC := mustAccount(t, a, "c", "growth")

	// Before any IP exists every message leaves from the default address.
	if src, ok, _ := pick(t, a, acctC.ID, ""); !ok || src != (queue.SourceIP{}) {
		t.Errorf("no IPs: %+v %v, want the zero SourceIP", src, ok)
	}

	mustAddIP(t, a, "192.0.2.1", "default", "none") // shared
	mustAddIP(t, a, "192.0.2.2", "bulk", "none")    // shared
	mustAddIP(t, a, "192.0.2.3", "bulk", "none")    // A
	mustAddIP(t, a, "192.0.2.4", "txn", "none")     // A
	mustAddIP(t, a, "192.0.2.5", "txn", "none")     // B
	mustAddIP(t, a, "192.0.2.6", "vip", "none")     // B
	mustAssign(t, a, "192.0.2.3", acctA.ID)
	mustAssign(t, a, "192.0.2.4", acctA.ID)
	mustAssign(t, a, "192.0.2.5", acctB.ID)
	mustAssign(t, a, "192.0.2.6", acctB.ID)

	for _, tc := range []struct {
		acct storage.Account
		pool string
		want []string // nil: unknown pool
	}{
		{acctA, "", []string{"192.0.2.3", "192.0.2.4"}},
		{acctA, "bulk", []string{"192.0.2.3"}}, // its own IP wins over the shared one
		{acctA, "txn", []string{"192.0.2.4"}},  // never B's IP of the same pool
		{acctA, "default", []string{"192.0.2.1"}},
		{acctA, "vip", nil}, // B's pool
		{acctB, "", []string{"192.0.2.5", "192.0.2.6"}},
		{acctB, "bulk", []string{"192.0.2.2"}},
		{acctC, "", []string{"192.0.2.1"}},
		{acctC, "bulk", []string{"192.0.2.2"}},
		{acctC, "txn", nil},
		{acctC, "nope", nil},
	} {
		var e error
		a.db.View(func(tx *storage.Tx) error { e = a.CheckPool(tx, tc.acct.ID, tc.pool); return nil })
		if tc.want == nil {
			if e == nil || AsError(e).Status() != http.StatusBadRequest || AsError(e).Code != CodeValidation || AsError(e).Details["field"] != "ip_pool" {
				t.Errorf("%s pool %q: CheckPool = %v, want 400 on ip_pool", tc.acct.Name, tc.pool, e)
			}
			continue
		}
		if e != nil {
			t.Errorf("%s pool %q: CheckPool = %v", tc.acct.Name, tc.pool, e)
		}
		// Picking as many times as there are eligible IPs (all unlimited)
		// visits each exactly once: fewest sent today first.
		var got []string
		for range tc.want {
			src, ok, _ := pick(t, a, tc.acct.ID, tc.pool)
			if !ok {
				t.Fatalf("%s pool %q: not ok", tc.acct.Name, tc.pool)
			}
			if src.Hostname != "mta.192-0-2-"+src.Addr[len("192.0.2."):]+".example.com" {
				t.Errorf("%s: hostname %q", src.Addr, src.Hostname)
			}
			got = append(got, src.Addr)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s pool %q picked %v, want %v", tc.acct.Name, tc.pool, got, tc.want)
		}
	}
	for _, name := range []string{"", "Bulk", strings.Repeat("x", 65)} {
		var e error
		a.db.View(func(tx *storage.Tx) error { e = a.CheckPool(tx, acctA.ID, name); return nil })
		if (name == "") != (e == nil) {
			t.Errorf("CheckPool(%q) = %v", name, e)
		}
	}

	// The pools each account may name, with the addresses it would use.
	view := func(acct storage.Account) string {
		pools, e := a.AccountPools(keyIn(acct.ID))
		if e != nil {
			t.Fatal(e)
		}
		var parts []string
		for _, p := range pools {
			kind := "shared"
			if p.Dedicated {
				kind = "dedicated"
			}
			parts = append(parts, p.Name+"("+kind+")="+strings.Join(p.Addresses, ","))
		}
		return strings.Join(parts, " ")
	}
	for acct, want := range map[*storage.Account]string{
		&acctA: "bulk(dedicated)=192.0.2.3 default(shared)=192.0.2.1 txn(dedicated)=192.0.2.4",
		&acctB: "bulk(shared)=192.0.2.2 default(shared)=192.0.2.1 txn(dedicated)=192.0.2.5 vip(dedicated)=192.0.2.6",
		&acctC: "bulk(shared)=192.0.2.2 default(shared)=192.0.2.1",
	} {
		if got := view(*acct); got != want {
			t.Errorf("AccountPools(%s) = %s, want %s", acct.Name, got, want)
		}
	}

	pools, _ := a.ListPools()
	var got []string
	for _, p := range pools {
		got = append(got, p.Name+"="+strings.Join(p.Addresses, ",")+"/"+strconv.Itoa(len(p.Accounts))+"/"+strconv.Itoa(p.Shared))
	}
	if want := []string{"bulk=192.0.2.2,192.0.2.3/1/1", "default=192.0.2.1/0/1", "txn=192.0.2.4,192.0.2.5/2/0", "vip=192.0.2.6/1/0"}; !slices.Equal(got, want) {
		t.Errorf("ListPools = %v, want %v", got, want)
	}

	// A pool emptied after messages named it sends from the default address.
	if e := a.RemoveIP("192.0.2.6"); e != nil {
		t.Fatal(e)
	}
	if src, ok, _ := pick(t, a, acctB.ID, "vip"); !ok || src != (queue.SourceIP{}) {
		t.Errorf("emptied pool: %+v %v", src, ok)
	}
}

func TestPickSourceIPWarmup(t *testing.T) {
	a, c := newTestApp(t) // 2026-11-22 12:00 UTC
	acct := mustAccount(t, a, "warming", "scale")
	mustAddIP(t, a, "192.0.2.1", "warm", "3,5")
	mustAddIP(t, a, "192.0.2.2", "warm", "3,5")
	mustAssign(t, a, "192.0.2.1", acct.ID)
	mustAssign(t, a, "192.0.2.2", acct.ID)

	// sendDay picks until the pool is full and returns how many left from
	// each address and when the mail must wait until.
	sendDay := func(limit int) (map[string]int, time.Time) {
		t.Helper()
		sent := map[string]int{}
		for range limit {
			src, ok, wait := pick(t, a, acct.ID, "warm")
			if !ok {
				if src != (queue.SourceIP{}) {
					t.Errorf("at cap: source %+v", src)
				}
				return sent, wait
			}
			sent[src.Addr]++
		}
		return sent, time.Time{}
	}
	status := func() []IPStatus {
		t.Helper()
		st, e := a.AccountIPs(keyIn(acct.ID))
		if e != nil || len(st) != 2 {
			t.Fatalf("AccountIPs: %+v %v", st, e)
		}
		return st
	}

	// Day 1: cap 3 each, spread evenly, then wait for midnight UTC.
	sent, wait := sendDay(100)
	if sent["192.0.2.1"] != 3 || sent["192.0.2.2"] != 3 {
		t.Errorf("day 1 sent %v, want 3 from each", sent)
	}
	if want := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC); !wait.Equal(want) {
		t.Errorf("day 1 wait until %v, want %v", wait, want)
	}
	for _, s := range status() {
		if s.WarmupDay != 1 || s.DailyCap == nil || *s.DailyCap != 3 || s.SentToday != 3 || s.WarmupDays != 2 {
			t.Errorf("day 1 status %+v (cap %v)", s, s.DailyCap)
		}
	}
	// Still full later the same day.
	c.add(11*time.Hour + 59*time.Minute)
	if _, ok, _ := pick(t, a, acct.ID, "warm"); ok {
		t.Error("a capped pool sent at 23:59")
	}

	// Day 2: counts start again and the cap rises to 5.
	c.add(2 * time.Minute)
	sent, wait = sendDay(100)
	if sent["192.0.2.1"] != 5 || sent["192.0.2.2"] != 5 {
		t.Errorf("day 2 sent %v, want 5 from each", sent)
	}
	if want := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC); !wait.Equal(want) {
		t.Errorf("day 2 wait until %v, want %v", wait, want)
	}
	for _, s := range status() {
		if s.WarmupDay != 2 || s.DailyCap == nil || *s.DailyCap != 5 || s.SentToday != 5 {
			t.Errorf("day 2 status %+v", s)
		}
	}

	// Day 3: the schedule is over; no cap, still spread evenly.
	c.add(24 * time.Hour)
	sent, wait = sendDay(40)
	if sent["192.0.2.1"] != 20 || sent["192.0.2.2"] != 20 || !wait.IsZero() {
		t.Errorf("day 3 sent %v (wait %v), want 20 from each", sent, wait)
	}
	for _, s := range status() {
		if s.WarmupDay != 3 || s.DailyCap != nil || s.SentToday != 20 {
			t.Errorf("day 3 status %+v", s)
		}
	}
}

func TestPickSourceIPColdAndWarmTogether(t *testing.T) {
	a, c := newTestApp(t)
	acct := mustAccount(t, a, "mixed", "scale")
	mustAddIP(t, a, "192.0.2.1", "default", "none") // already warm
	mustAddIP(t, a, "192.0.2.2", "default", "2,4")  // new
	mustAssign(t, a, "192.0.2.1", acct.ID)
	mustAssign(t, a, "192.0.2.2", acct.ID)
	// The cold IP gets its share up to its cap; the rest goes to the warm
	// one and nothing waits.
	sent := map[string]int{}
	for range 10 {
		src, ok, _ := pick(t, a, acct.ID, "")
		if !ok {
			t.Fatal("waited with an unlimited IP in the pool")
		}
		sent[src.Addr]++
	}
	if sent["192.0.2.1"] != 8 || sent["192.0.2.2"] != 2 {
		t.Errorf("sent %v, want 8 warm and 2 cold", sent)
	}
	// The shared pool is not used while the account has its own IPs, even
	// when they are all at their caps.
	mustAddIP(t, a, "192.0.2.3", "default", "none")
	c.add(24 * time.Hour)
	if e := a.RemoveIP("192.0.2.1"); e != nil {
		t.Fatal(e)
	}
	for i := range 5 {
		src, ok, wait := pick(t, a, acct.ID, "")
		if i < 4 && (!ok || src.Addr != "192.0.2.2") {
			t.Errorf("pick %d: %+v %v", i, src, ok)
		}
		if i == 4 && (ok || !wait.Equal(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))) {
			t.Errorf("pick %d past the cap: %+v %v %v", i, src, ok, wait)
		}
	}
}
