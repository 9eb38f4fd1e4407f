package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

func (e *env) addIP(addr, pool, warmup, accountID string) {
	e.t.Helper()
	if _, ae := e.app.AddIP(addr, "mta-"+strings.ReplaceAll(addr, ".", "-")+".example.com", pool, warmup); ae != nil {
		e.t.Fatal(ae)
	}
	if accountID != "" {
		if _, ae := e.app.AssignIP(addr, accountID); ae != nil {
			e.t.Fatal(ae)
		}
	}
}

// send counts n messages of accountID against its IPs, as delivery does.
func (e *env) send(accountID string, n int) {
	e.t.Helper()
	for range n {
		err := e.app.DB().Update(func(tx *storage.Tx) error {
			_, ok, _, err := queue.PickSourceIP(tx, accountID, "", e.app.Now())
			if err == nil && !ok {
				err = fmt.Errorf("pool full")
			}
			return err
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// summarise renders a list answer's items as "field=value" strings.
func summarise(t *testing.T, r reply, fields ...string) []string {
	t.Helper()
	var body struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, item := range body.Data {
		var parts []string
		for _, f := range fields {
			parts = append(parts, fmt.Sprintf("%s=%v", f, item[f]))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func TestIPsAndPoolsPerAccount(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	other, otherKey := e.account("other", "growth", 1000)
	_, noneKey := e.account("none", "free", 1000)
	e.addIP("192.0.2.1", "default", "none", "")
	e.addIP("192.0.2.2", "txn", "10,20", e.acct.ID)
	e.addIP("192.0.2.3", "txn", "standard", other.ID)
	e.addIP("192.0.2.4", "bulk", "none", "")
	e.send(e.acct.ID, 3)

	fields := []string{"address", "hostname", "pool", "warmup_schedule", "warmup_day", "warming", "daily_cap", "sent_today"}
	check := func(key string, want ...string) {
		t.Helper()
		got := summarise(t, e.do("GET", "/v1/ips", key, nil).want(t, 200), fields...)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("GET /v1/ips:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	check(e.key, "address=192.0.2.2 hostname=mta-192-0-2-2.example.com pool=txn warmup_schedule=10,20 warmup_day=1 warming=true daily_cap=10 sent_today=3")
	check(otherKey, "address=192.0.2.3 hostname=mta-192-0-2-3.example.com pool=txn warmup_schedule=standard warmup_day=1 warming=true daily_cap=50 sent_today=0")
	check(noneKey)

	// The next UTC day: the warm-up advances and the count starts again.
	e.clock.Add(24 * time.Hour)
	check(e.key, "address=192.0.2.2 hostname=mta-192-0-2-2.example.com pool=txn warmup_schedule=10,20 warmup_day=2 warming=true daily_cap=20 sent_today=0")
	e.clock.Add(24 * time.Hour)
	e.send(e.acct.ID, 2)
	check(e.key, "address=192.0.2.2 hostname=mta-192-0-2-2.example.com pool=txn warmup_schedule=10,20 warmup_day=3 warming=false daily_cap=<nil> sent_today=2")

	pools := func(key string, want ...string) {
		t.Helper()
		got := summarise(t, e.do("GET", "/v1/ips/pools", key, nil).want(t, 200), "name", "dedicated", "addresses")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("GET /v1/ips/pools:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	pools(e.key, "name=bulk dedicated=false addresses=[192.0.2.4]", "name=default dedicated=false addresses=[192.0.2.1]",
		"name=txn dedicated=true addresses=[192.0.2.2]")
	pools(otherKey, "name=bulk dedicated=false addresses=[192.0.2.4]", "name=default dedicated=false addresses=[192.0.2.1]",
		"name=txn dedicated=true addresses=[192.0.2.3]")
	pools(noneKey, "name=bulk dedicated=false addresses=[192.0.2.4]", "name=default dedicated=false addresses=[192.0.2.1]")

	// Scope ips:read is required.
	narrow := e.newKey(e.acct.ID, []string{"account:read"}, false, nil)
	e.do("GET", "/v1/ips", narrow, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("GET", "/v1/ips/pools", narrow, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	reader := e.newKey(e.acct.ID, []string{"ips:read"}, false, nil)
	e.do("GET", "/v1/ips", reader, nil).want(t, 200)
	e.do("GET", "/v1/ips", "", nil).want(t, 401, "UNAUTHORIZED")
}

func TestIPRoutesMatchTheDocument(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	s, a := newOpenAPITestServer(t, appOptions(func() time.Time { return now }))
	acct, ae := a.CreateAccount(app.AccountInput{Name: "acme", Plan: "scale"})
	if ae != nil {
		t.Fatal(ae)
	}
	k := issueKey(t, a, acct.ID, app.KeyInput{Name: "k"})
	// Empty lists first, then one of each kind: warming, unlimited, IPv6.
	serveChecked(t, s, "GET", "/v1/ips", k.Secret, "", 200)
	serveChecked(t, s, "GET", "/v1/ips/pools", k.Secret, "", 200)
	for _, ip := range []struct{ addr, pool, warmup string }{
		{"192.0.2.1", "default", "standard"}, {"192.0.2.2", "default", "none"}, {"2001:db8::25", "v6", "5,10"},
	} {
		if _, ae := a.AddIP(ip.addr, "mta.example.com", ip.pool, ip.warmup); ae != nil {
			t.Fatal(ae)
		}
		if _, ae := a.AssignIP(ip.addr, acct.ID); ae != nil {
			t.Fatal(ae)
		}
	}
	_, body := serveChecked(t, s, "GET", "/v1/ips", k.Secret, "", 200)
	if !strings.Contains(string(body), `"daily_cap":null`) || !strings.Contains(string(body), `"daily_cap":50`) ||
		!strings.Contains(string(body), `"2001:db8::25"`) {
		t.Errorf("GET /v1/ips: %s", body)
	}
	_, body = serveChecked(t, s, "GET", "/v1/ips/pools", k.Secret, "", 200)
	if want := `{"data":[{"name":"default","dedicated":true,"addresses":["192.0.2.1","192.0.2.2"]},{"name":"v6","dedicated":true,"addresses":["2001:db8::25"]}]}`; strings.TrimSpace(string(body)) != want {
		t.Errorf("GET /v1/ips/pools: %s\nwant %s", body, want)
	}
	serveChecked(t, s, "POST", "/v1/ips", k.Secret, "{}", 405)
}
