package hooks

import (
	"net/http"
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

// RetryAfter reads a Retry-After header on a 429 or 503 answer, at most
// limit (the longest single wait, spec §6); ok is false when there is none
// to honour: another status, no header, or a value of neither form of RFC
// 9110 §10.2.3. delay-seconds is a non-negative decimal integer, so a
// sign, a fraction or anything but digits is refused; a number of seconds
// longer than limit (however many digits) is limit. An HTTP date is the
// wait from now, limit at most; a date already past is 0, as
// "Retry-After: 0" is.
func RetryAfter(status int, header string, now time.Time, limit time.Duration) (time.Duration, bool) {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0, false
	}
	header = strings.TrimSpace(header)
	if header == "" {
		return 0, false
	}
	if d, ok := delaySeconds(header, limit); ok {
		return d, true
	}
	if t, err := http.ParseTime(header); err == nil {
		return min(max(0, t.Sub(now)), limit), true // Sub saturates: no overflow
	}
	return 0, false
}

// delaySeconds reads s as RFC 9110's delay-seconds (1*DIGIT), at most
// limit. The count is clamped before it is multiplied into a Duration, so
// that a huge one never wraps around to a short or negative wait.
func delaySeconds(s string, limit time.Duration) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	whole := int64(limit / time.Second)
	var secs int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if secs <= whole { // past it, the digits are only checked
			secs = secs*10 + int64(c-'0')
		}
	}
	if secs > whole {
		return limit, true
	}
	return min(time.Duration(secs)*time.Second, limit), true
}
