package hooks

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Outcome is what one attempt means for the delivery.
type Outcome int

const (
	Delivered Outcome = iota // any 2xx
	Retry                    // network error, timeout, 408, 429, 5xx
	Fail                     // anything else, 3xx included: not retried
)

// Classify maps an attempt's HTTP status (0 for a network error or
// timeout) to its outcome (spec §3).
func Classify(status int) Outcome {
	switch {
	case status == 0, status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500:
		return Retry
	case status >= 200 && status < 300:
		return Delivered
	}
	return Fail
}

// Backoff is the wait before retry number n (0-based): base doubled per
// retry, at most max.
func Backoff(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// RetryAfter reads a Retry-After header (seconds or an HTTP date) on a 429
// or 503 answer; ok is false when there is none to honour.
func RetryAfter(status int, header string, now time.Time) (time.Duration, bool) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0, false
	}
	header = strings.TrimSpace(header)
	if header == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(header); err == nil {
		return max(0, time.Duration(secs)*time.Second), true
	}
	if t, err := http.ParseTime(header); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}
