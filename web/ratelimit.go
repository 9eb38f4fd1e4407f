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
	second int64
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

// take counts one request for caller at now.
func (l *limiter) take(caller string, limit int, now time.Time) quota {
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	if sec != l.swept && len(l.windows) > 4096 {
		for k, w := range l.windows {
			if w.second < sec {
				delete(l.windows, k)
			}
		}
		l.swept = sec
	}
	w := l.windows[caller]
	if w == nil {
		w = &window{}
		l.windows[caller] = w
	}
	if w.second != sec {
		w.second, w.count = sec, 0
	}
	q := quota{limit: limit, reset: sec + 1}
	if w.count >= limit {
		return q
	}
	w.count++
	q.remaining, q.allowed = limit-w.count, true
	return q
}
