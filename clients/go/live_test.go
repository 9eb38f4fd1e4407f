package mailbolt

// Tests against a real server, run by ci.sh through clients/harness.sh.
// They skip when MAILBOLT_BASE_URL is unset.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func liveClient(t *testing.T, keyVar string) *Client {
	t.Helper()
	if os.Getenv("MAILBOLT_BASE_URL") == "" {
		t.Skip("MAILBOLT_BASE_URL is unset: run through clients/go/ci.sh")
	}
	key := os.Getenv(keyVar)
	if key == "" {
		t.Fatalf("%s is unset", keyVar)
	}
	c, err := New(Options{APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func testMessage(subject string) *SendMessageRequest {
	return &SendMessageRequest{From: "app@example.com", To: []string{"ann@example.net"}, Subject: subject, Text: "hello"}
}

func wantCode(t *testing.T, err error, status int, codes ...string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v, want an *Error with %d %v", err, status, codes)
	}
	if e.StatusCode != status || !slices.Contains(codes, e.Code) || e.Message == "" || e.RequestID == "" {
		t.Fatalf("error %+v, want %d %v with a message and a request id", e, status, codes)
	}
	return e
}

func TestLiveSendGetAndBatch(t *testing.T) {
	c := liveClient(t, "MAILBOLT_TEST_API_KEY")
	m, err := c.Messages.Send(ctx(t), testMessage("live send"))
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == "" || m.Status != "queued" || m.StatusCode != 202 || m.RequestID == "" || m.RateLimit.Limit == 0 || m.RateLimit.Reset.IsZero() {
		t.Fatalf("send answer %+v", m)
	}
	got, err := c.Messages.Get(ctx(t), m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || got.Subject != "live send" || got.Mode != "test" || len(got.Recipients) != 1 || got.Content == nil {
		t.Fatalf("get %+v", got)
	}
	req := testMessage("require tls")
	req.RequireTLS = true
	rt, err := c.Messages.Send(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Messages.Get(ctx(t), rt.ID); err != nil || !got.RequireTLS {
		t.Fatalf("require_tls not kept: %+v %v", got, err)
	}
	b, err := c.Messages.SendBatch(ctx(t), []SendMessageRequest{*testMessage("batch 1"), *testMessage("batch 2")})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Data) != 2 || b.Data[0].ID == "" || b.Data[0].ID == b.Data[1].ID {
		t.Fatalf("batch %+v", b)
	}
	for _, a := range b.Data {
		g, err := c.Messages.Get(ctx(t), a.ID)
		if err != nil || g.ID != a.ID {
			t.Fatalf("get batch message %s: %v", a.ID, err)
		}
	}
}

func TestLiveCancelScheduled(t *testing.T) {
	c := liveClient(t, "MAILBOLT_TEST_API_KEY")
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	req := testMessage("scheduled")
	req.SendAt = &at
	m, err := c.Messages.Send(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != "scheduled" || m.SendAt == nil || !m.SendAt.Equal(at) {
		t.Fatalf("scheduled send %+v", m)
	}
	cm, err := c.Messages.Cancel(ctx(t), m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cm.ID != m.ID || cm.Status != "cancelled" || cm.CancelledAt == nil {
		t.Fatalf("cancel %+v", cm)
	}
}

func TestLivePaginationBothModes(t *testing.T) {
	c := liveClient(t, "MAILBOLT_API_KEY")
	const n = 7
	prefix := fmt.Sprintf("pg%d-", time.Now().UnixNano())
	var want []string
	for i := range n {
		r := fmt.Sprintf("%s%02d@example.com", prefix, i)
		if _, err := c.Suppressions.Add(ctx(t), &AddSuppressionRequest{Recipient: r}); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	ours := func(seen []string) []string {
		var out []string
		for _, s := range seen {
			if strings.HasPrefix(s, prefix) {
				out = append(out, s)
			}
		}
		return out
	}
	check := func(mode string, seen []string, pages int) {
		t.Helper()
		if got := ours(seen); !slices.Equal(got, want) {
			t.Fatalf("%s mode walked %v, want %v", mode, got, want)
		}
		if len(seen) != len(slices.Compact(slices.Clone(seen))) {
			t.Fatalf("%s mode repeated an item: %v", mode, seen)
		}
		if pages < (n+1)/2 {
			t.Fatalf("%s mode: %d pages for %d items of 2", mode, pages, len(seen))
		}
	}

	// cursor mode: pages until has_more is false
	var seen []string
	pages := 0
	var last *Page[Suppression]
	for p, err := range c.Suppressions.Pages(ctx(t), &ListParams{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		pages++
		last = p
		if p.Limit != 2 || len(p.Data) > 2 {
			t.Fatalf("cursor page %+v", p)
		}
		for _, s := range p.Data {
			seen = append(seen, s.Recipient)
		}
	}
	if last.HasMore || last.Cursor != "" || last.Next() {
		t.Fatalf("last cursor page %+v", last)
	}
	check("cursor", seen, pages)

	// page mode: pages until the Link header has no next
	seen, pages = nil, 0
	total := 0
	for p, err := range c.Suppressions.Pages(ctx(t), &ListParams{Limit: 2, Page: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if p.Page != pages || p.Links["first"] == "" || p.Links["last"] == "" {
			t.Fatalf("page %d: %+v", pages, p)
		}
		total = p.Total
		last = p
		for _, s := range p.Data {
			seen = append(seen, s.Recipient)
		}
	}
	if _, ok := last.Links["next"]; ok || len(seen) != total {
		t.Fatalf("page mode ended at page %d with %d of %d items, links %v", pages, len(seen), total, last.Links)
	}
	check("page", seen, pages)

	// single pages, and the item iterator
	p1, err := c.Suppressions.List(ctx(t), &ListParams{Limit: 2})
	if err != nil || len(p1.Data) != 2 || !p1.HasMore {
		t.Fatalf("first page %+v %v", p1, err)
	}
	p2, err := c.Suppressions.List(ctx(t), &ListParams{Limit: 2, Cursor: p1.Cursor})
	if err != nil || len(p2.Data) == 0 || p2.Data[0].Recipient <= p1.Data[1].Recipient {
		t.Fatalf("second page %+v %v", p2, err)
	}
	count := 0
	for _, err := range c.Suppressions.All(ctx(t), &ListParams{Limit: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	if count != total {
		t.Fatalf("All yielded %d, the list holds %d", count, total)
	}
	for _, r := range want {
		if _, err := c.Suppressions.Delete(ctx(t), r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLiveMessagesWalkedInBothModes(t *testing.T) {
	c := liveClient(t, "MAILBOLT_TEST_API_KEY")
	tag := fmt.Sprintf("walk%d", time.Now().UnixNano())
	var want []string
	for i := range 5 {
		req := testMessage(fmt.Sprintf("walk %d", i))
		req.Tags = []string{tag}
		m, err := c.Messages.Send(ctx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, m.ID)
	}
	slices.Reverse(want) // newest first
	for _, page := range []int{0, 1} {
		var got []string
		for m, err := range c.Messages.All(ctx(t), &ListMessagesParams{ListParams: ListParams{Limit: 2, Page: page}, Tag: tag}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("page=%d: walked %v, want %v", page, got, want)
		}
	}
}

func TestLiveErrorClasses(t *testing.T) {
	test := liveClient(t, "MAILBOLT_TEST_API_KEY")
	m, err := test.Messages.Send(ctx(t), testMessage("for the 404"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("401", func(t *testing.T) {
		bad, err := New(Options{APIKey: "svc_live_not_a_real_key"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.Account.Get(ctx(t))
		wantCode(t, err, 401, "UNAUTHORIZED", "INVALID_API_KEY")
	})
	t.Run("403", func(t *testing.T) {
		narrow := liveClient(t, "MAILBOLT_NARROW_API_KEY")
		if _, err := narrow.Account.Get(ctx(t)); err != nil {
			t.Fatalf("the narrow key may read the account: %v", err)
		}
		_, err := narrow.Messages.List(ctx(t), nil)
		wantCode(t, err, 403, "FORBIDDEN", "INSUFFICIENT_SCOPES")
	})
	t.Run("404", func(t *testing.T) {
		other := liveClient(t, "MAILBOLT_OTHER_API_KEY")
		_, err := other.Messages.Get(ctx(t), m.ID)
		wantCode(t, err, 404, "NOT_FOUND")
	})
	t.Run("409", func(t *testing.T) {
		key := NewIdempotencyKey()
		if _, err := test.Messages.Send(ctx(t), testMessage("first body"), WithIdempotencyKey(key)); err != nil {
			t.Fatal(err)
		}
		_, err := test.Messages.Send(ctx(t), testMessage("another body"), WithIdempotencyKey(key))
		wantCode(t, err, 409, "IDEMPOTENCY_CONFLICT")
	})
	t.Run("422", func(t *testing.T) {
		live := liveClient(t, "MAILBOLT_API_KEY")
		_, err := live.Messages.Send(ctx(t), testMessage("unverified"))
		e := wantCode(t, err, 422, "DOMAIN_NOT_VERIFIED")
		if e.Details["domain"] != "example.com" {
			t.Fatalf("details %v", e.Details)
		}
	})
}

// countingTransport records the status of every answer.
type countingTransport struct {
	mu       sync.Mutex
	statuses []int
}

func (ct *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		ct.mu.Lock()
		ct.statuses = append(ct.statuses, resp.StatusCode)
		ct.mu.Unlock()
	}
	return resp, err
}

func TestLiveRateLimitRetried(t *testing.T) {
	liveClient(t, "MAILBOLT_LIMITED_API_KEY") // skips offline
	ct := &countingTransport{}
	c, err := New(Options{APIKey: os.Getenv("MAILBOLT_LIMITED_API_KEY"), HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	// The key allows 1 request per second, so the second of two quick calls
	// gets 429 and is retried after Retry-After. Two calls that straddle a
	// second boundary both pass: then try again (rarely needed).
	for try := 0; try < 5; try++ {
		if _, err := c.Account.Get(ctx(t)); err != nil {
			t.Fatal(err)
		}
		a, err := c.Account.Get(ctx(t))
		if err != nil {
			t.Fatalf("the rate-limited call was not retried to success: %v", err)
		}
		if a.Attempts > 1 {
			if !slices.Contains(ct.statuses, 429) || a.StatusCode != 200 || a.RateLimit.Limit != 1 {
				t.Fatalf("statuses %v, answer %+v", ct.statuses, a.Response)
			}
			return
		}
	}
	t.Fatalf("no 429 in five pairs of calls: statuses %v", ct.statuses)
}

func TestLiveIdempotentReplay(t *testing.T) {
	c := liveClient(t, "MAILBOLT_TEST_API_KEY")
	key := NewIdempotencyKey()
	a, err := c.Messages.Send(ctx(t), testMessage("replayed"), WithIdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Messages.Send(ctx(t), testMessage("replayed"), WithIdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if a.IdempotentReplayed || !b.IdempotentReplayed || a.ID != b.ID || b.IdempotencyKey != key {
		t.Fatalf("first %s replayed=%v, second %s replayed=%v", a.ID, a.IdempotentReplayed, b.ID, b.IdempotentReplayed)
	}
	// a batch too
	msgs := []SendMessageRequest{*testMessage("b1")}
	x, err := c.Messages.SendBatch(ctx(t), msgs, WithIdempotencyKey(key+"-batch"))
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.Messages.SendBatch(ctx(t), msgs, WithIdempotencyKey(key+"-batch"))
	if err != nil || !y.IdempotentReplayed || y.Data[0].ID != x.Data[0].ID {
		t.Fatalf("batch replay %+v %v", y, err)
	}
}

// TestLiveResources touches the other operations once each.
func TestLiveResources(t *testing.T) {
	c := liveClient(t, "MAILBOLT_API_KEY")
	cx := ctx(t)
	acc, err := c.Account.Get(cx)
	if err != nil || acc.ID == "" || acc.Limits.RequestsPerSecond == 0 {
		t.Fatalf("account %+v %v", acc, err)
	}

	k, err := c.APIKeys.Create(cx, &CreateAPIKeyRequest{Name: "go-client", Scopes: []string{"account:read"}})
	if err != nil || !strings.HasPrefix(k.Key, "svc_") {
		t.Fatalf("create key %+v %v", k, err)
	}
	if g, err := c.APIKeys.Get(cx, k.ID); err != nil || g.Name != "go-client" || g.Key != "" {
		t.Fatalf("get key %+v %v", g, err)
	}
	if p, err := c.APIKeys.List(cx, nil); err != nil || len(p.Data) == 0 {
		t.Fatalf("list keys %v", err)
	}
	if r, err := c.APIKeys.Revoke(cx, k.ID); err != nil || r.RevokedAt == nil {
		t.Fatalf("revoke %+v %v", r, err)
	}

	d, err := c.Domains.Create(cx, &CreateDomainRequest{Name: fmt.Sprintf("d%d.example.org", time.Now().UnixNano())})
	if err != nil || d.ID == "" || len(d.Records) == 0 {
		t.Fatalf("create domain %+v %v", d, err)
	}
	if g, err := c.Domains.Get(cx, d.ID); err != nil || g.Name != d.Name {
		t.Fatalf("get domain %v", err)
	}
	// an unverified domain's first key cannot be rotated yet: the call's answer is a 409
	_, err = c.Domains.RotateDKIM(cx, d.ID, nil)
	wantCode(t, err, 409, "CONFLICT")
	if p, err := c.Domains.List(cx, &ListParams{Page: 1}); err != nil || p.Total == 0 {
		t.Fatalf("list domains %v", err)
	}
	if r, err := c.Domains.Delete(cx, d.ID); err != nil || r.StatusCode != 204 {
		t.Fatalf("delete domain %v", err)
	}

	tpl, err := c.Templates.Create(cx, &CreateTemplateRequest{Name: "welcome", Subject: "Hi {{name}}", Text: "Hello {{name}}"})
	if err != nil || tpl.Version != 1 {
		t.Fatalf("create template %+v %v", tpl, err)
	}
	subj := "Hello {{name}}"
	if u, err := c.Templates.Update(cx, tpl.ID, &UpdateTemplateRequest{Subject: &subj}); err != nil || u.Version != 2 {
		t.Fatalf("update template %+v %v", u, err)
	}
	if g, err := c.Templates.Get(cx, tpl.ID, 1); err != nil || g.Subject == nil || *g.Subject != "Hi {{name}}" {
		t.Fatalf("get template v1 %+v %v", g, err)
	}
	n := 0
	for _, err := range c.Templates.AllVersions(cx, tpl.ID, &ListParams{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d versions", n)
	}
	if r, err := c.Templates.Render(cx, tpl.ID, &RenderTemplateRequest{Data: map[string]any{"name": "Ann"}}); err != nil || r.Subject != "Hello Ann" {
		t.Fatalf("render %+v %v", r, err)
	}
	if p, err := c.Templates.List(cx, nil); err != nil || len(p.Data) == 0 {
		t.Fatalf("list templates %v", err)
	}

	if s, err := c.Analytics.Summary(cx, nil); err != nil || s.Mode != "live" {
		t.Fatalf("analytics %+v %v", s, err)
	}
	if _, err := c.IPs.List(cx); err != nil {
		t.Fatalf("ips %v", err)
	}
	if p, err := c.IPs.ListPools(cx); err != nil || p.Data == nil {
		t.Fatalf("pools %+v %v", p, err)
	}
	if _, err := c.Team.List(cx, nil); err != nil {
		t.Fatalf("team %v", err)
	}
	inv, err := c.Team.Invite(cx, &InviteRequest{Email: fmt.Sprintf("m%d@example.com", time.Now().UnixNano()), Role: "viewer"})
	if err != nil || inv.ID == "" {
		t.Fatalf("invite %+v %v", inv, err)
	}
	audit, err := c.Account.AuditLog(cx, &ListParams{Limit: 50})
	if err != nil || !slices.ContainsFunc(audit.Data, func(e AuditEntry) bool {
		return e.Action == "team.invite" && e.ActorKind == "api_key" && e.Target == inv.Email+" as viewer"
	}) {
		t.Fatalf("audit log after an invitation: %+v %v", audit, err)
	}
	if _, err := c.Events.List(cx, &ListEventsParams{ListParams: ListParams{Limit: 5}}); err != nil {
		t.Fatalf("events %v", err)
	}
	if h, err := c.Grader.History(cx, 1, 10); err != nil || h.Page != 1 {
		t.Fatalf("grader history %+v %v", h, err)
	}
	_, err = c.Grader.Result(cx, "01a20000-0000-7000-8000-000000000001")
	wantCode(t, err, 404, "NOT_FOUND")
}

func TestLiveExampleRun(t *testing.T) {
	c := liveClient(t, "MAILBOLT_TEST_API_KEY")
	cmd := exec.Command("./examples/run", "send")
	cmd.Env = append(os.Environ(), "MAILBOLT_API_KEY="+os.Getenv("MAILBOLT_TEST_API_KEY"),
		"MAILBOLT_EXAMPLE_FROM=app@example.com", "MAILBOLT_EXAMPLE_TO=ann@example.net")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run send: %v\n%s", err, stderr.String())
	}
	id := strings.TrimSuffix(string(out), "\n")
	if id == "" || strings.ContainsAny(id, " \n") {
		t.Fatalf("run send printed %q", out)
	}
	if m, err := c.Messages.Get(ctx(t), id); err != nil || m.ID != id {
		t.Fatalf("the example's message %q: %v", id, err)
	}

	v := loadVector(t)
	verify := func(body, secrets, sig string, now int64) (string, int) {
		cmd := exec.Command("./examples/run", "verify")
		cmd.Stdin = strings.NewReader(body)
		cmd.Env = append(os.Environ(), "MAILBOLT_EXAMPLE_WEBHOOK_SECRET="+secrets, "MAILBOLT_EXAMPLE_SIGNATURE="+sig,
			"MAILBOLT_EXAMPLE_TIMESTAMP="+strconv.FormatInt(v.Timestamp, 10), "MAILBOLT_EXAMPLE_NOW="+strconv.FormatInt(now, 10))
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out)), cmd.ProcessState.ExitCode()
	}
	for _, c := range []struct {
		name, body, secrets, sig string
		now                      int64
		want                     string
		code                     int
	}{
		{"valid", v.Body, v.Secret, v.Header, v.Timestamp, "valid", 0},
		{"tampered", v.Body + " ", v.Secret, v.Header, v.Timestamp, "invalid", 1},
		{"stale", v.Body, v.Secret, v.Header, v.Timestamp + 301, "invalid", 1},
		{"rotated", v.Body, v.Secret + "," + v.PreviousSecret, "t=" + strconv.FormatInt(v.Timestamp, 10) + ",v1=" + v.PreviousSignature, v.Timestamp, "valid", 0},
	} {
		if out, code := verify(c.body, c.secrets, c.sig, c.now); out != c.want || code != c.code {
			t.Errorf("run verify %s: %q exit %d, want %q exit %d", c.name, out, code, c.want, c.code)
		}
	}
}

func TestLiveStreams(t *testing.T) {
	c := liveClient(t, "MAILBOLT_TEST_API_KEY")
	req := testMessage("live broadcast")
	req.Stream = "broadcast"
	sent, err := c.Messages.Send(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Messages.Get(ctx(t), sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Stream != "broadcast" {
		t.Fatalf("stream %q, want broadcast", got.Stream)
	}
	page, err := c.Messages.List(ctx(t), &ListMessagesParams{Stream: "broadcast"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Data {
		if m.Stream != "broadcast" {
			t.Fatalf("listed %s of stream %q under ?stream=broadcast", m.ID, m.Stream)
		}
	}
	if !slices.ContainsFunc(page.Data, func(m Message) bool { return m.ID == sent.ID }) {
		t.Fatalf("broadcast message %s missing from ?stream=broadcast", sent.ID)
	}
	sum, err := c.Analytics.Summary(ctx(t), &AnalyticsParams{Stream: "broadcast"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stream == nil || *sum.Stream != "broadcast" {
		t.Fatalf("summary stream %v, want broadcast", sum.Stream)
	}

	c = liveClient(t, "MAILBOLT_API_KEY")
	r := "streams-live@example.net"
	for _, stream := range []string{"broadcast", "transactional"} {
		if _, err := c.Suppressions.Add(ctx(t), &AddSuppressionRequest{Recipient: r, Stream: stream}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Suppressions.DeleteFromStream(ctx(t), r, "broadcast"); err != nil {
		t.Fatal(err)
	}
	var left []string
	for s, err := range c.Suppressions.All(ctx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if s.Recipient == r && s.Stream != "" {
			left = append(left, s.Stream)
		}
	}
	if !slices.Equal(left, []string{"transactional"}) {
		t.Fatalf("entries left for %s: %v, want [transactional]", r, left)
	}
	if _, err := c.Suppressions.Delete(ctx(t), r); err != nil {
		t.Fatal(err)
	}
}

func TestLiveSuppressionsImportExport(t *testing.T) {
	c := liveClient(t, "MAILBOLT_API_KEY")
	prefix := fmt.Sprintf("imp%d-", time.Now().UnixNano())
	a, b := prefix+"a@example.com", prefix+"b@example.com"
	res, err := c.Suppressions.Import(ctx(t), []AddSuppressionRequest{{Recipient: a},
		{Recipient: b, Reason: "unsubscribe", Stream: "broadcast"}, {Recipient: a}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Added != 2 || res.AlreadyPresent != 1 || res.StatusCode != 200 {
		t.Fatalf("import %+v", res)
	}
	_, err = c.Suppressions.Import(ctx(t), []AddSuppressionRequest{{Recipient: prefix + "c@example.com"}, {Recipient: "not an address"}})
	if e := wantCode(t, err, 400, "VALIDATION_ERROR"); e.Details["index"] != float64(1) {
		t.Errorf("details %v", e.Details)
	}
	var csv bytes.Buffer
	if _, err := c.Suppressions.Export(ctx(t), "", &csv); err != nil {
		t.Fatal(err)
	}
	out := csv.String()
	if !strings.HasPrefix(out, "recipient,reason,stream\n") || !strings.Contains(out, a+",manual,\n"+b+",unsubscribe,broadcast\n") ||
		strings.Contains(out, prefix+"c@") {
		t.Errorf("export:\n%s", out)
	}
	csv.Reset()
	if _, err := c.Suppressions.Export(ctx(t), "broadcast", &csv); err != nil || strings.Count(csv.String(), prefix) != 1 {
		t.Errorf("broadcast export %v:\n%s", err, csv.String())
	}
	csv.Reset()
	if _, err := liveClient(t, "MAILBOLT_OTHER_API_KEY").Suppressions.Export(ctx(t), "", &csv); err != nil || strings.Contains(csv.String(), prefix) {
		t.Errorf("the other account's export %v:\n%s", err, csv.String())
	}
	for _, r := range []string{a, b} {
		if _, err := c.Suppressions.Delete(ctx(t), r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLiveInbound(t *testing.T) {
	c := liveClient(t, "MAILBOLT_API_KEY")
	cx := ctx(t)
	name := fmt.Sprintf("in%d.example.org", time.Now().UnixNano())
	d, err := c.Inbound.CreateDomain(cx, name)
	if err != nil || d.Name != name || d.Status != "pending" || len(d.Records) != 2 || d.Records[0].Type != "MX" {
		t.Fatalf("create %+v %v", d, err)
	}
	if g, err := c.Inbound.GetDomain(cx, d.ID); err != nil || g.Name != name {
		t.Fatalf("get %+v %v", g, err)
	}
	if p, err := c.Inbound.ListDomains(cx, &ListParams{Page: 1}); err != nil || p.Total == 0 {
		t.Fatalf("list %v", err)
	}
	w, err := c.Webhooks.Create(cx, &CreateWebhookRequest{URL: "http://127.0.0.1:9/inbound", Events: []string{"message.delivered"}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Inbound.CreateRoute(cx, &CreateInboundRouteRequest{DomainID: d.ID, Pattern: "support", WebhookID: w.ID})
	if err != nil || r.Pattern != "support" || r.WebhookID != w.ID {
		t.Fatalf("route %+v %v", r, err)
	}
	if _, err := c.Inbound.CreateRoute(cx, &CreateInboundRouteRequest{DomainID: d.ID, Pattern: "support", WebhookID: w.ID}); ErrorCode(err) != "CONFLICT" {
		t.Errorf("a second route for the pattern: %v", err)
	}
	if g, err := c.Inbound.GetRoute(cx, r.ID); err != nil || g.DomainID != d.ID {
		t.Fatalf("get route %+v %v", g, err)
	}
	if p, err := c.Inbound.ListRoutes(cx, nil); err != nil || len(p.Data) == 0 {
		t.Fatalf("list routes %v", err)
	}
	other := liveClient(t, "MAILBOLT_OTHER_API_KEY")
	if _, err := other.Inbound.GetDomain(cx, d.ID); ErrorCode(err) != "NOT_FOUND" {
		t.Errorf("another account reads the domain: %v", err)
	}
	if raw, err := c.Inbound.Raw(cx, "01a21900-0000-7000-8000-000000000000"); ErrorCode(err) != "NOT_FOUND" || raw != nil {
		t.Errorf("raw of an unknown message: %q %v", raw, err)
	}
	if resp, err := c.Inbound.DeleteRoute(cx, r.ID); err != nil || resp.StatusCode != 204 {
		t.Fatalf("delete route %v", err)
	}
	if resp, err := c.Inbound.DeleteDomain(cx, d.ID); err != nil || resp.StatusCode != 204 {
		t.Fatalf("delete domain %v", err)
	}
}
