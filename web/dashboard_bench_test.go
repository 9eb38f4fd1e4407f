package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// BenchmarkDashboard fills a store with many messages (1,000,000, or
// $MAILBOLT_BENCH_MESSAGES; the fill stops early after
// $MAILBOLT_BENCH_FILL_SECONDS, 150 by default, and says how many it
// stored) and measures every dashboard page for a logged-in owner, one
// request at a time, reporting p50 and p95. The search pages are included:
// a subject prefix and a recipient that match almost nothing, so each page
// reads its whole budget (5,000 messages), and a stream filter that
// matches nothing and must decode each message it reads. Run:
//
//	flock /tmp/bench.lock go test ./web -bench Dashboard -run '^$'
//
// The messages are stored straight into the database, 5,000 to a
// transaction (storeMessages), not through the API: the API's path would
// build and sign each. 1% of them are queued; the daily counters are not
// filled (the Overview reads 30 days of them whatever they hold).
func BenchmarkDashboard(b *testing.B) {
	total := 1_000_000
	if s := os.Getenv("MAILBOLT_BENCH_MESSAGES"); s != "" {
		total, _ = strconv.Atoi(s)
	}
	fillFor := 150 * time.Second
	if s := os.Getenv("MAILBOLT_BENCH_FILL_SECONDS"); s != "" {
		n, _ := strconv.Atoi(s)
		fillFor = time.Duration(n) * time.Second
	}
	db, err := storage.Open(b.TempDir(), storage.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	a, err := app.New(db, app.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	acct, _ := a.CreateAccount(app.AccountInput{Name: "bench", Plan: "enterprise", RateLimit: 1 << 30})
	other, _ := a.CreateAccount(app.AccountInput{Name: "other", Plan: "enterprise", RateLimit: 1 << 30})
	key := issueKey(b, a, acct.ID, app.KeyInput{Name: "bench"}).Secret
	srv := httptest.NewServer(mustNew(b, a, dashConfig(nil)))
	defer srv.Close()

	// The messages: the last 30 days, newest last; every 10th is another
	// account's; 1 in 100 queued (half of them due, half scheduled); one
	// in 100,000 has a subject starting "Invoice", and one recipient
	// (rare@dest.test) gets one message in 100,000.
	now := time.Now().UTC()
	start := now.AddDate(0, 0, -30)
	step := now.Sub(start) / time.Duration(max(total, 1))
	t0 := time.Now()
	stored, own, ownTo := 0, "", ""
	for stored < total && time.Since(t0) < fillFor {
		n := min(total-stored, 50_000)
		msgs := make([]storage.Message, 0, n)
		for i := stored; i < stored+n; i++ {
			at := start.Add(time.Duration(i) * step)
			owner := acct.ID
			if i%10 == 9 {
				owner = other.ID
			}
			to, subject := fmt.Sprintf("user%d@dest.test", i%10_000), fmt.Sprintf("Order %d shipped", i)
			if i%100_000 == 50_000 {
				to, subject = "rare@dest.test", fmt.Sprintf("Invoice %d", i)
			}
			var q *time.Time
			if i%100 == 0 {
				q = ptr(at)
				if i%200 == 0 {
					q = ptr(now.Add(time.Hour))
				}
			}
			m := fakeMessage(owner, i, at, to, subject, q)
			msgs = append(msgs, m)
			if owner == acct.ID {
				own, ownTo = m.ID, to
			}
		}
		storeMessages(b, db, msgs)
		stored += n
	}
	fill := time.Since(t0)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("BenchmarkDashboard: stored %d messages (%d of the measured account) in %s, %.0f/s; load average %s\n",
		stored, stored-stored/10, fill.Round(time.Second), float64(stored)/fill.Seconds(), strings.TrimSpace(string(load)))

	// Some of everything else, for the other pages.
	api := func(method, path, body string) map[string]any {
		r := doRequest(b, srv.URL, method, path, key, body)
		if r.StatusCode/100 != 2 {
			b.Fatalf("%s %s: %d %s", method, path, r.StatusCode, r.body)
		}
		return r.json(b)
	}
	dom := api("POST", "/v1/domains", `{"name":"acme.test"}`)["id"].(string)
	hook := api("POST", "/v1/webhooks", `{"url":"https://hooks.example.com/in","events":["message.delivered"]}`)["id"].(string)
	tmpl := api("POST", "/v1/templates", `{"name":"welcome","subject":"Hi {{name}}","text":"Hello {{name}}"}`)["id"].(string)
	for i := range 100 {
		api("POST", "/v1/suppressions", fmt.Sprintf(`{"recipient":"s%d@dest.test"}`, i))
	}

	// Log in as the owner.
	op, err := a.OperatorIn(acct.ID)
	if err != nil {
		b.Fatal(err)
	}
	_, link, err := a.AddMember(op, "owner@example.com", "owner")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := a.SetPassword(link.Token, "", goodPassword, ""); err != nil {
		b.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	_, form := get("/dashboard/login")
	csrf := csrfField.FindStringSubmatch(form)
	if csrf == nil {
		b.Fatalf("no CSRF field: %s", form)
	}
	resp, err := client.PostForm(srv.URL+"/dashboard/login", url.Values{"email": {"owner@example.com"}, "password": {goodPassword}, "csrf": {csrf[1]}})
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/" {
		b.Fatalf("login: %d to %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	// A page deep in the history: the cursor of the first page of a
	// recipient search that reads its whole budget.
	_, first := get("/dashboard/messages?recipient=nobody@dest.test")
	deep := regexp.MustCompile(`href="(/dashboard/messages\?[^"]+)"`).FindStringSubmatch(first)
	if deep == nil || !strings.Contains(first, "Searched 5000 messages") {
		b.Fatalf("a recipient search that finds nothing does not stop at its budget: %.2000s", first)
	}
	since := url.QueryEscape(now.AddDate(0, 0, -7).Format(time.RFC3339))
	pages := []struct{ name, path string }{
		{"overview", "/dashboard/"},
		{"messages", "/dashboard/messages"},
		{"messages-older", strings.ReplaceAll(deep[1], "&amp;", "&")},
		{"messages-status", "/dashboard/messages?status=scheduled"},
		{"messages-recipient", "/dashboard/messages?recipient=rare@dest.test"},
		{"messages-tag-window", "/dashboard/messages?tag=bench&since=" + since},
		{"messages-subject", "/dashboard/messages?subject=invoice"},
		// The dearest page: no message is broadcast and no byte test can
		// tell, so each of the 5,000 is decoded.
		{"messages-stream", "/dashboard/messages?stream=broadcast"},
		{"messages-subject-window", "/dashboard/messages?subject=invoice&since=" + since},
		{"message", "/dashboard/messages/" + own},
		{"message-source", "/dashboard/messages/" + own + "/source?recipient=" + url.QueryEscape(ownTo)},
		{"webhooks", "/dashboard/webhooks"},
		{"webhook", "/dashboard/webhooks/" + hook},
		{"domains", "/dashboard/domains"},
		{"domain", "/dashboard/domains/" + dom},
		{"templates", "/dashboard/templates"},
		{"template", "/dashboard/templates/" + tmpl},
		{"suppressions", "/dashboard/suppressions"},
		{"api-keys", "/dashboard/api-keys"},
		{"team", "/dashboard/team"},
		{"audit-log", "/dashboard/audit-log"},
		{"ips", "/dashboard/ips"},
		{"account", "/dashboard/account"},
		{"grader", "/dashboard/grader"},
		{"security", "/dashboard/security"},
		{"accounts", "/dashboard/accounts"},
	}
	for _, p := range pages {
		if status, body := get(p.path); status != http.StatusOK {
			b.Fatalf("%s: %d %.1000s", p.path, status, body)
		}
		b.Run(p.name, func(b *testing.B) {
			latencies := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t := time.Now()
				if status, _ := get(p.path); status != http.StatusOK {
					b.Fatalf("%s: %d", p.path, status)
				}
				latencies = append(latencies, time.Since(t))
			}
			slices.Sort(latencies)
			n := len(latencies)
			b.ReportMetric(float64(latencies[n*50/100].Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(latencies[min(n-1, n*95/100)].Microseconds())/1000, "p95_ms")
		})
	}
}
