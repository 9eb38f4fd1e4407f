package submission

import (
	"net"
	"os"
	"testing"
	"time"

	"mailbolt/storage/pgtest"
	"mailbolt/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestThrottleAcrossNodes: two nodes' throttles counting in one
// PostgreSQL database delay a network's failures as one throttle does,
// whichever node each failure reaches: the failures split across nodes
// double the delay as many times as on one.
func TestThrottleAcrossNodes(t *testing.T) {
	now := time.Unix(1000, 0)
	var nodes []*Throttle
	for _, db := range storagetest.Nodes(t, 2) {
		nodes = append(nodes, NewThrottle(ThrottleOptions{Base: time.Second, Max: 16 * time.Second, Forget: time.Minute,
			Now: func() time.Time { return now }, Count: db.AddCount}))
	}
	alone := NewThrottle(ThrottleOptions{Base: time.Second, Max: 16 * time.Second, Forget: time.Minute,
		Now: func() time.Time { return now }})
	ips := []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6"}
	for i, ip := range ips {
		shared := nodes[i%2].Fail(net.ParseIP(ip))
		one := alone.Fail(net.ParseIP(ip))
		if shared != one {
			t.Fatalf("failure %d on node %d: %v; one node alone: %v", i+1, i%2+1, shared, one)
		}
	}
	if d := nodes[1].Fail(net.ParseIP("192.0.2.9")); d != 16*time.Second {
		t.Errorf("the network's seventh failure: %v, want the maximum", d)
	}
	if d := nodes[0].Fail(net.ParseIP("198.51.100.1")); d != time.Second {
		t.Errorf("another network's first failure: %v", d)
	}
	// The previous window still counts; two windows later, nothing.
	now = now.Add(time.Minute)
	if d := nodes[0].Fail(net.ParseIP("192.0.2.1")); d != 16*time.Second {
		t.Errorf("the next window: %v, want the maximum", d)
	}
	now = now.Add(2 * time.Minute)
	if d := nodes[1].Fail(net.ParseIP("192.0.2.1")); d != time.Second {
		t.Errorf("after two quiet windows: %v, want the base", d)
	}
}

// TestThrottleCountFails: when the counts cannot be kept, the delay is
// the maximum.
func TestThrottleCountFails(t *testing.T) {
	th := NewThrottle(ThrottleOptions{Base: time.Second, Max: 8 * time.Second, Forget: time.Minute,
		Count: func(string, int64, time.Duration, int) (int64, error) { return 0, os.ErrClosed }})
	if d := th.Fail(net.ParseIP("192.0.2.1")); d != 8*time.Second {
		t.Errorf("%v", d)
	}
}
