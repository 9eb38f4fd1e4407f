package web

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// dialFrom connects to addr from the loopback address src (any of
// 127.0.0.0/8 is this host on Linux).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLimitConns(t *testing.T) {
	for _, c := range []struct {
		name   string
		exempt []netip.Prefix
		third  bool // whether 127.0.0.2's third connection is served
	}{
		{"capped", nil, false},
		{"trusted proxy exempt", []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := LimitConns(raw, 2, c.exempt, []byte("NO\r\n"))
			t.Cleanup(func() { ln.Close() })
			accepted := make(chan net.Conn, 10)
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					conn.Write([]byte("OK\r\n"))
					accepted <- conn
				}
			}()
			greeting := func(conn net.Conn) string {
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				b, _ := io.ReadAll(io.LimitReader(conn, 4))
				return string(b)
			}
			addr := raw.Addr().String()
			for range 2 {
				if g := greeting(dialFrom(t, "127.0.0.2", addr)); g != "OK\r\n" {
					t.Fatalf("within the cap: %q", g)
				}
			}
			third := dialFrom(t, "127.0.0.2", addr)
			if g := greeting(third); (g == "OK\r\n") != c.third {
				t.Fatalf("third connection from one IP: %q", g)
			}
			if !c.third {
				// Refused and closed: nothing follows the refusal.
				if n, err := third.Read(make([]byte, 1)); n != 0 || err == nil {
					t.Fatalf("refused connection still open: %d, %v", n, err)
				}
			}
			// Another address is served meanwhile.
			if g := greeting(dialFrom(t, "127.0.0.3", addr)); g != "OK\r\n" {
				t.Fatalf("another IP: %q", g)
			}
			if c.third {
				return
			}
			// A closed connection frees its slot, once however often it is closed.
			first := <-accepted
			first.Close()
			first.Close()
			if g := greeting(dialFrom(t, "127.0.0.2", addr)); g != "OK\r\n" {
				t.Fatalf("after one closed: %q", g)
			}
			if g := greeting(dialFrom(t, "127.0.0.2", addr)); !strings.HasPrefix(g, "NO") {
				t.Fatalf("over the cap again: %q", g)
			}
		})
	}
}
