package web

import (
	"sync"
	"time"
)

// limiter counts requests per caller in fixed one-second windows: a key (or
// source IP) may make `limit` requests in each wall-clock second.
type limiter struct {
	mu      sync.Mutex
	windows map[string]*window
	swept   int64
}

type window struct {
	second int64 // the window's number: Unix time divided by its span
	count  int
}

func newLimiter() *limiter { return &limiter{windows: map[string]*window{}} }

// quota is what the rate-limit headers report.
type quota struct {
	limit     int
	remaining int
	reset     int64 // Unix seconds when the window resets
	allowed   bool
}

// take counts one request for caller at now, in one-second windows.
func (l *limiter) take(caller string, limit int, now time.Time) quota {
	return l.takeIn(caller, limit, time.Second, now)
}

// takeIn counts one request for caller at now, in fixed windows of span.
func (l *limiter) takeIn(caller string, limit int, span time.Duration, now time.Time) quota {
	id := now.UnixNano() / int64(span)
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != l.swept && len(l.windows) > 4096 {
		for k, w := range l.windows {
			if w.second < id {
				delete(l.windows, k)
			}
		}
		l.swept = id
	}
	w := l.windows[caller]
	if w == nil {
		w = &window{}
		l.windows[caller] = w
	}
	if w.second != id {
		w.second, w.count = id, 0
	}
	q := quota{limit: limit, reset: time.Unix(0, (id+1)*int64(span)).Unix()}
	if w.count >= limit {
		return q
	}
	w.count++
	q.remaining, q.allowed = limit-w.count, true
	return q
}
