package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every request's outcome reaches Answered; each failed one is logged
// once with what the receiver answered.
func TestAnswersAreReportedAndFailuresLogged(t *testing.T) {
	var mu sync.Mutex
	var outcomes []string
	var buf bytes.Buffer
	h := newHarness(t, testOptions(func(o *Options) {
		o.MaxRetries = 1
		o.Answered = func(s string) { mu.Lock(); outcomes = append(outcomes, s); mu.Unlock() }
		o.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	}))
	ok := newReceiver(t, status(204))
	down := newReceiver(t, status(503))
	h.webhook(ok.URL, "message.sent")
	h.webhook(down.URL, "message.sent")
	ev := h.event("message.sent")
	// The loop (which reports) runs on the real clock, so its retry is due
	// at once.
	h.d.opts.Now, h.d.opts.BaseDelay = time.Now, time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.d.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for down.count() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(outcomes, ",")
	mu.Unlock()
	if got != "delivered,retry,retry" && got != "retry,delivered,retry" {
		t.Errorf("outcomes %q, want one delivered and two retry", got)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "webhook delivery failed" {
			lines = append(lines, rec)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d failure lines, want 2:\n%s", len(lines), buf.String())
	}
	l := lines[0]
	if l["level"] != "WARN" || l["status"] != 503.0 || l["event_id"] != ev.ID || l["event_type"] != "message.sent" ||
		l["outcome"] != "retry" || l["delivery_id"] == "" || !strings.HasPrefix(down.URL, "http://"+l["host"].(string)) {
		t.Errorf("failure line = %v", l)
	}
}
