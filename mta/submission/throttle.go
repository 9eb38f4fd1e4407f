package submission

import (
	"net"
	"sync"
	"time"
)

// ThrottleOptions shape the delays after failed logins.
type ThrottleOptions struct {
	// Base is the delay after the first failure from a network; each
	// further failure doubles it, up to Max.
	Base, Max time.Duration
	// Forget is the span of the windows failures are counted in: a
	// network's count is its failures in the current window and the one
	// before, so one without failures for between Forget and twice that
	// starts again from none.
	Forget time.Duration
	Now    func() time.Time
	// Count, when set, keeps the failure counts: it adds n to the counter
	// name in window (kept for life at least) and returns its total.
	// storage's DB.AddCount counts across every node sharing the
	// database, so that several nodes delay a network as one would. Nil
	// counts in this process's memory.
	Count func(name string, window int64, life time.Duration, n int) (int64, error)
}

// DefaultThrottle: 1 s after the first failure, doubling to at most 30 s,
// counted in windows of 15 minutes (forgotten 15 to 30 minutes after the
// last failure).
var DefaultThrottle = ThrottleOptions{Base: time.Second, Max: 30 * time.Second, Forget: 15 * time.Minute}

// Throttle counts failed logins per client network (/24 for IPv4, /64
// for IPv6: one host's neighbours share its count, so spreading guesses
// over a subnet gains nothing) and says how long to wait before
// answering each. Only failures are delayed: the Backend checks a key
// before any wait, so a valid key is never held back, whatever an
// attacker on the same network does.
type Throttle struct {
	opts ThrottleOptions
	mu   sync.Mutex
	nets map[failureKey]int64 // the counts, when opts.Count is nil
}

type failureKey struct {
	network string
	window  int64
}

// NewThrottle makes a Throttle.
func NewThrottle(o ThrottleOptions) *Throttle {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Forget <= 0 {
		o.Forget = DefaultThrottle.Forget
	}
	t := &Throttle{opts: o, nets: map[failureKey]int64{}}
	if t.opts.Count == nil {
		t.opts.Count = t.countHere
	}
	return t
}

// countHere is the in-memory Count.
func (t *Throttle) countHere(name string, window int64, _ time.Duration, n int) (int64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.nets) > 10000 { // forget the quiet ones before growing further
		for k := range t.nets {
			if k.window < window-1 {
				delete(t.nets, k)
			}
		}
	}
	k := failureKey{name, window}
	t.nets[k] += int64(n)
	return t.nets[k], nil
}

// network is the /24 or /64 an address belongs to.
func network(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.Mask(net.CIDRMask(24, 32)).String() + "/24"
	}
	if len(ip) == net.IPv6len {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return "unknown"
}

// Fail records a failed login from ip and returns how long to wait before
// answering it: Base, 2×Base, 4×Base… up to Max, by the network's
// failures in this window and the last. When the count cannot be kept
// (the database is unreachable) the wait is Max.
func (t *Throttle) Fail(ip net.IP) time.Duration {
	window := t.opts.Now().UnixNano() / int64(t.opts.Forget)
	name := "auth-failures:" + network(ip)
	life := 2 * t.opts.Forget
	n, err := t.opts.Count(name, window, life, 1)
	if err != nil {
		return t.opts.Max
	}
	before, err := t.opts.Count(name, window-1, life, 0)
	if err != nil {
		return t.opts.Max
	}
	n += before
	d := t.opts.Base
	for i := int64(1); i < n && d < t.opts.Max; i++ {
		d *= 2
	}
	return min(d, t.opts.Max)
}
