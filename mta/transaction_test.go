package mta

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawMX is a hand-scripted SMTP server for one connection: it shows
// exactly which commands arrive before it answers.
type rawMX struct {
	t    *testing.T
	ln   net.Listener
	port int
	done chan struct{}
}

func startRawMX(t *testing.T, serve func(r *bufio.Reader, w net.Conn)) *rawMX {
	t.Helper()
	ln, err := net.Listen("tcp", ipMX+":0")
	if err != nil {
		t.Fatal(err)
	}
	m := &rawMX{t: t, ln: ln, port: ln.Addr().(*net.TCPAddr).Port, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		serve(bufio.NewReader(c), c)
	}()
	t.Cleanup(func() { ln.Close(); <-m.done })
	return m
}

// line reads one command line without its CRLF.
func line(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	s, err := r.ReadString('\n')
	if err != nil {
		t.Errorf("reading a command: %v", err)
		return ""
	}
	return strings.TrimSuffix(s, "\r\n")
}

// hello answers the greeting and EHLO, offering exts.
func hello(t *testing.T, r *bufio.Reader, w net.Conn, exts ...string) {
	w.Write([]byte("220 mx.example.test ESMTP\r\n"))
	if l := line(t, r); !strings.HasPrefix(l, "EHLO ") {
		t.Errorf("first command %q, want EHLO", l)
	}
	reply := "250-mx.example.test\r\n"
	for _, e := range exts {
		reply += "250-" + e + "\r\n"
	}
	w.Write([]byte(reply + "250 HELP\r\n"))
}

// readData reads DATA content up to the final dot, undoing dot-stuffing.
func readData(t *testing.T, r *bufio.Reader) []byte {
	var b bytes.Buffer
	for {
		l := line(t, r)
		if l == "." || t.Failed() {
			return b.Bytes()
		}
		b.WriteString(strings.TrimPrefix(l, "."))
		b.WriteString("\r\n")
	}
}

func relayTo(t *testing.T, port int) *Deliverer {
	d := newDeliverer(t, nil, port)
	d.opts.Relay = &Relay{Addr: net.JoinHostPort(ipMX, strconv.Itoa(port))}
	return d
}

func TestPipelinedTransaction(t *testing.T) {
	var got []byte
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w, "PIPELINING", "SIZE 100000", "8BITMIME")
		// Every command of the transaction arrives before any reply.
		want := []string{"MAIL FROM:<bounces+abc@mailbolt.test> BODY=8BITMIME SIZE=" + strconv.Itoa(len(testData)),
			"RCPT TO:<a@example.test>", "RCPT TO:<b@example.test>", "RCPT TO:<c@example.test>", "DATA"}
		for _, cmd := range want {
			if l := line(t, r); l != cmd {
				t.Errorf("got %q, want %q", l, cmd)
			}
		}
		w.Write([]byte("250 2.1.0 ok\r\n250 2.1.5 ok\r\n550 5.1.1 no such user\r\n250 2.1.5 ok\r\n354 go ahead\r\n"))
		got = readData(t, r)
		w.Write([]byte("250 2.0.0 queued as X1\r\n"))
		if l := line(t, r); l != "QUIT" {
			t.Errorf("got %q, want QUIT", l)
		}
		w.Write([]byte("221 bye\r\n"))
	})
	d := relayTo(t, m.port)
	rs := d.Send(context.Background(), envelope("a@example.test", "b@example.test", "c@example.test"))
	wantStatus(t, rs[0], StatusDelivered, Bounce{})
	wantStatus(t, rs[1], StatusPermanent, Bounce{Type: BounceHard, Category: CategoryUnknownUser})
	wantStatus(t, rs[2], StatusDelivered, Bounce{})
	if rs[0].Enhanced != "2.0.0" || rs[0].Text != "queued as X1" {
		t.Errorf("final reply recorded as %q %q", rs[0].Enhanced, rs[0].Text)
	}
	if rs[1].Code != 550 || rs[1].Enhanced != "5.1.1" || rs[1].Text != "no such user" {
		t.Errorf("refusal recorded as %d %q %q", rs[1].Code, rs[1].Enhanced, rs[1].Text)
	}
	d.Close()
	<-m.done
	if !bytes.Equal(got, testData) {
		t.Errorf("message arrived as\n%q\nwant\n%q", got, testData)
	}
}

// Without PIPELINING each command waits for the reply to the one before,
// and no DATA follows when every recipient is refused.
func TestLockStepWithoutPipelining(t *testing.T) {
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w)
		for _, step := range [][2]string{
			{"MAIL FROM:<bounces+abc@mailbolt.test>", "250 ok"},
			{"RCPT TO:<a@example.test>", "450 4.2.1 try later"},
			{"RCPT TO:<b@example.test>", "550 5.1.1 unknown"},
			// The session is reused for the next message: RSET first,
			// since the transaction did not end with a dot.
			{"RSET", "250 ok"},
			{"MAIL FROM:<bounces+abc@mailbolt.test>", "250 ok"},
			{"RCPT TO:<c@example.test>", "250 ok"},
			{"DATA", "354 go ahead"},
		} {
			if l := line(t, r); l != step[0] {
				t.Errorf("got %q, want %q", l, step[0])
			}
			if r.Buffered() > 0 {
				t.Errorf("%q came before the reply to %q", mustPeek(r), step[0])
			}
			w.Write([]byte(step[1] + "\r\n"))
		}
		readData(t, r)
		w.Write([]byte("250 ok\r\n"))
	})
	d := relayTo(t, m.port)
	rs := d.Send(context.Background(), envelope("a@example.test", "b@example.test"))
	if rs[0].Status != StatusTemporary || rs[1].Status != StatusPermanent {
		t.Fatalf("got %+v", rs)
	}
	wantStatus(t, only(t, d.Send(context.Background(), envelope("c@example.test"))), StatusDelivered, Bounce{})
}

func mustPeek(r *bufio.Reader) string {
	b, _ := r.Peek(r.Buffered())
	return string(b)
}

// RFC 2920 §3.1: a server may take a pipelined DATA after refusing every
// recipient; the client then ends the empty message at once and keeps the
// session.
func TestPipelinedDataAfterEveryRecipientRefused(t *testing.T) {
	m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
		hello(t, r, w, "PIPELINING")
		for range 3 {
			line(t, r)
		}
		w.Write([]byte("250 ok\r\n550 5.1.1 unknown\r\n354 go ahead\r\n"))
		if l := line(t, r); l != "." {
			t.Errorf("got %q, want a lone dot", l)
		}
		w.Write([]byte("554 5.5.1 no valid recipients\r\n"))
		// The same session carries the next message, after RSET.
		if l := line(t, r); l != "RSET" {
			t.Errorf("got %q, want RSET", l)
		}
		w.Write([]byte("250 ok\r\n"))
		for range 3 {
			line(t, r)
		}
		w.Write([]byte("250 ok\r\n250 ok\r\n354 go ahead\r\n"))
		readData(t, r)
		w.Write([]byte("250 2.0.0 ok\r\n"))
	})
	d := relayTo(t, m.port)
	wantStatus(t, only(t, d.Send(context.Background(), envelope("x@example.test"))), StatusPermanent, Bounce{Type: BounceHard, Category: CategoryUnknownUser})
	wantStatus(t, only(t, d.Send(context.Background(), envelope("y@example.test"))), StatusDelivered, Bounce{})
}

func TestDotStuff(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ".\r\n"},
		{"a\r\nb\r\n", "a\r\nb\r\n.\r\n"},
		{".x\r\n..y\r\n.\r\n", "..x\r\n...y\r\n..\r\n.\r\n"},
		{"bare\nlf\n", "bare\r\nlf\r\n.\r\n"},
		{"no end", "no end\r\n.\r\n"},
		{"\n.\n", "\r\n..\r\n.\r\n"},
	} {
		if got := string(dotStuff(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("dotStuff(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
