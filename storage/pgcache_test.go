package storage

import (
	"context"
	"testing"
	"time"
)

// TestCacheReach: a cached view may read the cache at the generation the
// server was found at or any later one the cache holds, never an earlier
// one; when the cache is behind, it waits for the node's commit in flight.
func TestCacheReach(t *testing.T) {
	ctx := context.Background()
	var c pgCache
	if _, ok := c.reach(ctx, 1); ok {
		t.Error("an empty cache was reached")
	}
	c.gen = 5
	for _, tc := range []struct {
		server int64
		at     int64
		ok     bool
	}{{4, 5, true}, {5, 5, true}, {6, 0, false}} {
		if at, ok := c.reach(ctx, tc.server); at != tc.at || ok != tc.ok {
			t.Errorf("server at %d, cache at 5: reach gave %d %v, want %d %v", tc.server, at, ok, tc.at, tc.ok)
		}
	}
	done := c.committing()
	go func() {
		time.Sleep(10 * time.Millisecond)
		c.mu.Lock()
		c.gen = 6
		c.mu.Unlock()
		done()
	}()
	if at, ok := c.reach(ctx, 6); at != 6 || !ok {
		t.Errorf("after the commit in flight was taken in, reach gave %d %v, want 6 true", at, ok)
	}
	done = c.committing()
	defer done()
	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	if _, ok := c.reach(short, 7); ok {
		t.Error("reached generation 7 while the commit in flight never landed")
	}
}
