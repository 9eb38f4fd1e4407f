package web

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"mailbolt/storage"
)

// idAt is a UUIDv7 string of the millisecond t falls in, made unique by n:
// ids that sort as their times do.
func idAt(t time.Time, n int) string {
	ms := uint64(t.UnixMilli())
	return fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", ms>>16, ms&0xffff, (n>>12)&0xfff, n&0xfff, n>>24)
}

// fakeMessage is a live message of acct created at, to one recipient, with
// subject; queueAt, when set, files it in the queue (status queued).
func fakeMessage(acct string, n int, at time.Time, to, subject string, queueAt *time.Time) storage.Message {
	m := storage.Message{ID: idAt(at, n), AccountID: acct, Status: "delivered", From: "hi@acme.test", Domain: "acme.test",
		To: []string{to}, Subject: subject, Tags: []string{"bench"}, CreatedAt: at, ExpiresAt: at.AddDate(0, 0, 30),
		Recipients: []storage.Recipient{{Email: to, Kind: "to", Status: "delivered"}}}
	if queueAt != nil {
		m.Status, m.QueueAt, m.Recipients[0].Status = "queued", queueAt, "queued"
		if queueAt.After(at) {
			m.Status = "scheduled"
		}
	}
	return m
}

// storeMessages stores msgs straight into the database, many to a
// transaction: the fast path of tests and benchmarks that need many
// messages (the API's path would build and sign each).
func storeMessages(t testing.TB, db *storage.DB, msgs []storage.Message) {
	t.Helper()
	for len(msgs) > 0 {
		batch := msgs[:min(len(msgs), 5000)]
		msgs = msgs[len(batch):]
		err := db.Update(func(tx *storage.Tx) error {
			for _, m := range batch {
				if err := tx.InsertMessage(m, storage.MessageContent{Subject: m.Subject, Text: "hi"}, []byte("Subject: "+m.Subject+"\r\n\r\nhi\r\n")); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The Overview shows the account's own part of the queue: due now, due
// later, and its oldest entry; another account's queued mail is not
// counted.
func TestDashboardOverviewQueue(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	now := e.clock.Now()
	other, _ := e.account("other", "enterprise", 1000)
	past, later := now.Add(-time.Hour), now.Add(time.Hour)
	storeMessages(t, e.db, []storage.Message{
		fakeMessage(other.ID, 1, now.Add(-3*time.Hour), "a@dest.test", "theirs", ptr(now.Add(-3*time.Hour))),
		fakeMessage(e.acct.ID, 2, past, "b@dest.test", "oldest", &past),
		fakeMessage(e.acct.ID, 3, now, "c@dest.test", "now", ptr(now)),
		fakeMessage(e.acct.ID, 4, now, "d@dest.test", "later", &later),
		fakeMessage(e.acct.ID, 5, now, "e@dest.test", "done", nil),
	})
	e.person(e.acct, "vic@example.com", "viewer")
	b := e.browser()
	wantRedirect(t, "login", b.login("vic@example.com", goodPassword), "/dashboard/")
	home := b.get("/dashboard/")
	wantStatus(t, "the overview", home, 200)
	for _, want := range []string{"<strong>2</strong> of your messages are due now", "<strong>1</strong> are due later",
		`href="/dashboard/messages/` + idAt(past, 2) + `"`, "(queued)", past.Format("2006-01-02 15:04:05")} {
		if !strings.Contains(home.body, want) {
			t.Errorf("the overview lacks %q: %s", want, home.body)
		}
	}
	if strings.Contains(home.body, idAt(now.Add(-3*time.Hour), 1)) || strings.Contains(home.body, "or more") {
		t.Errorf("the overview shows another account's queue, or a partial count: %s", home.body)
	}

	// The other account's owner sees only its own entry.
	e.person(other, "zed@example.com", "owner")
	z := e.browser()
	wantRedirect(t, "zed logs in", z.login("zed@example.com", goodPassword), "/dashboard/")
	if p := z.get("/dashboard/"); !strings.Contains(p.body, "<strong>1</strong> of your messages are due now") ||
		!strings.Contains(p.body, "<strong>0</strong> are due later") || strings.Contains(p.body, idAt(past, 2)) {
		t.Errorf("the other account's overview: %s", p.body)
	}
}

func ptr[T any](v T) *T { return &v }

var nextLink = regexp.MustCompile(`href="(/dashboard/messages\?[^"]+)"`)

// follow is the page behind the first list link of p.
func (b *browser) follow(p pageReply) pageReply {
	b.t.Helper()
	m := nextLink.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("no next link in %s", p.body)
	}
	return b.get(strings.ReplaceAll(m[1], "&amp;", "&"))
}

// The subject search matches a prefix, ignoring case, within the filters
// and the time window; each page reads at most the budget of messages and,
// when that runs out, says how far it searched and continues from there.
func TestDashboardSubjectSearch(t *testing.T) {
	e := newEnv(t, dashConfig(nil))
	base := e.clock.Now().Add(-48 * time.Hour)
	var msgs []storage.Message
	subject := func(i int) string {
		switch {
		case i == 3 || i == 27:
			return fmt.Sprintf("Invoice %d for you", i)
		case i == 28:
			return fmt.Sprintf("Your invoice %d", i)
		}
		return fmt.Sprintf("Welcome %d", i)
	}
	for i := range 30 { // message i created i minutes after base
		msgs = append(msgs, fakeMessage(e.acct.ID, i, base.Add(time.Duration(i)*time.Minute), fmt.Sprintf("u%d@dest.test", i%2), subject(i), nil))
	}
	other, _ := e.account("other", "enterprise", 1000)
	msgs = append(msgs, fakeMessage(other.ID, 99, base, "u0@dest.test", "Invoice theirs", nil))
	storeMessages(t, e.db, msgs)
	e.person(e.acct, "vic@example.com", "viewer")
	b := e.browser()
	wantRedirect(t, "login", b.login("vic@example.com", goodPassword), "/dashboard/")

	all := b.get("/dashboard/messages?subject=INVOICE")
	wantStatus(t, "the search", all, 200)
	if !strings.Contains(all.body, "Invoice 27 for you") || !strings.Contains(all.body, "Invoice 3 for you") ||
		strings.Contains(all.body, "Your invoice") || strings.Contains(all.body, "Welcome") || strings.Contains(all.body, "theirs") {
		t.Errorf("subject=INVOICE: %s", all.body)
	}
	if strings.Contains(all.body, "Searched ") || strings.Contains(all.body, "Older messages") {
		t.Errorf("a search that read everything offers more: %s", all.body)
	}
	// With the other filters and a time window.
	p := b.get("/dashboard/messages?subject=invoice&recipient=u1@dest.test&since=" + base.Add(10*time.Minute).Format(time.RFC3339))
	if !strings.Contains(p.body, "Invoice 27 for you") || strings.Contains(p.body, "Invoice 3 ") {
		t.Errorf("subject with recipient and since: %s", p.body)
	}
	if p := b.get("/dashboard/messages?subject=invoice&until=" + base.Add(10*time.Minute).Format(time.RFC3339)); !strings.Contains(p.body, "Invoice 3 for you") ||
		strings.Contains(p.body, "Invoice 27") {
		t.Errorf("subject with until: %s", p.body)
	}

	// A budget of 10 messages a page: the first page reads messages 29 to
	// 20 (finding 27) and stops; continuing reads 19 to 10 (none), then 9
	// to 0 (finding 3), and the search is done.
	defer func(n int) { messagesBudget = n }(messagesBudget)
	messagesBudget = 10
	first := b.get("/dashboard/messages?subject=invoice")
	reached := base.Add(20 * time.Minute).Format("2006-01-02 15:04:05")
	if !strings.Contains(first.body, "Invoice 27 for you") || strings.Contains(first.body, "Invoice 3 ") ||
		!strings.Contains(first.body, "Searched 10 messages, down to "+reached+" UTC") {
		t.Fatalf("the first page of a budgeted search: %s", first.body)
	}
	second := b.follow(first)
	if strings.Contains(second.body, "Invoice") || !strings.Contains(second.body, "No messages match") ||
		!strings.Contains(second.body, "down to "+base.Add(10*time.Minute).Format("2006-01-02 15:04:05")) {
		t.Fatalf("the second page: %s", second.body)
	}
	third := b.follow(second)
	if !strings.Contains(third.body, "Invoice 3 for you") || strings.Contains(third.body, "Searched ") {
		t.Fatalf("the third page: %s", third.body)
	}
	// The same budget bounds the other filters: recipient u0 matches every
	// other message, so a page of 3 fills before the budget runs out.
	if p := b.get("/dashboard/messages?recipient=u0@dest.test&limit=3"); strings.Count(p.body, "u0@dest.test</td>") != 3 ||
		!strings.Contains(p.body, "Older messages") {
		t.Errorf("recipient, limit 3: %s", p.body)
	}

	wantStatus(t, "a long prefix", b.get("/dashboard/messages?subject="+strings.Repeat("x", 201)), 400)

	// Another account's owner finds only its own.
	e.person(other, "zed@example.com", "owner")
	z := e.browser()
	wantRedirect(t, "zed logs in", z.login("zed@example.com", goodPassword), "/dashboard/")
	if p := z.get("/dashboard/messages?subject=invoice"); !strings.Contains(p.body, "Invoice theirs") || strings.Contains(p.body, "for you") {
		t.Errorf("the other account's search: %s", p.body)
	}
}
