package mta

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
)

// TestSevenBitToAnOldHop: a message with an 8-bit body goes as it is, with
// BODY=8BITMIME, to a hop that offers 8BITMIME, and as Envelope.SevenBit's
// form to one that does not (RFC 6152 §3).
func TestSevenBitToAnOldHop(t *testing.T) {
	eight := []byte("Subject: x\r\n\r\nnaïve\r\n")
	seven := []byte("Subject: x\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nna=C3=AFve\r\n")
	for _, offer := range []bool{true, false} {
		var mail string
		var got []byte
		m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
			exts := []string{"PIPELINING"}
			if offer {
				exts = append(exts, "8BITMIME")
			}
			hello(t, r, w, exts...)
			mail = line(t, r)
			line(t, r) // RCPT
			line(t, r) // DATA
			w.Write([]byte("250 ok\r\n250 ok\r\n354 go\r\n"))
			got = readData(t, r)
			w.Write([]byte("250 2.0.0 queued\r\n"))
			line(t, r)
			w.Write([]byte("221 bye\r\n"))
		})
		d := relayTo(t, m.port)
		calls := 0
		env := Envelope{From: "b@mailbolt.test", To: []string{"a@example.test"}, Data: eight,
			SevenBit: func() ([]byte, error) { calls++; return seven, nil }}
		wantStatus(t, only(t, d.Send(context.Background(), env)), StatusDelivered, Bounce{})
		d.Close()
		want, wantCalls := eight, 0
		if !offer {
			want, wantCalls = seven, 1
		}
		if string(got) != string(want) || calls != wantCalls || strings.Contains(mail, "BODY=8BITMIME") != offer {
			t.Errorf("8BITMIME offered %v: MAIL %q, data %q, SevenBit called %d times", offer, mail, got, calls)
		}
	}
}

// TestConversionFailureBounces: a message that cannot be made 7-bit
// bounces with 5.6.3 at a hop without 8BITMIME; a UTF-8 header bounces
// with 5.6.7 at a hop without SMTPUTF8 (RFC 6531 §3.2).
func TestConversionFailureBounces(t *testing.T) {
	for _, c := range []struct {
		env  Envelope
		want string
	}{
		{Envelope{SevenBit: func() ([]byte, error) { return nil, errors.New("8-bit part header") }}, "5.6.3"},
		{Envelope{UTF8: true}, "5.6.7"},
	} {
		m := startRawMX(t, func(r *bufio.Reader, w net.Conn) {
			hello(t, r, w, "PIPELINING")
			line(t, r) // QUIT or the next command: nothing of a transaction
			w.Write([]byte("221 bye\r\n"))
		})
		d := relayTo(t, m.port)
		c.env.From, c.env.To, c.env.Data = "b@mailbolt.test", []string{"a@example.test"}, []byte("Subject: Grüße\r\n\r\nx\r\n")
		r := only(t, d.Send(context.Background(), c.env))
		if r.Status != StatusPermanent || r.Enhanced != c.want {
			t.Errorf("want a %s bounce: %+v", c.want, r)
		}
		d.Close()
	}
}
