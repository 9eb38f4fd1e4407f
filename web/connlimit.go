package web

import (
	"encoding/json"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"mailbolt/app"
)

// LimitConns wraps ln so that one source IP holds at most perIP open
// connections at a time: one client cannot take every connection (or file
// descriptor) the server has while others wait. A connection over the cap
// is sent refusal (a ready-made answer in the listener's protocol: an HTTP
// 429, an SMTP 421) and closed; Accept goes on with the next one. Peers in
// exempt (the trusted proxies, which carry many clients) are not counted.
func LimitConns(ln net.Listener, perIP int, exempt []netip.Prefix, refusal []byte) net.Listener {
	return &connLimiter{Listener: ln, perIP: perIP, exempt: exempt, refusal: refusal, open: map[netip.Addr]int{}}
}

type connLimiter struct {
	net.Listener
	perIP   int
	exempt  []netip.Prefix
	refusal []byte

	mu   sync.Mutex
	open map[netip.Addr]int
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := parseHostAddr(c.RemoteAddr().String())
		if !ip.IsValid() || trusted(l.exempt, ip) {
			return c, nil
		}
		l.mu.Lock()
		over := l.open[ip] >= l.perIP
		if !over {
			l.open[ip]++
		}
		l.mu.Unlock()
		if over {
			// A fresh socket's send buffer takes the short answer at once;
			// the deadline only guards against the unexpected.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			c.Write(l.refusal)
			c.Close()
			continue
		}
		return &countedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *connLimiter) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// countedConn gives its slot back when closed, once however often Close
// is called.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// TooManyConnections is the HTTP answer to a connection over the per-IP
// cap, in the spec's error envelope.
var TooManyConnections = func() []byte {
	body, _ := json.Marshal(envelope{Error: envelopeError{Code: app.CodeRateLimitExceeded,
		Message: "too many open connections from this address; close one and retry"}})
	return []byte("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}()
