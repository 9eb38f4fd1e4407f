package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The gauges are read from their sources at scrape time: IPs with and
// without a cap, the queue by state, and how long the head is overdue.
func TestGaugesComeFromTheSources(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	m := New(Sources{
		Accepted:       func(test bool) int64 { return map[bool]int64{false: 7, true: 2}[test] },
		Queue:          func() map[string]int64 { return map[string]int64{"queued": 3, "deferred": 1} },
		QueueHead:      func() (time.Time, bool) { return now.Add(-90 * time.Second), true },
		WebhookBacklog: func() int64 { return 4 },
		IPs: func() ([]IP, error) {
			return []IP{{Address: "192.0.2.1", Pool: "default", SentToday: 40, DailyCap: 50},
				{Address: "192.0.2.2", Pool: "bulk", SentToday: 900, Unlimited: true}}, nil
		},
		Now: func() time.Time { return now },
	})
	m.Attempt("bounced", "hard")
	m.Webhook("retry")
	m.TLS("mta-sts", "TLS 1.3", true)
	m.TLSSession("sts", "certificate-expired")
	m.Request("/v1/messages/:id", "GET", 200, 3*time.Millisecond)
	m.Commit(2 * time.Millisecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`mailbolt_messages_accepted_total{mode="live"} 7`,
		`mailbolt_messages_accepted_total{mode="test"} 2`,
		`mailbolt_queue_messages{state="queued"} 3`,
		`mailbolt_queue_messages{state="scheduled"} 0`,
		`mailbolt_queue_messages{state="deferred"} 1`,
		`mailbolt_queue_oldest_due_seconds 90`,
		`mailbolt_webhook_backlog 4`,
		`mailbolt_ip_sent_today{ip="192.0.2.1",pool="default"} 40`,
		`mailbolt_ip_daily_cap{ip="192.0.2.1",pool="default"} 50`,
		`mailbolt_ip_sent_today{ip="192.0.2.2",pool="bulk"} 900`,
		`mailbolt_delivery_attempts_total{bounce_type="hard",outcome="bounced"} 1`,
		`mailbolt_webhook_deliveries_total{outcome="retry"} 1`,
		`mailbolt_delivery_tls_total{policy="mta-sts",verified="true",version="TLS 1.3"} 1`,
		`mailbolt_tls_sessions_total{policy="sts",result="certificate-expired"} 1`,
		`mailbolt_http_request_duration_seconds_count{code="200",method="GET",route="/v1/messages/:id"} 1`,
		`mailbolt_storage_commit_duration_seconds_count 1`,
		`go_goroutines`, `process_cpu_seconds_total`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in:\n%s", want, text)
		}
	}
	if strings.Contains(text, `mailbolt_ip_daily_cap{ip="192.0.2.2"`) {
		t.Error("an IP without a cap reports one")
	}
	{
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/other", nil))
		if rec.Code != 404 {
			t.Errorf("GET /other = %d, want 404", rec.Code)
		}
	}
}
