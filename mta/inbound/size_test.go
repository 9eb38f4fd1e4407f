package inbound

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"net"
	"net/smtp"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

// conversation is a raw SMTP client on loopback: each step sends a line
// and reads the reply.
type conversation struct {
	t *testing.T
	c net.Conn
	r *textproto.Reader
}

func dial(t *testing.T, addr string) *conversation {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cv := &conversation{t: t, c: c, r: textproto.NewReader(bufio.NewReader(c))}
	cv.expect("", 220)
	return cv
}

// expect sends line (none when empty) and reads the reply, which must
// have code; it returns the reply's text.
func (cv *conversation) expect(line string, code int) string {
	cv.t.Helper()
	if line != "" {
		if _, err := cv.c.Write([]byte(line + "\r\n")); err != nil {
			cv.t.Fatalf("%s: %v", line, err)
		}
	}
	got, msg, err := cv.r.ReadResponse(code)
	if err != nil {
		cv.t.Fatalf("%s: %d %s (%v), want %d", line, got, msg, err, code)
	}
	return msg
}

// bodyOf is a message of exactly n bytes as the server counts them (the
// final dot not included), in lines of 100 bytes and one shorter line; n
// modulo 100 must not be 1.
func bodyOf(n int) []byte {
	b := bytes.Repeat([]byte(strings.Repeat("x", 98)+"\r\n"), n/100)
	if rest := n % 100; rest > 0 {
		b = append(b, strings.Repeat("y", rest-2)+"\r\n"...)
	}
	return b
}

// The listener advertises its limit as SIZE with the value (RFC 1870), so
// that a sender can refuse early; refuses MAIL FROM whose SIZE= is over it
// with 552 5.3.4; takes a message of the limit in BDAT chunks, and one byte
// less with DATA (go-smtp's DATA reader refuses a message as long as its
// limit: docs/inbound.md says so); answers 552 5.3.4 after the whole of a
// message somewhat over it and stays usable; and closes the connection of
// one that goes on past about four times the limit, without reading it to
// the end.
func TestSizeIsAdvertisedAndEnforced(t *testing.T) {
	const limit = 4096
	rec := &recorder{}
	addr := listen(t, rec, Options{Domain: "mta.example.net", MaxMessageSize: limit})
	cv := dial(t, addr)
	if ehlo := cv.expect("EHLO sender.example", 250); !strings.Contains(ehlo, "\nSIZE 4096\n") {
		t.Fatalf("EHLO answer does not advertise SIZE 4096:\n%s", ehlo)
	}
	if msg := cv.expect("MAIL FROM:<> SIZE=4097", 552); !strings.HasPrefix(msg, "5.3.4 ") {
		t.Errorf("SIZE over the limit: 552 %s", msg)
	}
	send := func(body []byte, code int) string {
		t.Helper()
		cv.expect("MAIL FROM:<> SIZE=4096", 250)
		cv.expect("RCPT TO:<bounces@mta.example.net>", 250)
		cv.expect("DATA", 354)
		if _, err := cv.c.Write(append(body, ".\r\n"...)); err != nil {
			t.Fatal(err)
		}
		return cv.expect("", code)
	}
	send(bodyOf(limit-1), 250)
	send(bodyOf(limit), 552)
	if msg := send(bodyOf(limit+1000), 552); !strings.HasPrefix(msg, "5.3.4 the message is larger") {
		t.Errorf("DATA over the limit: 552 %s", msg)
	}
	send(bodyOf(limit-1), 250) // the same connection, a later transaction: no cut-off left over
	cv.expect("MAIL FROM:<> SIZE=4096", 250)
	cv.expect("RCPT TO:<bounces@mta.example.net>", 250)
	cv.expect("BDAT 4096 LAST\r\n"+string(bodyOf(limit)[:limit-2]), 250) // expect adds the last CRLF
	rec.mu.Lock()
	if len(rec.mails) != 3 || len(rec.mails[0]) != limit-1 || len(rec.mails[1]) != limit-1 || len(rec.mails[2]) != limit {
		t.Errorf("received %d messages", len(rec.mails))
	}
	rec.mu.Unlock()

	cv.expect("MAIL FROM:<>", 250)
	cv.expect("RCPT TO:<bounces@mta.example.net>", 250)
	cv.expect("DATA", 354)
	// A message far past four times the limit: the server stops reading
	// and closes, so writing fails or the reply never comes.
	_, werr := cv.c.Write(append(bodyOf(64*limit), ".\r\n"...))
	if code, msg, err := cv.r.ReadResponse(552); werr == nil && err == nil {
		t.Errorf("a message of 64 times the limit was read to its end: %d %s", code, msg)
	}

	// With no MaxMessageSize, the limit and SIZE are 10 MiB.
	cv = dial(t, listen(t, rec, Options{Domain: "mta.example.net"}))
	if ehlo := cv.expect("EHLO sender.example", 250); !strings.Contains(ehlo, "\nSIZE 10485760\n") {
		t.Errorf("EHLO answer without a configured limit:\n%s", ehlo)
	}
}

// Over TLS, the connection of a message far past the limit is closed as
// well: the bytes counted are those under the TLS layer.
func TestOversizedMessageCutOffOverTLS(t *testing.T) {
	const limit = 4096
	cert, pool := selfSigned(t)
	addr := listen(t, &recorder{}, Options{Domain: "mta.example.net", MaxMessageSize: limit,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.StartTLS(&tls.Config{ServerName: "mta.example.net", RootCAs: pool}); err != nil {
		t.Fatal(err)
	}
	if ok, size := c.Extension("SIZE"); !ok || size != "4096" {
		t.Errorf("SIZE over TLS: %v %q", ok, size)
	}
	if err := c.Mail(""); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("bounces@mta.example.net"); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	// The server stops reading and closes: writing fails or no reply comes.
	_, werr := w.Write(bodyOf(64 * limit))
	if cerr := w.Close(); werr == nil && (cerr == nil || strings.HasPrefix(cerr.Error(), "552")) {
		t.Errorf("a message of 64 times the limit was read to its end over TLS: %v", cerr)
	}
}
