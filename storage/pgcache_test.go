package storage

import "testing"

// TestCacheReach: a cached view may read the cache at the generation the
// server was found at or any later one the cache holds, never an earlier
// one, and never an empty cache.
func TestCacheReach(t *testing.T) {
	var c pgCache
	if _, ok := c.reach(1); ok {
		t.Error("an empty cache was reached")
	}
	c.gen = 5
	for _, tc := range []struct {
		server int64
		at     int64
		ok     bool
	}{{4, 5, true}, {5, 5, true}, {6, 5, false}} {
		if at, ok := c.reach(tc.server); ok != tc.ok || (ok && at != tc.at) {
			t.Errorf("server at %d, cache at 5: reach gave %d %v, want %d %v", tc.server, at, ok, tc.at, tc.ok)
		}
	}
}
