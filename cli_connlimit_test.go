package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var smtpAddrRe = regexp.MustCompile(`inbound SMTP \(.*\) on (\S+)`)

// dialFrom connects to addr from the loopback address src.
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

// One source IP over --max-connections-per-ip is refused on both
// listeners, while the API and the inbound listener keep answering others.
func TestMaxConnectionsPerIP(t *testing.T) {
	base, out, _ := startServe(t, t.TempDir(), "--max-connections-per-ip", "2")
	httpAddr := strings.TrimPrefix(base, "http://")
	smtpAddr := smtpAddrRe.FindStringSubmatch(out.String())[1]
	line := func(c net.Conn) string {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		l, _ := bufio.NewReader(c).ReadString('\n')
		return l
	}

	// HTTP: two idle connections fill 127.0.0.2's share.
	dialFrom(t, "127.0.0.2", httpAddr)
	dialFrom(t, "127.0.0.2", httpAddr)
	over := dialFrom(t, "127.0.0.2", httpAddr)
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	refusal, _ := io.ReadAll(over)
	if !strings.HasPrefix(string(refusal), "HTTP/1.1 429 ") || !strings.Contains(string(refusal), `"code":"RATE_LIMIT_EXCEEDED"`) {
		t.Fatalf("over the cap: %q", refusal)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}
		return d.DialContext(ctx, network, addr)
	}}}
	resp, err := client.Get(base + "/v1/openapi.json")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("another IP: %v %v", resp, err)
	}
	resp.Body.Close()

	// Inbound SMTP: the same cap, answered with 421.
	for range 2 {
		if g := line(dialFrom(t, "127.0.0.2", smtpAddr)); !strings.HasPrefix(g, "220 ") {
			t.Fatalf("SMTP greeting %q", g)
		}
	}
	if g := line(dialFrom(t, "127.0.0.2", smtpAddr)); !strings.HasPrefix(g, "421 ") {
		t.Fatalf("SMTP over the cap: %q", g)
	}
	if g := line(dialFrom(t, "127.0.0.3", smtpAddr)); !strings.HasPrefix(g, "220 ") {
		t.Fatalf("SMTP from another IP: %q", g)
	}
}

// A body that trickles in holds its connection no longer than
// --read-timeout.
func TestReadTimeoutBoundsSlowBodies(t *testing.T) {
	base, _, _ := startServe(t, t.TempDir(), "--read-timeout", "1s")
	c := dialFrom(t, "127.0.0.1", strings.TrimPrefix(base, "http://"))
	io.WriteString(c, "POST /v1/suppressions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"recipient\":")
	start := time.Now()
	c.SetReadDeadline(start.Add(10 * time.Second))
	_, err := io.ReadAll(c) // whatever the answer, the server ends the connection
	if err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("connection held %v (%v)", time.Since(start), err)
	}
	if _, err := run(t, "serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0", "--read-timeout", "0s"); err == nil {
		t.Error("--read-timeout 0s accepted")
	}
	if _, err := run(t, "serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0", "--max-connections-per-ip", "0"); err == nil {
		t.Error("--max-connections-per-ip 0 accepted")
	}
}
