package web

import (
	"net/netip"
	"strconv"
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
	wait      time.Duration // refused by a sliding window: until a request would be allowed
}

func quotaOf(q app.Quota) quota {
	return quota{limit: q.Limit, remaining: q.Remaining, reset: q.Reset, allowed: q.Allowed, wait: q.Wait}
}

// take counts one request for caller at now, in one-second windows.
func (l *limiter) take(caller string, limit int, now time.Time) quota {
	return l.takeIn(caller, limit, time.Second, now)
}

// takeIn counts one request for caller at now, in fixed windows of span.
func (l *limiter) takeIn(caller string, limit int, span time.Duration, now time.Time) quota {
	return quotaOf(l.l.Take(caller, limit, span, now))
}

// slidingLimiter counts requests per caller in a sliding window: at most
// limit in any span of time, whatever the clock (app.SlidingLimiter). The
// public grader check is limited so.
type slidingLimiter struct{ l *app.SlidingLimiter }

func newSlidingLimiter(a *app.App, name string) *slidingLimiter {
	return &slidingLimiter{a.NewSlidingLimiter(name)}
}

// take counts one request for caller at now, unless limit were admitted in
// the span before it.
func (l *slidingLimiter) take(caller string, limit int, span time.Duration, now time.Time) quota {
	return quotaOf(l.l.Take(caller, limit, span, now))
}

// retryAfter is a refused quota's Retry-After in whole seconds, at least 1:
// rounded up from its wait when it has one, else until its window resets.
func retryAfter(q quota, now time.Time) string {
	if q.wait > 0 {
		return strconv.FormatInt(max(1, int64((q.wait+time.Second-1)/time.Second)), 10)
	}
	return strconv.FormatInt(max(1, q.reset-now.Unix()), 10)
}

// sourceNet is what per-source limits count by (login attempts, the
// per-IP request limit, the grader's public check): the IPv4 address, or
// the IPv6 /64, which one subscriber commonly holds whole, so moving
// within it buys no fresh budget.
func sourceNet(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if a = a.Unmap(); a.Is4() {
		return a.String() // ::ffff:a.b.c.d counts as a.b.c.d
	}
	p, _ := a.Prefix(64)
	return p.String()
}
