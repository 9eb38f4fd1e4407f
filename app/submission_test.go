package app

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"mailbolt/mta/submission"
	"mailbolt/storage"
)

// TestReadSubmission: the X-Mailbolt-* fields become the API's labels and
// are dropped with Bcc; recipients are marked by the header; a missing
// Message-ID or Date is added at prepare, a bad Message-ID replaced.
func TestReadSubmission(t *testing.T) {
	data := "From: App <app@example.com>\nTo: Ann <ann@example.net>, bob@example.net\nCc: cat@example.net\n" +
		"Bcc: dan@example.net\nReturn-Path: <x@y>\nList-Unsubscribe: <mailto:u@example.com>\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\nMessage-ID: not valid\n" +
		"X-Mailbolt-Tags: a, b ,,c\nX-Mailbolt-Campaign: spring\nX-Mailbolt-Stream: Broadcast\n" +
		"X-Mailbolt-Metadata: {\"k\": \"v\"}\nX-Mailbolt-Ip-Pool: pool1\nX-Mailbolt-Other: dropped too\n\nbody\n"
	in, err := readSubmission(SMTPSubmission{From: "x@y", To: []string{"ANN@example.net", "cat@example.net", "dan@example.net", "eve@example.net"},
		Data: []byte(data)})
	if err != nil {
		t.Fatal(err)
	}
	if in.From != "App <app@example.com>" || strings.Join(in.Tags, "|") != "a|b|c" || in.CampaignID != "spring" ||
		in.Stream != "broadcast" || string(in.Metadata) != `{"k": "v"}` || in.IPPool != "pool1" {
		t.Errorf("labels: %+v", in)
	}
	if strings.Join(in.To, ",") != "ANN@example.net" || strings.Join(in.Cc, ",") != "cat@example.net" ||
		strings.Join(in.Bcc, ",") != "dan@example.net,eve@example.net" {
		t.Errorf("to %v cc %v bcc %v", in.To, in.Cc, in.Bcc)
	}
	if in.raw.subject != "Grüße" || in.raw.messageID != "" || in.raw.hasDate || !in.raw.unsubscribe {
		t.Errorf("raw: %+v", in.raw)
	}
	for _, f := range in.raw.fields {
		if strings.HasPrefix(strings.ToLower(f.Name), "x-mailbolt") || f.Is("Bcc") || f.Is("Message-ID") || f.Is("Return-Path") {
			t.Errorf("field %s kept", f.Name)
		}
	}
	for _, bad := range []string{"Subject: no from\n\nx\n", "From: a@b.c\nFrom: d@e.f\n\nx\n", "not a header\n\nx\n"} {
		if _, err := readSubmission(SMTPSubmission{To: []string{"a@b.c"}, Data: []byte(bad)}); !HasCode(err, CodeValidation) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestReadSubmissionIDNRecipients: the envelope's recipients are marked
// to or cc by the header's To and Cc when they name the same address in
// its normal form, whichever spelling of an IDN domain each gives; and a
// resubmission naming them in the other spelling has the same fingerprint.
func TestReadSubmissionIDNRecipients(t *testing.T) {
	data := "From: app@example.com\nTo: Ann <ann@exämple.org>\nCc: BOB@XN--EXMPLE-CUA.ORG\n\nbody\n"
	in, err := readSubmission(SMTPSubmission{From: "x@y", To: []string{"ann@xn--exmple-cua.org", "bob@Exämple.org", "cat@exämple.org"},
		Data: []byte(data)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(in.To, ",") != "ann@xn--exmple-cua.org" || strings.Join(in.Cc, ",") != "bob@Exämple.org" ||
		strings.Join(in.Bcc, ",") != "cat@exämple.org" {
		t.Errorf("to %v cc %v bcc %v", in.To, in.Cc, in.Bcc)
	}
	sub := func(to ...string) SMTPSubmission { return SMTPSubmission{From: "x@y", To: to, Data: []byte(data)} }
	if a, b := submissionFingerprint(sub("ann@exämple.org", "bob@x.test")), submissionFingerprint(sub("ANN@xn--exmple-cua.org", "Bob@X.test")); string(a) != string(b) {
		t.Error("the same envelope in the other spelling has another fingerprint")
	}
	if a, b := submissionFingerprint(sub("ann@exämple.org")), submissionFingerprint(sub("ann@example.org")); string(a) == string(b) {
		t.Error("two addresses have one fingerprint")
	}
}

// TestSubmitMessage: a submission from a test key is accepted through the
// same path as the API (the sandbox, unverified domains allowed), keeps
// its bytes, and gets a Message-ID and Date; bad labels are refused as the
// API refuses them.
func TestSubmitMessage(t *testing.T) {
	a, _ := newTestApp(t)
	b, err := a.BootstrapIfEmpty()
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.smtpPrincipal(b.TestKey)
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.SubmitMessage(p, SMTPSubmission{To: []string{"ann@example.net"},
		Data: []byte("From: me@unverified.test\r\nTo: ann@example.net\r\nSubject: hi\r\nX-Mailbolt-Tags: t1\r\n\r\nhello\r\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Test || m.Subject != "hi" || len(m.Tags) != 1 || m.Recipients[0].Kind != "to" {
		t.Errorf("message %+v", m)
	}
	var raw []byte
	a.db.View(func(tx *storage.Tx) error { raw = tx.MessageRaw(m.AccountID, m.ID); return nil })
	if !strings.HasPrefix(string(raw), "From: me@unverified.test\r\nTo: ann@example.net\r\nSubject: hi\r\nMessage-ID: <"+m.ID+"@unverified.test>\r\nDate: ") ||
		!strings.HasSuffix(string(raw), "\r\n\r\nhello\r\n") || strings.Contains(string(raw), "X-Mailbolt") {
		t.Errorf("stored:\n%s", raw)
	}
	// REQUIRETLS on MAIL FROM is the API's require_tls.
	if m.RequireTLS {
		t.Error("require_tls without REQUIRETLS")
	}
	m, err = a.SubmitMessage(p, SMTPSubmission{To: []string{"ann@example.net"}, RequireTLS: true,
		Data: []byte("From: me@unverified.test\r\nSubject: strict\r\n\r\nhello\r\n")})
	if err != nil || !m.RequireTLS {
		t.Fatalf("REQUIRETLS submission: %+v %v", m.RequireTLS, err)
	}
	_, err = a.SubmitMessage(p, SMTPSubmission{To: []string{"ann@example.net"},
		Data: []byte("From: me@unverified.test\r\nX-Mailbolt-Metadata: [1]\r\n\r\nhello\r\n")})
	var r *submission.Reply
	if !errors.As(smtpReply(err), &r) || r.Code != 554 || r.Enhanced != "5.6.0" || !strings.Contains(r.Text, "metadata") {
		t.Errorf("bad metadata: %v", smtpReply(err))
	}
	_, err = a.SubmitMessage(p, SMTPSubmission{To: []string{"ann@example.net"},
		Data: []byte("From: me@unverified.test\r\nX-Mailbolt-Metadata: {\"a\": 1e400}\r\n\r\nhello\r\n")})
	if !errors.As(smtpReply(err), &r) || r.Code != 554 || !strings.Contains(r.Text, "metadata: number out of range") {
		t.Errorf("metadata with 1e400: %v", smtpReply(err))
	}
}

// TestSMTPReplies: each error code is answered with its SMTP reply.
func TestSMTPReplies(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{NewError(CodeDomainNotVerified, "the sending domain x is not verified"), "550 5.7.1 the sending domain x is not verified"},
		{Validation("from", "is required"), "554 5.6.0 from: is required"},
		{NewError(CodeValidation, "too big").With("reason", ReasonMessageTooLarge), "552 5.3.4 too big"},
		{NewError(CodeRateLimitExceeded, "slow down"), "451 4.7.0 slow down"},
		{Internal(errors.New("disk")), "451 4.3.0 temporary failure, try again later"},
		{NewError(CodeNotFound, "x not found"), "554 5.6.0 x not found"},
	} {
		var r *submission.Reply
		errors.As(smtpReply(c.err), &r)
		if got := strings.Join([]string{strconv.Itoa(r.Code), r.Enhanced, r.Text}, " "); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
