package inbound

import (
	"errors"
	"net"
	"sync/atomic"
)

// go-smtp reads the rest of a message it refused as too large before it
// answers, however long that rest is. A session bounds it by counting the
// bytes read from the connection after the refusal: cutoffConn closes the
// connection once they are used up.

type cutoffListener struct{ net.Listener }

func (l cutoffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &cutoffConn{Conn: c}
	cc.left.Store(-1)
	return cc, nil
}

// cutoffConn is a connection that closes once left more bytes have been
// read from it; a negative left is no limit (set by session.readAtMost).
type cutoffConn struct {
	net.Conn
	left atomic.Int64
}

// errCutOff ends a read once the bytes a session allowed are read.
var errCutOff = errors.New("inbound: connection closed after reading the rest of a refused message as far as allowed")

func (c *cutoffConn) Read(b []byte) (int, error) {
	left := c.left.Load()
	if left < 0 {
		return c.Conn.Read(b)
	}
	if left == 0 {
		c.Conn.Close()
		return 0, errCutOff
	}
	if int64(len(b)) > left {
		b = b[:left]
	}
	n, err := c.Conn.Read(b)
	c.left.Add(-int64(n))
	return n, err
}
