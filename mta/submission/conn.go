package submission

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// go-smtp writes every reply line in a write of its own, so a pipelined
// transaction (MAIL, RCPT, DATA in one packet) costs a system call per
// reply. A session is strictly request and reply: after replying, the
// server reads the next command (or the message, or the TLS handshake) or
// closes. So replies can wait in a buffer until the next read or close,
// which sends them together: the same bytes in the same order, in fewer
// writes (RFC 2920 §3.2 lets a server group replies this way).

type coalescingListener struct {
	net.Listener
	s *Server
}

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &coalescingConn{Conn: c, s: l.s}
	l.s.track(cc, true)
	return cc, nil
}

// maxPending bounds the replies held back; more is written at once.
const maxPending = 16 << 10

type coalescingConn struct {
	net.Conn
	s       *Server
	mu      sync.Mutex
	pending []byte
	err     error // the first failed write, reported by the next one

	// For Shutdown: busy is set from MAIL to the end of the transaction;
	// outer is the connection replies go through (the TLS one over TLS),
	// known once the session has begun.
	busy  atomic.Bool
	outer atomic.Pointer[net.Conn]
}

func (c *coalescingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.pending = append(c.pending, b...)
	if len(c.pending) >= maxPending {
		return len(b), c.flushLocked()
	}
	return len(b), nil
}

func (c *coalescingConn) flushLocked() error {
	if len(c.pending) == 0 || c.err != nil {
		return c.err
	}
	_, c.err = c.Conn.Write(c.pending)
	c.pending = c.pending[:0]
	return c.err
}

func (c *coalescingConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// Read sends the replies held back, then waits for the client.
func (c *coalescingConn) Read(b []byte) (int, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// Close sends the replies held back (a last 421, say), then closes.
func (c *coalescingConn) Close() error {
	c.flush()
	c.s.track(c, false)
	return c.Conn.Close()
}

// SetWriteDeadline sends what is held back before a deadline that has
// already passed takes effect: crypto/tls sets one right after its
// close_notify alert, so that nothing more is written.
func (c *coalescingConn) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		c.flush()
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c *coalescingConn) SetDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		c.flush()
	}
	return c.Conn.SetDeadline(t)
}
