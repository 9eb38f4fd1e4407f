package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestHeaderOverTheCapIsOutsideTheEnvelope holds docs/errors.md to the
// server: a request whose request line and header fields come to 1 MiB
// plus 4 KiB (1,052,672 bytes) reaches the API and gets its envelope; one
// byte more is refused by net/http itself, 431 in text/plain, outside the
// envelope, and the connection is closed.
func TestHeaderOverTheCapIsOutsideTheEnvelope(t *testing.T) {
	base, _, _ := startServe(t, t.TempDir())
	addr := strings.TrimPrefix(base, "http://")
	const limit = maxHeaderBytes + 4096
	if limit != 1_052_672 {
		t.Fatalf("the cap is %d bytes: change docs/errors.md and this test", limit)
	}
	send := func(size int) string {
		t.Helper()
		head := "GET /v1/account HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\nX-API-Key: "
		tail := "\r\n\r\n"
		req := head + strings.Repeat("a", size-len(head)-len(tail)) + tail
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		go c.Write([]byte(req)) // the server may stop reading, and close, before all is sent
		answer, _ := io.ReadAll(io.LimitReader(c, 4096))
		return string(answer)
	}
	if got := send(limit); !strings.HasPrefix(got, "HTTP/1.1 401 ") || !strings.Contains(got, `{"error":{"code":"INVALID_API_KEY"`) {
		t.Errorf("a header of %d bytes: %q, want the API's 401", limit, got)
	}
	want := "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"
	for _, size := range []int{limit + 1, 1_100_000} {
		if got := send(size); got != want {
			t.Errorf("a header of %d bytes: %q, want %q", size, got, want)
		}
	}
}
