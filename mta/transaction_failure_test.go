package mta

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"
)

// rawSession dials the raw MX as a relay and returns a session ready for
// MAIL FROM.
func rawSession(t *testing.T, port int, cmdTimeout time.Duration) *smtpConn {
	t.Helper()
	d := relayTo(t, port)
	if cmdTimeout > 0 {
		d.opts.CommandTimeout = cmdTimeout
	}
	ctx := context.Background()
	hops, err := d.Route(ctx, "example.test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.connect(ctx, d.pool(hops[0]), hops[0], nil, "out.mailbolt.test", false, security{policy: PolicyNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.raw.Close() })
	return c
}

// Every RCPT refused, then 421 to the pipelined DATA: the server is closing,
// so the session must not be reported reusable.
func TestAllRcptRefusedThen421OnDataNotReusable(t *testing.T) {
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w, "PIPELINING")
		for range 3 {
			line(t, r)
		}
		w.Write([]byte("250 ok\r\n550 5.1.1 unknown\r\n421 4.3.2 shutting down\r\n"))
	})
	c := rawSession(t, m.port, 0)
	rs, reusable := c.transact(context.Background(), envelope("x@example.test"), []string{"x@example.test"})
	if rs == nil || rs[0].Status != StatusPermanent {
		t.Fatalf("got %+v", rs)
	}
	if reusable {
		t.Errorf("session reported reusable after a 421")
	}
}

// MAIL FROM refused, then 421 to a pipelined RCPT: same.
func TestMailRefusedThen421NotReusable(t *testing.T) {
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w, "PIPELINING")
		for range 3 {
			line(t, r)
		}
		w.Write([]byte("550 5.7.1 sender refused\r\n421 4.3.2 closing\r\n"))
	})
	c := rawSession(t, m.port, 0)
	_, reusable := c.transact(context.Background(), envelope("x@example.test"), []string{"x@example.test"})
	if reusable {
		t.Errorf("session reported reusable after a 421")
	}
}

// Every RCPT refused and the reply to the pipelined DATA does not come in
// time: the session is out of step (the server may yet take DATA) and must
// not be reused. When it is, the late 354 is taken as the answer to RSET.
func TestDataReplyTimeoutAfterRefusalsDesyncs(t *testing.T) {
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w, "PIPELINING")
		for range 3 {
			line(t, r)
		}
		w.Write([]byte("250 ok\r\n550 5.1.1 unknown\r\n"))
		time.Sleep(500 * time.Millisecond) // the DATA reply is late
		w.Write([]byte("354 go ahead\r\n"))
		// The server is now reading message content; "RSET" is a line of it.
		line(t, r)
		time.Sleep(500 * time.Millisecond)
	})
	c := rawSession(t, m.port, 200*time.Millisecond)
	_, reusable := c.transact(context.Background(), envelope("x@example.test"), []string{"x@example.test"})
	if reusable {
		t.Errorf("session reported reusable though the DATA reply never came")
	}
	time.Sleep(400 * time.Millisecond)
	if err := c.reset(context.Background()); err == nil {
		t.Errorf("RSET accepted a 354 (the late DATA reply) as its answer; the server is in DATA mode")
	}
}

// RSET must be answered by a 2xx: a 354 (a late reply to DATA) means the
// session is out of step.
func TestResetRejectsNon250(t *testing.T) {
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w, "PIPELINING")
		if l := line(t, r); l != "RSET" {
			t.Errorf("got %q", l)
		}
		w.Write([]byte("354 what\r\n"))
	})
	c := rawSession(t, m.port, 0)
	if err := c.reset(context.Background()); err == nil {
		t.Errorf("reset accepted 354")
	}
}

// A multi-line final reply: the enhanced code repeated on each line is
// recorded once, as on the failure path.
func TestMultilineSuccessEnhanced(t *testing.T) {
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w, "PIPELINING")
		for range 3 {
			line(t, r)
		}
		w.Write([]byte("250 ok\r\n250 ok\r\n354 go\r\n"))
		readData(t, r)
		w.Write([]byte("250-2.0.0 ok\r\n250 2.0.0 queued as X\r\n"))
	})
	c := rawSession(t, m.port, 0)
	rs, _ := c.transact(context.Background(), envelope("x@example.test"), []string{"x@example.test"})
	if rs[0].Status != StatusDelivered || rs[0].Text != "ok\nqueued as X" {
		t.Errorf("recorded %q %q", rs[0].Enhanced, rs[0].Text)
	}
}
