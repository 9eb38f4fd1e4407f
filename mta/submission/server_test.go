package submission

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyBackend takes one key and records what it is given.
type keyBackend struct {
	key    string
	mu     sync.Mutex
	got    []Envelope
	logins int
}

func (b *keyBackend) Login(password string) (Sender, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logins++
	if password != b.key {
		return nil, BadCredentials("authentication failed")
	}
	return b, nil
}

func (b *keyBackend) Mail(string) error { return nil }
func (b *keyBackend) Rcpt(to string) error {
	if strings.HasPrefix(to, "refused") {
		return &Reply{Code: 553, Enhanced: "5.1.3", Text: "no"}
	}
	return nil
}
func (b *keyBackend) Submit(env Envelope) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, env)
	return "id-1", nil
}

// errText is an SMTP error as "code text".
func errText(err error) string {
	var te *textproto.Error
	if errors.As(err, &te) {
		return fmt.Sprintf("%d %s", te.Code, te.Msg)
	}
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func listen(t *testing.T, b Backend, o Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(b, o)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// loopbackAuth is PLAIN without net/smtp's TLS check (the server decides).
type loopbackAuth struct{ user, pass string }

func (a loopbackAuth) Start(*smtp.ServerInfo) (string, []byte, error) {
	return "PLAIN", []byte("\x00" + a.user + "\x00" + a.pass), nil
}
func (a loopbackAuth) Next([]byte, bool) ([]byte, error) { return nil, nil }

// TestPlainLoopback: without TLS, AUTH is neither offered nor taken, and
// nothing is taken before it; with Dev a loopback client logs in.
func TestPlainLoopback(t *testing.T) {
	b := &keyBackend{key: "svc_test_k"}
	for _, dev := range []bool{false, true} {
		addr := listen(t, b, Options{Domain: "sub.test", Dev: dev, Throttle: NewThrottle(ThrottleOptions{})})
		c, err := smtp.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Hello("client.test")
		offered, _ := c.Extension("AUTH")
		err = c.Auth(loopbackAuth{"apikey", "svc_test_k"})
		if dev != offered || dev != (err == nil) {
			t.Errorf("dev=%v: AUTH offered %v, login error %v", dev, offered, err)
		}
		if !dev && !strings.HasPrefix(errText(err), "530 5.7.0") {
			t.Errorf("AUTH without TLS: %v, want 530 5.7.0", err)
		}
		if dev {
			if err := c.Mail("a@b.test"); err != nil {
				t.Fatal(err)
			}
			if err := c.Rcpt("refused@b.test"); !strings.HasPrefix(errText(err), "553 5.1.3") {
				t.Errorf("a refused recipient: %v", err)
			}
			c.Rcpt("ok@b.test")
			w, _ := c.Data()
			w.Write([]byte("Subject: x\r\n\r\nbody\r\n"))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if len(b.got) != 1 || strings.Join(b.got[0].To, ",") != "ok@b.test" || string(b.got[0].Data) != "Subject: x\r\n\r\nbody\r\n" || b.got[0].RequireTLS {
				t.Errorf("the backend got %+v", b.got)
			}
			// REQUIRETLS on MAIL FROM reaches the backend (RFC 8689).
			if id, err := c.Text.Cmd("MAIL FROM:<a@b.test> REQUIRETLS"); err != nil {
				t.Fatal(err)
			} else {
				c.Text.StartResponse(id)
				_, _, err := c.Text.ReadResponse(250)
				c.Text.EndResponse(id)
				if err != nil {
					t.Fatalf("MAIL with REQUIRETLS: %v", err)
				}
			}
			c.Rcpt("ok@b.test")
			w, _ = c.Data()
			w.Write([]byte("Subject: y\r\n\r\nbody\r\n"))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if len(b.got) != 2 || !b.got[1].RequireTLS {
				t.Errorf("REQUIRETLS not passed on: %+v", b.got)
			}
		} else {
			c2, _ := smtp.Dial(addr)
			c2.Hello("client.test")
			if err := c2.Mail("a@b.test"); !strings.HasPrefix(errText(err), "530 5.7.0") {
				t.Errorf("MAIL before AUTH: %v", err)
			}
			c2.Close()
		}
		c.Close()
	}
}

// TestFailedLogins: wrong keys are answered 535 5.7.8 (after the
// throttle's delay); the third closes the connection; a right key on a
// new connection from the same network logs in.
func TestFailedLogins(t *testing.T) {
	b := &keyBackend{key: "svc_test_k"}
	addr := listen(t, b, Options{Dev: true, Throttle: NewThrottle(ThrottleOptions{Base: time.Millisecond, Max: 2 * time.Millisecond})})
	conn, err := textproto.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.ReadResponse(220)
	conn.Cmd("EHLO client.test")
	conn.ReadResponse(250)
	for i := range 3 {
		conn.Cmd("AUTH PLAIN %s", base64.StdEncoding.EncodeToString([]byte("\x00apikey\x00svc_test_wrong")))
		_, _, err := conn.ReadResponse(235)
		want := "535 5.7.8"
		if i == 2 {
			want = "421 4.7.0"
		}
		if !strings.HasPrefix(errText(err), want) {
			t.Fatalf("attempt %d: %v, want %s", i+1, err, want)
		}
	}
	c2, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := c2.Auth(loopbackAuth{"apikey", "svc_test_k"}); err != nil {
		t.Fatalf("a valid key after failures: %v", err)
	}
}

// TestThrottle: delays double per failure of one network up to Max, are
// shared by a /24 (IPv4) or /64 (IPv6), and start over after Forget.
func TestThrottle(t *testing.T) {
	now := time.Unix(1000, 0)
	th := NewThrottle(ThrottleOptions{Base: time.Second, Max: 5 * time.Second, Forget: time.Minute, Now: func() time.Time { return now }})
	var got []time.Duration
	for _, ip := range []string{"192.0.2.1", "192.0.2.200", "192.0.2.7", "192.0.2.9", "192.0.2.10"} {
		got = append(got, th.Fail(net.ParseIP(ip)))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	if d := th.Fail(net.ParseIP("192.0.3.1")); d != time.Second {
		t.Errorf("another /24: %v", d)
	}
	if d, d2 := th.Fail(net.ParseIP("2001:db8::1")), th.Fail(net.ParseIP("2001:db8::ffff:1")); d != time.Second || d2 != 2*time.Second {
		t.Errorf("one /64: %v then %v", d, d2)
	}
	if d := th.Fail(net.ParseIP("2001:db8:0:1::1")); d != time.Second {
		t.Errorf("another /64: %v", d)
	}
	now = now.Add(2 * time.Minute)
	if d := th.Fail(net.ParseIP("192.0.2.1")); d != time.Second {
		t.Errorf("after Forget: %v", d)
	}
}

func TestKeyPrefix(t *testing.T) {
	if got := keyPrefix("svc_live_abcdefghijkl"); got != "svc_live_abc" {
		t.Errorf("%q", got)
	}
	var r *Reply
	if !errors.As(error(BadCredentials("x")), &r) || !r.guess {
		t.Error("BadCredentials is not a counted guess")
	}
}

// TestQuitReply: the replies held back by the coalescing connection reach
// the client before the close, also over TLS (whose close sets a write
// deadline in the past).
func TestQuitReply(t *testing.T) {
	addr := listen(t, &keyBackend{key: "k"}, Options{Dev: true})
	c, err := textproto.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.ReadResponse(220); err != nil {
		t.Fatal(err)
	}
	c.PrintfLine("NOOP")
	c.PrintfLine("QUIT")
	for _, code := range []int{250, 221} {
		if _, _, err := c.ReadResponse(code); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShutdown: idle sessions are closed at once with 421; a transaction
// in flight finishes (its 250 is sent) before its session is closed, and
// Shutdown returns without waiting for its deadline.
func TestShutdown(t *testing.T) {
	b := &keyBackend{key: "k"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(b, Options{Dev: true})
	go s.Serve(ln)
	login := func() *textproto.Conn {
		c, err := textproto.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.ReadResponse(220)
		c.PrintfLine("EHLO client.test")
		c.ReadResponse(250)
		c.PrintfLine("AUTH PLAIN %s", base64.StdEncoding.EncodeToString([]byte("\x00apikey\x00k")))
		if _, _, err := c.ReadResponse(235); err != nil {
			t.Fatal(err)
		}
		return c
	}
	idle, busy := login(), login()
	busy.PrintfLine("MAIL FROM:<a@b.test>")
	busy.ReadResponse(250)
	busy.PrintfLine("RCPT TO:<c@d.test>")
	busy.ReadResponse(250)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	if _, _, err := idle.ReadResponse(421); err != nil {
		t.Fatalf("the idle session: %v, want 421", err)
	}
	busy.PrintfLine("DATA")
	if _, _, err := busy.ReadResponse(354); err != nil {
		t.Fatal(err)
	}
	busy.PrintfLine("Subject: last\r\n\r\nbody\r\n.")
	if _, msg, err := busy.ReadResponse(250); err != nil || !strings.Contains(msg, "id-1") {
		t.Fatalf("the transaction in flight: %v %s", err, msg)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
