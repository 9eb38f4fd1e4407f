package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var metricsRe = regexp.MustCompile(`metrics on (http://\S+/metrics)`)

// scrape reads /metrics and parses it.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the value of the series of family name with exactly labels
// (label=value pairs); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func post(t *testing.T, url, key, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %v", url, resp.StatusCode, m)
	}
	return m
}

// The metrics move with accepted, delivered and bounced mail and with
// webhook traffic, on a live server, scraped over HTTP.
func TestMetricsMoveWithTraffic(t *testing.T) {
	var hits atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the first request fails, and is retried
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	base, out, _ := startServe(t, t.TempDir(), "--metrics-addr", "127.0.0.1:0", "--dev", "--webhook-base-delay", "50ms")
	m := metricsRe.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no metrics address printed:\n%s", out)
	}
	metricsURL := m[1]
	testKey := testKeyRe.FindStringSubmatch(out.String())[1]

	fams := scrape(t, metricsURL)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "mailbolt_queue_oldest_due_seconds", "mailbolt_webhook_backlog"} {
		if fams[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
	if v := value(fams, "mailbolt_messages_accepted_total", "mode", "test"); v != 0 {
		t.Errorf("accepted before any message = %v", v)
	}
	for _, st := range []string{"queued", "scheduled", "deferred"} {
		if v := value(fams, "mailbolt_queue_messages", "state", st); v != 0 {
			t.Errorf("queue %s = %v before any message", st, v)
		}
	}
	// The counters an alert takes a rate() of exist, at zero, from the start.
	for _, a := range [][2]string{{"delivered", ""}, {"deferred", ""}, {"bounced", "hard"}, {"bounced", "soft"}, {"bounced", "block"}} {
		if v := value(fams, "mailbolt_delivery_attempts_total", "outcome", a[0], "bounce_type", a[1]); v != 0 {
			t.Errorf("delivery attempts %v = %v before any message", a, v)
		}
	}
	for _, o := range []string{"delivered", "retry", "failed"} {
		if v := value(fams, "mailbolt_webhook_deliveries_total", "outcome", o); v != 0 {
			t.Errorf("webhook deliveries %s = %v before any webhook", o, v)
		}
	}

	post(t, base+"/v1/webhooks", testKey, fmt.Sprintf(`{"url":%q,"events":["message.delivered"]}`, receiver.URL))
	send := func(to string, extra string) {
		post(t, base+"/v1/messages", testKey, fmt.Sprintf(`{"from":"a@acme.test","to":[%q],"subject":"s","text":"t"%s}`, to, extra))
	}
	send("ok@dest.test", "")
	send("bounce@dest.test", "")
	send("later@dest.test", `,"send_at":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"`)

	deadline := time.Now().Add(10 * time.Second)
	for {
		fams = scrape(t, metricsURL)
		if value(fams, "mailbolt_delivery_attempts_total", "outcome", "delivered", "bounce_type", "") == 1 &&
			value(fams, "mailbolt_webhook_deliveries_total", "outcome", "delivered") == 1 &&
			value(fams, "mailbolt_webhook_backlog") == 0 {
			break
		}
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			for _, f := range fams {
				if strings.HasPrefix(f.GetName(), "mailbolt_") {
					expfmt.MetricFamilyToText(&buf, f)
				}
			}
			t.Fatalf("metrics did not move:\n%s", buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mailbolt_messages_accepted_total", []string{"mode", "test"}, 3},
		{"mailbolt_messages_accepted_total", []string{"mode", "live"}, 0},
		{"mailbolt_delivery_attempts_total", []string{"outcome", "bounced", "bounce_type", "hard"}, 1},
		{"mailbolt_webhook_deliveries_total", []string{"outcome", "retry"}, 1},
		{"mailbolt_queue_messages", []string{"state", "scheduled"}, 1},
		{"mailbolt_queue_messages", []string{"state", "queued"}, 0},
		{"mailbolt_queue_oldest_due_seconds", nil, 0},
		{"mailbolt_http_request_duration_seconds", []string{"route", "/v1/messages", "method", "POST", "code", "202"}, 3},
		{"mailbolt_http_request_duration_seconds", []string{"route", "/v1/webhooks", "method", "POST", "code", "201"}, 1},
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if value(fams, "mailbolt_storage_commit_duration_seconds") < 1 {
		t.Error("no commit observed")
	}
	// Route labels are patterns: no message id ever appears.
	for _, mm := range fams["mailbolt_http_request_duration_seconds"].Metric {
		for _, l := range mm.Label {
			if l.GetName() == "route" && strings.Count(l.GetValue(), "-") >= 4 {
				t.Errorf("route label holds an id: %s", l.GetValue())
			}
		}
	}
}

// The default metrics address taken, serve warns and runs without
// metrics; an address given explicitly that is taken stops it.
func TestMetricsAddressTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	out, err := run(t, "serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
		"--metrics-addr", taken.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("serve with a taken --metrics-addr: %v\n%s", err, out)
	}
	if strings.Contains(out, "svc_") {
		t.Fatalf("a start that could not bind its metrics address printed keys:\n%s", out)
	}

	cfg := defaultServeConfig()
	cfg.metricsAddr = taken.Addr().String() // as if it were the default
	var logs syncBuffer
	log, _ := newLogger(&logs, "info", "json")
	ln, err := listenMetrics(cfg, log)
	if err != nil || ln != nil {
		t.Fatalf("the default address taken: %v %v, want a warning and no listener", ln, err)
	}
	if !strings.Contains(logs.String(), "metrics disabled") || !strings.Contains(logs.String(), "--metrics-addr") {
		t.Errorf("no warning naming --metrics-addr: %s", logs.String())
	}
	if _, err := run(t, "serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
		"--metrics-addr", "nocolon"); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Errorf("--metrics-addr nocolon: %v", err)
	}
}
