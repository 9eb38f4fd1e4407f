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
	// Forget is how long after its last failure a network starts again
	// from no failures.
	Forget time.Duration
	Now    func() time.Time
}

// DefaultThrottle: 1 s after the first failure, doubling to at most 30 s,
// forgotten after 15 minutes without failures.
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
	nets map[string]*failures
}

type failures struct {
	n    int
	last time.Time
}

// NewThrottle makes a Throttle.
func NewThrottle(o ThrottleOptions) *Throttle {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Throttle{opts: o, nets: map[string]*failures{}}
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
// answering it: Base, 2×Base, 4×Base… up to Max.
func (t *Throttle) Fail(ip net.IP) time.Duration {
	now := t.opts.Now()
	key := network(ip)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.nets) > 10000 { // forget the quiet ones before growing further
		for k, f := range t.nets {
			if now.Sub(f.last) > t.opts.Forget {
				delete(t.nets, k)
			}
		}
	}
	f := t.nets[key]
	if f == nil || now.Sub(f.last) > t.opts.Forget {
		f = &failures{}
		t.nets[key] = f
	}
	f.n++
	f.last = now
	d := t.opts.Base
	for i := 1; i < f.n && d < t.opts.Max; i++ {
		d *= 2
	}
	return min(d, t.opts.Max)
}
