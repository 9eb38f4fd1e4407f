package web

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
	"mailbolt/storage/pgtest"
	"mailbolt/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// secondNode starts another node beside e: its own database handle on
// e's PostgreSQL database, App and server, on e's clock.
func (e *env) secondNode(sopts storage.Options, cfg Config) *httptest.Server {
	e.t.Helper()
	db, err := storage.Open(e.t.TempDir(), sopts)
	if err != nil {
		e.t.Fatal(err)
	}
	a, err := app.New(db, appOptions(e.clock.Now))
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(mustNew(e.t, a, cfg))
	e.t.Cleanup(func() {
		srv.Close()
		db.Close()
	})
	return srv
}

// TestDashboardLoginLimitsAcrossNodes: login attempts split across two
// nodes over one PostgreSQL database are refused at the same count as on
// one node (TestDashboardLoginRateLimits): per email and per address.
func TestDashboardLoginLimitsAcrossNodes(t *testing.T) {
	cfg := dashConfig(func(c *Config) { c.LoginEmailLimit, c.LoginIPLimit = 3, 5 })
	sopts := storagetest.PostgresOptions(t)
	e := newEnvOn(t, cfg, sopts, nil)
	e.person(e.acct, "ann@example.com", "owner")
	other := e.secondNode(sopts, cfg)
	onA := e.browser()
	jar, _ := cookiejar.New(nil)
	onB := &browser{t: t, base: other.URL, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	nodes := []*browser{onA, onB}
	for i := range 3 {
		wantStatus(t, "wrong password "+string(rune('1'+i)), nodes[i%2].login("ann@example.com", "not the password at all"), 401)
	}
	p := onB.login("ann@example.com", goodPassword)
	wantStatus(t, "the fourth attempt for one email, on the other node", p, 429)
	if p.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	wantStatus(t, "the fourth attempt for one email, on the first node", onA.login("ann@example.com", goodPassword), 429)
	// Both nodes see the address's attempts: the sixth is refused on
	// either (the 429s above counted as attempts of the address too).
	wantStatus(t, "the address's sixth attempt", onB.login("cy@example.com", goodPassword), 429)
	wantStatus(t, "the address's seventh attempt", onA.login("dee@example.com", goodPassword), 429)
	e.clock.Add(time.Minute)
	wantRedirect(t, "a minute later, on the other node", onB.login("ann@example.com", goodPassword), "/dashboard/")
}
