package app

import (
	"net/mail"
	"slices"
	"strings"
	"testing"

	"mailbolt/mta/dkim"
	"mailbolt/mta/inbound"
	"mailbolt/storage"
)

// The two spellings of one internationalised domain, as a user may type
// either.
const (
	idnUnicode = "exämple.org"
	idnALabel  = "xn--exmple-cua.org"
)

// TestSuppressionStopsEitherIDNSpelling: a suppression added under one
// spelling of an internationalised domain stops mail to the other (the
// audit's finding: it was sent), as a suppression in another letter case
// does; it is stored, shown, found, imported and deleted as one entry, in
// the A-label form sending domains are shown in.
func TestSuppressionStopsEitherIDNSpelling(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	for _, c := range []struct{ suppress, send string }{
		{"sup@" + idnUnicode, "sup@" + idnALabel},
		{"rev@" + idnALabel, "REV@" + strings.ToUpper(idnUnicode)},
		{"case@" + idnUnicode, "Case@" + idnUnicode},
	} {
		s, created, ae := e.app.AddSuppression(e.test, c.suppress, "", "")
		want := strings.ToLower(strings.SplitN(c.suppress, "@", 2)[0]) + "@" + idnALabel
		if ae != nil || !created || s.Recipient != want {
			t.Fatalf("suppress %s: %+v %v %v", c.suppress, s, created, ae)
		}
		m := e.send(e.test, MessageInput{From: "a@acme.test", To: []string{c.send}, Subject: text("s"), Text: text("t")})
		if m.Status != StatusSuppressed || m.Recipients[0].Status != StatusSuppressed || m.Recipients[0].Email != want {
			t.Errorf("suppressed %s, sent to %s: %s %+v", c.suppress, c.send, m.Status, m.Recipients)
		}
		if _, created, _ := e.app.AddSuppression(e.test, c.send, "", ""); created {
			t.Errorf("%s added again beside %s", c.send, c.suppress)
		}
		if found, ae := e.app.FindSuppressions(e.test, c.send); ae != nil || len(found) != 1 || found[0].Recipient != want {
			t.Errorf("find %s: %+v %v", c.send, found, ae)
		}
	}
	res, ae := e.app.ImportSuppressions(e.test, []SuppressionInput{{Recipient: "imp@" + idnUnicode}, {Recipient: "imp@" + idnALabel},
		{Recipient: "sup@" + idnALabel}})
	if ae != nil || res.Added != 1 || res.AlreadyPresent != 2 {
		t.Errorf("import of both spellings: %+v %v", res, ae)
	}
	if ae := e.app.DeleteSuppression(e.test, "sup@"+idnALabel, ""); ae != nil {
		t.Errorf("delete by the other spelling: %v", ae)
	}
	m := e.send(e.test, MessageInput{From: "a@acme.test", To: []string{"sup@" + idnUnicode}, Subject: text("s"), Text: text("t")})
	if m.Status == StatusSuppressed {
		t.Errorf("still suppressed after the delete: %+v", m.Recipients)
	}
	if _, _, ae := e.app.AddSuppression(e.test, "bad@a\u00a0b.org", "", ""); ae == nil || AsError(ae).Code != CodeValidation {
		t.Errorf("a domain that is no IDN: %v", ae)
	}
}

// TestRecipientAddressesAreNormalised: a message's addresses show the
// domain in A-labels, as it goes into the header and the envelope; its two
// spellings are one recipient; a non-ASCII domain that is not an IDN is
// refused naming the field; a filter by either spelling finds it.
func TestRecipientAddressesAreNormalised(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	m := e.send(e.test, MessageInput{From: "Shop <a@acme.test>", To: []string{"Ann <Ann@Exämple.ORG>"},
		Cc: []string{"ann@" + idnALabel, "bob@" + idnUnicode}, Subject: text("s"), Text: text("t")})
	if !slices.Equal(m.To, []string{"Ann <Ann@" + idnALabel + ">"}) || !slices.Equal(m.Cc, []string{"ann@" + idnALabel, "bob@" + idnALabel}) {
		t.Errorf("to %q, cc %q", m.To, m.Cc)
	}
	var got []string
	for _, r := range m.Recipients {
		got = append(got, r.Kind+":"+r.Email)
	}
	if want := []string{"to:ann@" + idnALabel, "cc:bob@" + idnALabel}; !slices.Equal(got, want) {
		t.Errorf("recipients %q, want %q", got, want)
	}
	_, ae := e.app.SendMessage(e.test, MessageInput{From: "a@acme.test", To: []string{"ok@acme.test", "x@a\u00a0b.org"}, Subject: text("s"), Text: text("t")})
	if ae == nil || AsError(ae).Details["field"] != "to[1]" {
		t.Errorf("a domain that is no IDN: %v", ae)
	}
	for _, rcpt := range []string{"ANN@" + idnUnicode, "ann@" + idnALabel} {
		list, _, _, ae := e.app.ListMessages(e.test, MessageQuery{Recipient: rcpt}, storage.ListOptions{Limit: 10}, false)
		if ae != nil || len(list) != 1 || list[0].ID != m.ID {
			t.Errorf("messages to %s: %d %v", rcpt, len(list), ae)
		}
		if _, ae := e.app.MessageRaw(e.test, m.ID, rcpt); ae != nil {
			t.Errorf("raw copy of %s: %v", rcpt, ae)
		}
	}
}

// TestIDNRecipientIsDeliveredByALabel: mail to an internationalised domain
// is addressed RCPT TO its A-label form, so a next hop without SMTPUTF8
// (the scripted MX offers none) takes it (the Unicode form needs SMTPUTF8
// and bounced 5.6.7 there), and its header shows the same; a hard bounce
// suppresses the recipient under both spellings.
func TestIDNRecipientIsDeliveredByALabel(t *testing.T) {
	e := newSendEnv(t, dkim.AlgEd25519, nil)
	e.zone.MX(idnALabel, 10, "mx.dest.test")
	m := e.send(e.live, MessageInput{From: "a@acme.test", To: []string{"Ann <Ann@" + idnUnicode + ">"}, Cc: []string{"unknown@" + idnUnicode},
		Subject: text("s"), Text: text("t"), Unsubscribe: no()})
	e.drain()
	st := e.message(e.live, m.ID)
	if st.Recipients[0].Status != StatusDelivered || st.Recipients[1].Status != StatusBounced || st.Recipients[1].BounceType != "hard" {
		t.Fatalf("recipients %+v", st.Recipients)
	}
	got := e.sink.Messages()
	if len(got) != 1 || !slices.Equal(got[0].To, []string{"ann@" + idnALabel}) {
		t.Fatalf("arrived: %+v", got)
	}
	msg, err := mail.ReadMessage(strings.NewReader(string(got[0].Data)))
	if err != nil {
		t.Fatal(err)
	}
	if to, err := mail.ParseAddress(msg.Header.Get("To")); err != nil || to.Address != "Ann@"+idnALabel || to.Name != "Ann" {
		t.Errorf("header To %q: %+v %v", msg.Header.Get("To"), to, err)
	}
	e.app.db.View(func(tx *storage.Tx) error {
		for _, rcpt := range []string{"unknown@" + idnUnicode, "unknown@" + idnALabel} {
			if !tx.Suppressed(e.acct, rcpt, storage.StreamTransactional) {
				t.Errorf("%s not suppressed after its hard bounce", rcpt)
			}
		}
		return nil
	})
}

// TestReportsNameEitherIDNSpelling: a DSN or report that names the
// recipient in the other spelling of its domain (or another case) is
// about that recipient.
func TestReportsNameEitherIDNSpelling(t *testing.T) {
	m := &storage.Message{Recipients: []storage.Recipient{{Email: "bob@example.com"}, {Email: "ann@" + idnALabel}}}
	for _, named := range []string{"Ann@" + idnUnicode, " ann@" + idnALabel + " ", "ANN@" + strings.ToUpper(idnALabel)} {
		if r := findRecipient(m, named); r == nil || r.Email != "ann@"+idnALabel {
			t.Errorf("findRecipient(%q) = %+v", named, r)
		}
		dsn := &inbound.DSN{Recipients: []inbound.DSNRecipient{{Action: "failed", FinalRecipient: "bob@example.com"},
			{Action: "failed", FinalRecipient: named}}}
		if d := failedFor(dsn, "ann@"+idnALabel); d == nil || d.FinalRecipient != named {
			t.Errorf("failedFor naming %q: %+v", named, d)
		}
	}
}
