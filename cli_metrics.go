package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/metrics"
	"mailbolt/mta"
	"mailbolt/mta/queue"
)

// newMetrics makes the service's metrics over what s will hold: the
// sources are read at scrape time, when s.db and s.app are set.
func newMetrics(s *service) *metrics.Metrics {
	return metrics.New(metrics.Sources{
		Accepted: func(test bool) int64 { return s.db.MessagesInserted(test) },
		Queue:    func() map[string]int64 { return s.db.Gauges().Queued },
		QueueHead: func() (time.Time, bool) {
			return s.db.QueueHead()
		},
		WebhookBacklog: func() int64 {
			g := s.db.Gauges()
			return g.Outbox + g.PendingDeliveries
		},
		IPs: func() ([]metrics.IP, error) {
			list, err := s.app.ListIPs()
			out := make([]metrics.IP, 0, len(list))
			for _, ip := range list {
				m := metrics.IP{Address: ip.Address, Pool: ip.Pool, SentToday: ip.SentToday, Unlimited: ip.DailyCap == nil}
				if ip.DailyCap != nil {
					m.DailyCap = *ip.DailyCap
				}
				out = append(out, m)
			}
			return out, err
		},
		Now: func() time.Time { return s.app.Now() },
	})
}

// observe hands the metrics the callbacks of the packages that see the
// events: the delivery queue's attempts and the webhook worker's answers.
func observe(m *metrics.Metrics, o *app.Options) {
	m.Declare([][2]string{{queue.OutcomeDelivered, ""}, {queue.OutcomeDeferred, ""},
		{queue.OutcomeBounced, string(mta.BounceHard)}, {queue.OutcomeBounced, string(mta.BounceSoft)}, {queue.OutcomeBounced, string(mta.BounceBlock)}},
		[]string{hooks.OutcomeName(hooks.Delivered), hooks.OutcomeName(hooks.Retry), hooks.OutcomeName(hooks.Fail)})
	o.Delivery.Attempted = func(a queue.Attempt) {
		m.Attempt(a.Outcome, a.BounceType)
		if a.MX != "sandbox" && (a.Code != 0 || a.TLSVersion != "") { // a server answered: a session ran
			policy := a.TLSPolicy
			if policy == "" {
				policy = "relay"
			}
			m.TLS(policy, a.TLSVersion, a.TLSVerified)
		}
	}
	o.Webhooks.Dispatch.Answered = m.Webhook
}

// listenMetrics binds --metrics-addr. When the default address is taken
// (another exporter, a second server on the machine) serve warns and runs
// without metrics; an address the operator gave that cannot be bound stops
// it. nil, nil: no metrics.
func listenMetrics(cfg serveConfig, log *slog.Logger) (net.Listener, error) {
	if cfg.metricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.metricsAddr)
	if err == nil {
		return ln, nil
	}
	if !cfg.metricsAddrSet && errors.Is(err, syscall.EADDRINUSE) {
		log.Warn("metrics disabled: the default --metrics-addr is taken; set --metrics-addr to another address, or empty to silence this",
			"metrics_addr", cfg.metricsAddr, "err", err)
		return nil, nil
	}
	return nil, fmt.Errorf("--metrics-addr: listen on %s: %w", cfg.metricsAddr, err)
}

// metricsServer serves /metrics on ln.
func metricsServer(m *metrics.Metrics, log *slog.Logger) *http.Server {
	return &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}
