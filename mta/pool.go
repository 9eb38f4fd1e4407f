package mta

import (
	"context"
	"sync"
	"time"
)

// A hostPool holds the connections to one destination host (an MX host or
// the relay, with its port). It caps them — dialing, busy and idle together
// — at Deliverer.MaxConnsPerHost, and keeps idle ones for reuse by the same
// source address and EHLO name. A sender that finds the host at its cap
// waits; if an idle connection of another source address holds a slot, that
// connection is closed to make room.
type hostPool struct {
	d    *Deliverer
	addr string

	mu      sync.Mutex
	open    int           // connections counted against the cap
	idle    []*smtpConn   // least recently used first
	changed chan struct{} // closed and replaced whenever a slot or an idle connection frees up
	closed  bool          // the Deliverer was closed: nothing goes back to idle

	refs int // senders using the pool; guarded by d.mu
}

// connKey is what a reused connection must match besides its host.
// sec is the transport security the session was made under
// (security.key).
type connKey struct{ src, helo, sec string }

func newHostPool(d *Deliverer, addr string) *hostPool {
	return &hostPool{d: d, addr: addr, changed: make(chan struct{})}
}

// broadcast wakes every waiter; p.mu is held.
func (p *hostPool) broadcast() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// acquire returns an idle connection for key, or nil with a slot reserved
// for a new connection: the caller dials, and calls unreserve if that
// fails. It waits while the host is at its cap.
func (p *hostPool) acquire(ctx context.Context, key connKey) (*smtpConn, error) {
	for {
		p.mu.Lock()
		for i := len(p.idle) - 1; i >= 0; i-- {
			if c := p.idle[i]; c.key == key {
				p.idle = append(p.idle[:i], p.idle[i+1:]...)
				c.timer.Stop()
				p.mu.Unlock()
				return c, nil
			}
		}
		if p.open < p.d.maxConns() {
			p.open++
			p.mu.Unlock()
			return nil, nil
		}
		if len(p.idle) > 0 {
			// An idle connection for another source address or name
			// gives up its slot, which passes to the caller.
			victim := p.idle[0]
			p.idle = p.idle[1:]
			victim.timer.Stop()
			p.mu.Unlock()
			victim.quit()
			return nil, nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// unreserve gives back a slot whose dial failed.
func (p *hostPool) unreserve() {
	p.mu.Lock()
	p.open--
	p.broadcast()
	p.mu.Unlock()
}

// release takes a connection back after a transaction: idle for reuse when
// its session is still good, closed otherwise.
func (p *hostPool) release(c *smtpConn, reusable bool) {
	c.uses++
	c.idleAt = time.Now()
	if reusable && c.uses < p.d.maxMessages() {
		p.mu.Lock()
		if !p.closed {
			c.timer = time.AfterFunc(p.d.idleTimeout(), func() { p.expire(c) })
			p.idle = append(p.idle, c)
			p.broadcast()
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	p.discard(c, reusable)
}

// discard closes a connection (politely with QUIT when its session is
// good) and frees its slot.
func (p *hostPool) discard(c *smtpConn, polite bool) {
	if polite {
		c.quit()
	} else {
		c.raw.Close()
	}
	p.unreserve()
}

// expire closes a connection that stayed idle for IdleTimeout, unless it
// was taken meanwhile.
func (p *hostPool) expire(c *smtpConn) {
	p.mu.Lock()
	found := false
	for i, ic := range p.idle {
		if ic == c {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			found = true
			break
		}
	}
	p.mu.Unlock()
	if found {
		p.discard(c, true)
	}
}

// drain stops pooling and returns the idle connections, whose slots it
// frees; the caller closes them.
func (p *hostPool) drain() []*smtpConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	for _, c := range idle {
		c.timer.Stop()
	}
	p.open -= len(idle)
	p.broadcast()
	return idle
}

// unused reports a pool with no connection at all; d.mu is held.
func (p *hostPool) unused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refs == 0 && p.open == 0
}
