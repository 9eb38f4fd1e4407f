package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/mta/dkim"
)

// lockedBuffer is a log sink several goroutines may write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the log records with message msg.
func (b *lockedBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// One line per change of a domain's status, whether the API or the
// scheduler checked it; a check that changes nothing logs none.
func TestDomainStatusChangesAreLogged(t *testing.T) {
	e := newDomainEnv(t, DomainOptions{RecheckInterval: time.Hour})
	var logs lockedBuffer
	e.app.log = slog.New(slog.NewJSONHandler(&logs, nil))
	d := e.create("logged.test")
	e.publish(d)
	e.verify(d)
	e.verify(d) // no change
	e.zone.Remove(dkimName(d.DKIMKeys[0].Selector, d.Name))
	e.clock.add(time.Hour + time.Second)
	if _, err := e.app.CheckDueDomains(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := logs.lines(t, "domain status changed")
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %v", len(got), got)
	}
	for i, want := range [][2]string{{DomainPending, DomainVerified}, {DomainVerified, DomainFailed}} {
		l := got[i]
		if l["from"] != want[0] || l["to"] != want[1] || l["domain"] != "logged.test" || l["domain_id"] != d.ID || l["account"] != e.acct {
			t.Errorf("line %d = %v, want %s → %s", i, l, want[0], want[1])
		}
	}
	if !strings.Contains(got[1]["reason"].(string), "DKIM") {
		t.Errorf("no reason in %v", got[1])
	}
}

// One line per inbound report processed, naming its kind and message.
func TestInboundReportIsLogged(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	var logs lockedBuffer
	e.app.log = slog.New(slog.NewJSONHandler(&logs, nil))
	addr := e.inboundListener()
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test"}, Subject: text("s"), Text: text("t")})
	e.drain()
	rp := e.returnPaths(m)["ann@dest.test"]
	dsn := fixture(t, "dsn/postfix-user-unknown.eml", "nobody@example.org", "ann@dest.test",
		"b+0195a1b2c3d47e5f8a9b0c1d2e3f4a5b@bounces.example.com", rp)
	if err := sendPlain(addr, "", rp, dsn); err != nil {
		t.Fatal(err)
	}
	got := logs.lines(t, "inbound report processed")
	if len(got) != 1 || got[0]["kind"] != "bounce_or_complaint" || got[0]["message_id"] != m.ID || got[0]["bytes"].(float64) < 100 {
		t.Fatalf("lines = %v", got)
	}
}
