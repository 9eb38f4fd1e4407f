package mta

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"mailbolt/mta/dns/dnstest"
)

func TestConnectionReuse(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)
	d.opts.MaxMessagesPerConn = 3
	ctx := context.Background()

	for i := range 2 {
		wantStatus(t, only(t, d.Send(ctx, envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
		if mx.Conns() != 1 {
			t.Fatalf("send %d: %d connections, want 1", i, mx.Conns())
		}
	}
	// A session reused at once after a completed transaction goes
	// straight to MAIL FROM.
	cmds := mx.Commands()[0]
	if count(cmds, "MAIL") != 2 || count(cmds, "RSET") != 0 || count(cmds, "EHLO") != 1 {
		t.Fatalf("commands = %v", cmds)
	}

	// The third message is the connection's last; the fourth opens a new one.
	d.Send(ctx, envelope("rcpt@example.test"))
	d.Send(ctx, envelope("rcpt@example.test"))
	if mx.Conns() != 2 || count(mx.Commands()[0], "QUIT") != 1 {
		t.Fatalf("%d connections, first: %v", mx.Conns(), mx.Commands()[0])
	}

	// Another source address needs its own connection.
	env := envelope("rcpt@example.test")
	env.SourceIP = net.ParseIP(ipSource)
	wantStatus(t, only(t, d.Send(ctx, env)), StatusDelivered, Bounce{})
	if mx.Conns() != 3 {
		t.Fatalf("%d connections, want 3", mx.Conns())
	}

	// Close says QUIT to the idle connections.
	d.Close()
	for i, c := range mx.Commands() {
		if count(c, "QUIT") != 1 {
			t.Fatalf("connection %d: %v", i, c)
		}
	}
}

func TestIdleConnectionClosedByServerIsReplaced(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)

	wantStatus(t, only(t, d.Send(context.Background(), envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
	mx.DropAll()
	wantStatus(t, only(t, d.Send(context.Background(), envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
	if mx.Conns() != 2 || len(mx.Messages()) != 2 {
		t.Fatalf("%d connections, %d messages", mx.Conns(), len(mx.Messages()))
	}
}

func TestIdleTimeoutClosesConnection(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)
	d.opts.IdleTimeout = time.Millisecond

	wantStatus(t, only(t, d.Send(context.Background(), envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
	// The pool gives the slot back once the idle connection is closed.
	p := d.pool(Hop{Host: "mx.example.test", Port: mx.Port})
	defer d.unref(p)
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.open == 0
	})
	if c := mx.Commands()[0]; count(c, "QUIT") != 1 {
		t.Fatalf("commands = %v", c)
	}
}

// indexOf finds the nth (from 0) occurrence of verb.
func indexOf(verbs []string, verb string, nth int) int {
	for i, v := range verbs {
		if v == verb {
			if nth == 0 {
				return i
			}
			nth--
		}
	}
	return -1
}

// waitFor polls cond for up to 10 s: for events with no signal to wait on.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}

func TestPerHostConnectionCap(t *testing.T) {
	const limit, sends = 2, 8
	mx := startMX(t, ipMX+":0")
	// The first transactions wait in DATA until `limit` of them are in
	// progress together, so the cap is reached, not just respected.
	var mu sync.Mutex
	inData := 0
	full := make(chan struct{})
	mx.Data = func(s *mxSession, r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		mu.Lock()
		inData++
		if inData == limit {
			close(full)
		}
		mu.Unlock()
		select {
		case <-full:
		case <-time.After(10 * time.Second): // a safety valve, not a timing assertion
		}
		s.record(b)
		return nil
	}
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)
	d.opts.MaxConnsPerHost = limit
	d.opts.DataTimeout = 20 * time.Second

	var wg sync.WaitGroup
	results := make([][]RecipientResult, sends)
	for i := range sends {
		wg.Go(func() { results[i] = d.Send(context.Background(), envelope("rcpt@example.test")) })
	}
	wg.Wait()
	for _, rs := range results {
		wantStatus(t, only(t, rs), StatusDelivered, Bounce{})
	}
	if mx.MaxOpen() != limit || mx.Conns() != limit {
		t.Fatalf("at most %d connections open, %d in all; want %d", mx.MaxOpen(), mx.Conns(), limit)
	}
	if len(mx.Messages()) != sends {
		t.Fatalf("%d messages", len(mx.Messages()))
	}
}

func TestIdleReuseIsProbedAndStaleSessionsRetried(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("example.test", 10, "mx.example.test")
	zone.A("mx.example.test", ipMX)
	d := newDeliverer(t, zone, mx.Port)
	ctx := context.Background()
	old := probeAfter
	probeAfter = 50 * time.Millisecond
	defer func() { probeAfter = old }()

	wantStatus(t, only(t, d.Send(ctx, envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
	time.Sleep(100 * time.Millisecond)
	// Idle longer than probeAfter: RSET proves the session first.
	wantStatus(t, only(t, d.Send(ctx, envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
	cmds := mx.Commands()[0]
	if count(cmds, "RSET") != 1 || indexOf(cmds, "RSET", 0) > indexOf(cmds, "MAIL", 1) {
		t.Fatalf("commands = %v", cmds)
	}
	// The server drops the idle session; a reuse without a probe notices
	// at MAIL FROM and goes again on a new connection, without a failure.
	probeAfter = time.Hour
	mx.DropAll()
	wantStatus(t, only(t, d.Send(ctx, envelope("rcpt@example.test"))), StatusDelivered, Bounce{})
	if mx.Conns() != 2 || len(mx.Messages()) != 3 {
		t.Fatalf("%d connections, %d messages", mx.Conns(), len(mx.Messages()))
	}
}
