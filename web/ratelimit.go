package web

import (
	"time"

	"mailbolt/app"
)

// limiter counts requests per caller in fixed windows: a key (or source
// IP) may make `limit` requests in each wall-clock second. It is the
// App's Limiter: counted in memory on the request's path and, when the
// database is shared by several nodes, summed across them (app/counters.go).
type limiter struct{ l *app.Limiter }

func newLimiter(a *app.App, name string) *limiter { return &limiter{a.NewLimiter(name)} }

// quota is what the rate-limit headers report.
type quota struct {
	limit     int
	remaining int
	reset     int64 // Unix seconds when the window resets
	allowed   bool
}

func quotaOf(q app.Quota) quota {
	return quota{limit: q.Limit, remaining: q.Remaining, reset: q.Reset, allowed: q.Allowed}
}

// take counts one request for caller at now, in one-second windows.
func (l *limiter) take(caller string, limit int, now time.Time) quota {
	return l.takeIn(caller, limit, time.Second, now)
}

// takeIn counts one request for caller at now, in fixed windows of span.
func (l *limiter) takeIn(caller string, limit int, span time.Duration, now time.Time) quota {
	return quotaOf(l.l.Take(caller, limit, span, now))
}
