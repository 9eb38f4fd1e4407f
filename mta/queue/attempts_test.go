package queue

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"mailbolt/mta"
)

// Every recorded attempt gives one log line with its fields and one call
// of Attempted; the recipient's address is logged only when asked.
func TestEachAttemptIsLoggedAndReported(t *testing.T) {
	for _, full := range []bool{false, true} {
		db := openDB(t)
		c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
		var buf bytes.Buffer
		var got []Attempt
		o := DefaultOptions()
		o.Now, o.ReturnPathKey, o.LogRecipients = c.now, testKey, full
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		o.Attempted = func(a Attempt) { got = append(got, a) }
		q, err := New(db, o)
		if err != nil {
			t.Fatal(err)
		}
		m := accept(t, q, db, c.t, "ok@one.test", "gone@two.test", "later@three.test")
		jobs, _, err := q.claimDue(c.t, 10)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v %d", err, len(jobs))
		}
		j := jobs[0]
		j.src.Addr = "192.0.2.7"
		results := []mta.RecipientResult{
			{Recipient: "ok@one.test", Status: mta.StatusDelivered, Code: 250, Enhanced: "2.0.0", Text: "queued as X",
				Host: "mx.one.test", TLS: true, TLSVersion: "TLS 1.3", Duration: 120 * time.Millisecond},
			{Recipient: "gone@two.test", Status: mta.StatusPermanent, Code: 550, Enhanced: "5.1.1", Text: "no such user",
				Host: "mx.two.test", Duration: 30 * time.Millisecond},
			{Recipient: "later@three.test", Status: mta.StatusTemporary, Code: 451, Enhanced: "4.3.0", Text: "try later",
				Host: "mx.three.test", Duration: 5 * time.Millisecond},
		}
		if err := q.record(j, results, nil, false); err != nil {
			t.Fatal(err)
		}
		want := []struct{ outcome, bounce string }{{OutcomeDelivered, ""}, {OutcomeBounced, "hard"}, {OutcomeDeferred, ""}}
		if len(got) != len(want) {
			t.Fatalf("Attempted called %d times, want %d: %+v", len(got), len(want), got)
		}
		for i, w := range want {
			if got[i].Outcome != w.outcome || got[i].BounceType != w.bounce || got[i].MessageID != m.ID || got[i].Number != 1 {
				t.Errorf("attempt %d = %+v, want outcome %s bounce %q", i, got[i], w.outcome, w.bounce)
			}
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		var logged []map[string]any
		for _, l := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatal(err)
			}
			if rec["msg"] == "delivery attempt" {
				logged = append(logged, rec)
			}
		}
		if len(logged) != 3 {
			t.Fatalf("%d delivery lines, want 3:\n%s", len(logged), buf.String())
		}
		first := logged[0]
		for k, v := range map[string]any{"level": "INFO", "message_id": m.ID, "account": m.AccountID, "rcpt_domain": "one.test",
			"mx": "mx.one.test", "source_ip": "192.0.2.7", "tls": "TLS 1.3", "code": 250.0, "enhanced": "2.0.0",
			"reply": "queued as X", "duration_ms": 120.0, "attempt": 1.0, "outcome": "delivered"} {
			if first[k] != v {
				t.Errorf("field %s = %v, want %v", k, first[k], v)
			}
		}
		if b := logged[1]; b["level"] != "WARN" || b["outcome"] != "bounced" || b["bounce_type"] != "hard" || b["tls"] != "" {
			t.Errorf("bounce line = %v", b)
		}
		if d := logged[2]; d["outcome"] != "deferred" || d["code"] != 451.0 {
			t.Errorf("deferral line = %v", d)
		}
		_, hasRcpt := first["rcpt"]
		if hasRcpt != full || full && first["rcpt"] != "ok@one.test" {
			t.Errorf("LogRecipients %v: rcpt field = %v", full, first["rcpt"])
		}
		if strings.Contains(buf.String(), "ok@one.test") != full {
			t.Errorf("LogRecipients %v, log holds the address: %v", full, !full)
		}
	}
}
