// Package metrics holds Mailbolt's Prometheus metrics: every definition,
// their names and help, and the /metrics handler. No other package of
// Mailbolt imports it or Prometheus: the composition root (serve) hands
// its methods to the packages that see the events, as plain callbacks
// (the queue's attempts, the webhook worker's answers, the HTTP API's
// requests, storage's commits), and reads the gauges from storage's
// in-memory counts when scraped, so a scrape never scans the store.
// docs/operations.md lists every metric.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultAddr is where serve answers /metrics unless --metrics-addr says
// otherwise: loopback only, on the port commonly left to exporters.
const DefaultAddr = "127.0.0.1:9464"

// QueueStates are the message states mailbolt_queue_messages reports,
// always, zero or not, so that alert rules find every series.
var QueueStates = []string{"queued", "scheduled", "deferred", "sending"}

// IP is one sending IP's use of its warm-up cap today.
type IP struct {
	Address, Pool string
	SentToday     int
	DailyCap      int  // today's cap
	Unlimited     bool // no cap today: mailbolt_ip_daily_cap is not reported
}

// Sources are what the gauges and the accepted counters are read from at
// each scrape. Every field is required.
type Sources struct {
	// Accepted counts the live (test false) or test messages accepted
	// since start.
	Accepted func(test bool) int64
	// Queue counts the messages in the delivery queue by state.
	Queue func() map[string]int64
	// QueueHead is when the earliest queue entry is due; ok false when the
	// queue is empty.
	QueueHead func() (at time.Time, ok bool)
	// WebhookBacklog counts the webhook work waiting: events not fanned
	// out yet and deliveries waiting for a retry.
	WebhookBacklog func() int64
	// IPs lists the sending IPs with today's counts.
	IPs func() ([]IP, error)
	Now func() time.Time
}

// Metrics is one registry of Mailbolt's metrics.
type Metrics struct {
	reg      *prometheus.Registry
	attempts *prometheus.CounterVec
	tls      *prometheus.CounterVec
	sessions *prometheus.CounterVec
	webhooks *prometheus.CounterVec
	requests *prometheus.HistogramVec
	commits  prometheus.Histogram
}

// New registers every metric, with the Go and process collectors, over
// src.
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailbolt_delivery_attempts_total",
		Help: "SMTP delivery attempts per recipient, by outcome (delivered, deferred, bounced) and bounce type (hard, soft, block; empty unless bounced)."},
		[]string{"outcome", "bounce_type"})
	m.tls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailbolt_delivery_tls_total",
		Help: "SMTP delivery attempts per recipient that reached a transaction, by the TLS policy they ran under (none, mta-sts, dane; relay through --relay), the TLS version (empty for cleartext) and whether the certificate was verified."},
		[]string{"policy", "version", "verified"})
	m.sessions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailbolt_tls_sessions_total",
		Help: "New SMTP sessions with MX hosts as TLS reports count them, by policy type (sts, tlsa, no-policy-found) and result (success, or an RFC 8460 failure type such as certificate-host-mismatch)."},
		[]string{"policy", "result"})
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mailbolt_webhook_deliveries_total",
		Help: "Webhook requests made, by outcome: delivered (2xx), retry (network error, timeout, 408, 429, 5xx) or failed (any other answer, or an address the guard refuses)."},
		[]string{"outcome"})
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mailbolt_http_request_duration_seconds",
		Help:    "HTTP API requests by route pattern, method and status code, with how long they took.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
		[]string{"route", "method", "code"})
	m.commits = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "mailbolt_storage_commit_duration_seconds",
		Help:    "Database commits (one group commit of many writes), fsync included.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}})
	m.reg.MustRegister(m.attempts, m.tls, m.sessions, m.webhooks, m.requests, m.commits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&gauges{src: src})
	return m
}

// Handler answers /metrics.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	return mux
}

// Declare makes the delivery-attempt series (outcome and bounce type
// pairs) and the webhook series (outcomes) exist at zero from the start,
// so a rate() over them, or an alert, has a series before the first event.
func (m *Metrics) Declare(attempts [][2]string, webhooks []string) {
	for _, a := range attempts {
		m.attempts.WithLabelValues(a[0], a[1])
	}
	for _, o := range webhooks {
		m.webhooks.WithLabelValues(o)
	}
}

// Attempt counts one recipient's delivery attempt.
func (m *Metrics) Attempt(outcome, bounceType string) {
	m.attempts.WithLabelValues(outcome, bounceType).Inc()
}

// TLS counts one recipient's attempt by its TLS session: policy (none,
// mta-sts, dane, relay), version ("" for cleartext), verified.
func (m *Metrics) TLS(policy, version string, verified bool) {
	m.tls.WithLabelValues(policy, version, strconv.FormatBool(verified)).Inc()
}

// TLSSession counts one new MX session for TLS reporting: policy type and
// result ("success" or a failure type).
func (m *Metrics) TLSSession(policy, result string) {
	m.sessions.WithLabelValues(policy, result).Inc()
}

// Webhook counts one webhook request.
func (m *Metrics) Webhook(outcome string) { m.webhooks.WithLabelValues(outcome).Inc() }

// Request observes one HTTP request; route is its route pattern, never
// its path (paths carry ids and link tokens).
func (m *Metrics) Request(route, method string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Observe(d.Seconds())
}

// Commit observes one database commit.
func (m *Metrics) Commit(d time.Duration) { m.commits.Observe(d.Seconds()) }

var (
	descAccepted = prometheus.NewDesc("mailbolt_messages_accepted_total",
		"Messages accepted (stored, answered 202 or 250) since start, by mode (live, test).", []string{"mode"}, nil)
	descQueue = prometheus.NewDesc("mailbolt_queue_messages",
		"Messages in the delivery queue, by state (queued, scheduled, deferred, sending).", []string{"state"}, nil)
	descOldest = prometheus.NewDesc("mailbolt_queue_oldest_due_seconds",
		"How long the earliest due message has been due; 0 when nothing is due.", nil, nil)
	descBacklog = prometheus.NewDesc("mailbolt_webhook_backlog",
		"Webhook work waiting: events not yet fanned out plus deliveries waiting for a retry.", nil, nil)
	descSent = prometheus.NewDesc("mailbolt_ip_sent_today",
		"Messages sent from a sending IP today (UTC).", []string{"ip", "pool"}, nil)
	descCap = prometheus.NewDesc("mailbolt_ip_daily_cap",
		"Today's warm-up cap of a sending IP; absent when it has none.", []string{"ip", "pool"}, nil)
)

// gauges reads the gauges from their sources at each scrape.
type gauges struct{ src Sources }

func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAccepted, descQueue, descOldest, descBacklog, descSent, descCap} {
		ch <- d
	}
}

func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	s := g.src
	ch <- prometheus.MustNewConstMetric(descAccepted, prometheus.CounterValue, float64(s.Accepted(false)), "live")
	ch <- prometheus.MustNewConstMetric(descAccepted, prometheus.CounterValue, float64(s.Accepted(true)), "test")
	q := s.Queue()
	for _, st := range QueueStates {
		ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(q[st]), st)
	}
	oldest := 0.0
	if at, ok := s.QueueHead(); ok {
		oldest = max(0, s.Now().Sub(at).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, oldest)
	ch <- prometheus.MustNewConstMetric(descBacklog, prometheus.GaugeValue, float64(s.WebhookBacklog()))
	ips, err := s.IPs()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descSent, err)
		return
	}
	for _, ip := range ips {
		ch <- prometheus.MustNewConstMetric(descSent, prometheus.GaugeValue, float64(ip.SentToday), ip.Address, ip.Pool)
		if !ip.Unlimited {
			ch <- prometheus.MustNewConstMetric(descCap, prometheus.GaugeValue, float64(ip.DailyCap), ip.Address, ip.Pool)
		}
	}
}
