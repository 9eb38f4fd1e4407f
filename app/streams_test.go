package app

import (
	"bytes"
	"net/mail"
	"testing"

	"mailbolt/mta/dkim"
	"mailbolt/storage"
)

// listUnsubscribe is the List-Unsubscribe and List-Unsubscribe-Post fields
// of the last message the sink received.
func (e *sendEnv) lastListUnsubscribe() (lu, post string) {
	e.t.Helper()
	got := e.sink.Messages()
	msg, err := mail.ReadMessage(bytes.NewReader(got[len(got)-1].Data))
	if err != nil {
		e.t.Fatal(err)
	}
	return msg.Header.Get("List-Unsubscribe"), msg.Header.Get("List-Unsubscribe-Post")
}

// TestStreamUnsubscribeHeaders: List-Unsubscribe is on by default for
// broadcast mail only; the unsubscribe field overrides either way.
func TestStreamUnsubscribeHeaders(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	yes, no := true, false
	for _, c := range []struct {
		stream string
		unsub  *bool
		want   bool
	}{
		{"", nil, false},
		{"transactional", nil, false},
		{"broadcast", nil, true},
		{"transactional", &yes, true},
		{"broadcast", &no, false},
	} {
		m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test"}, Subject: text("s"), Text: text("t"),
			Stream: c.stream, Unsubscribe: c.unsub})
		e.drain()
		lu, post := e.lastListUnsubscribe()
		if (lu != "") != c.want || (post != "") != c.want {
			t.Errorf("stream %q unsubscribe %v: List-Unsubscribe %q, -Post %q", c.stream, c.unsub, lu, post)
		}
		want := c.stream
		if want == "" {
			want = storage.StreamTransactional
		}
		if got := e.message(e.live, m.ID).Stream; got != want {
			t.Errorf("stream %q stored as %q", c.stream, got)
		}
	}
	if _, e := e.app.SendMessage(e.live, MessageInput{From: "a@acme.test", To: []string{"ann@dest.test"}, Subject: text("s"),
		Text: text("t"), Stream: "marketing"}); e == nil || !HasCode(e, CodeValidation) {
		t.Errorf("an unknown stream: %v", e)
	}
}

// TestBroadcastUnsubscribeLeavesTransactionalMailFlowing: a one-click
// unsubscribe from a newsletter stops the next newsletter, not the
// password reset; a manual suppression stops both.
func TestBroadcastUnsubscribeLeavesTransactionalMailFlowing(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	send := func(stream, to string) storage.Message {
		t.Helper()
		m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{to}, Subject: text(stream), Text: text("t"), Stream: stream})
		e.drain()
		return e.message(e.live, m.ID)
	}
	send("broadcast", "ann@dest.test")
	lu, _ := e.lastListUnsubscribe()
	tok := unsubRe.FindStringSubmatch(lu)
	if tok == nil {
		t.Fatalf("List-Unsubscribe %q", lu)
	}
	if _, err := e.app.Unsubscribe(tok[1], MethodOneClick); err != nil {
		t.Fatal(err)
	}
	if s, ok := e.suppressed("ann@dest.test"); !ok || s.Stream != storage.StreamBroadcast {
		t.Fatalf("the unsubscribe: %+v", s)
	}
	arrived := len(e.sink.Messages())
	if m := send("transactional", "ann@dest.test"); m.Status != StatusDelivered {
		t.Fatalf("a password reset after an unsubscribe: %s %+v", m.Status, m.Recipients)
	}
	if n := len(e.sink.Messages()); n != arrived+1 {
		t.Fatalf("%d messages arrived, want %d", n, arrived+1)
	}
	if m := send("broadcast", "ann@dest.test"); m.Status != StatusSuppressed {
		t.Fatalf("a newsletter after an unsubscribe: %s", m.Status)
	}

	// A manual entry (no stream) stops every stream.
	if _, _, e := e.app.AddSuppression(e.live, "bob@dest.test", "", ""); e != nil {
		t.Fatal(e)
	}
	for _, stream := range storage.Streams {
		if m := send(stream, "bob@dest.test"); m.Status != StatusSuppressed {
			t.Errorf("%s mail to a manually suppressed address: %s", stream, m.Status)
		}
	}
	if n := len(e.sink.Messages()); n != arrived+1 {
		t.Fatalf("%d messages arrived, want %d", n, arrived+1)
	}

	// Messages list by stream.
	for stream, want := range map[string]int{"broadcast": 3, "transactional": 2} {
		list, _, _, e := e.app.ListMessages(e.live, MessageQuery{Stream: stream}, storage.ListOptions{Limit: 50}, false)
		if e != nil || len(list) != want {
			t.Errorf("stream=%s: %d messages, %v; want %d", stream, len(list), e, want)
		}
	}
}
