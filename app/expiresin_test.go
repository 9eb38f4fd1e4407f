package app

import (
	"strings"
	"testing"
	"time"
)

// --expires-in takes a Go duration or whole days; every refusal carries the
// same hint, and a number of days that would wrap past time.Duration's
// range (into an expiry in the past) is refused.
func TestParseExpiresIn(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 19, 19, 0, time.UTC)
	for in, want := range map[string]time.Duration{"720h": 720 * time.Hour, "90m": 90 * time.Minute,
		"30d": 30 * 24 * time.Hour, "1d": 24 * time.Hour} {
		got, err := ParseExpiresIn(now, in)
		if err != nil || got == nil || !got.Equal(now.Add(want)) {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	if got, err := ParseExpiresIn(now, ""); got != nil || err != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
	const hint = ": use a duration such as 720h or 30d (whole days)"
	for _, in := range []string{"1.5d", "3x", "0d", "-2d", "+2d", "d", "2dd", "0s", "-1h", "1e3d"} {
		_, err := ParseExpiresIn(now, in)
		if err == nil || err.Error() != `invalid --expires-in "`+in+`"`+hint {
			t.Errorf("%q: %v, want the hint", in, err)
		}
	}
	if _, err := ParseExpiresIn(now, "200000d"); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("200000d: %v", err)
	}
}
