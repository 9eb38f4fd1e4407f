package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"mailbolt/mta/submission"
	"mailbolt/storage"
)

// SMTP is the use cases' side of the submission listener
// (mta/submission): an SMTP login is a principal like an API key, and a
// submitted message is accepted by SubmitMessage. Errors are answered
// with the SMTP reply of their code (smtpReplies).
type SMTP struct{ a *App }

// SMTP returns the Backend the submission listeners run.
func (a *App) SMTP() SMTP { return SMTP{a} }

// Login checks an AUTH password: an API key holding messages:write.
func (s SMTP) Login(password string) (submission.Sender, error) {
	p, err := s.a.smtpPrincipal(password)
	if err != nil {
		return nil, err
	}
	return &smtpSender{a: s.a, secret: password, p: p}, nil
}

// smtpPrincipal authenticates a key for a session, as Authenticate does
// for a request: revocation and expiry count from the next transaction.
func (a *App) smtpPrincipal(secret string) (Principal, error) {
	p, err := a.Authenticate(secret)
	if err != nil {
		e := AsError(err)
		if e.Status() >= 500 {
			a.log.Error("smtp login", "err", e.Details["cause"])
			return p, &submission.Reply{Code: 454, Enhanced: "4.7.0", Text: "temporary authentication failure"}
		}
		return p, submission.BadCredentials("authentication failed: " + e.Message)
	}
	p.Kind = KindSMTP
	if err := a.authorize(p, ScopeMessagesWrite); err != nil {
		return p, &submission.Reply{Code: 535, Enhanced: "5.7.8", Text: AsError(err).Message}
	}
	return p, nil
}

// smtpSender is one logged-in session.
type smtpSender struct {
	a      *App
	secret string
	p      Principal
}

// Mail starts a transaction: the key is checked again (a key revoked
// since the login stops here), then the plan's rate limit, counted in
// messages per key per second: over it, 451 4.7.0 and the session goes
// on, so the client retries the transaction shortly.
func (s *smtpSender) Mail(from string) error {
	p, err := s.a.smtpPrincipal(s.secret)
	if err != nil {
		var r *submission.Reply
		if errors.As(err, &r) && r.Code == 535 {
			return &submission.Reply{Code: 530, Enhanced: "5.7.0", Text: r.Text}
		}
		return err
	}
	s.p = p
	limit := Limits(p.Account).RateLimit
	if !s.a.smtpRate.Take(p.KeyID, limit, time.Second, s.a.Now()).Allowed {
		return &submission.Reply{Code: 451, Enhanced: "4.7.0",
			Text: fmt.Sprintf("rate limit of %d messages per second for this key reached; try again in a second", limit)}
	}
	return nil
}

// Rcpt checks one recipient's syntax as the API checks to, cc and bcc.
func (s *smtpSender) Rcpt(to string) error {
	if _, _, e := parseAddress("to", to); e != nil {
		return &submission.Reply{Code: 553, Enhanced: "5.1.3", Text: AsError(e).Message}
	}
	return nil
}

// Submit accepts one message. When it carries a Message-ID, it is
// accepted at most once per key within IdempotencyTTL: the same envelope
// and bytes again are answered with the first message's id and not sent
// again; the same Message-ID with anything else is 550 5.7.0.
func (s *smtpSender) Submit(env submission.Envelope) (string, error) {
	sub := SMTPSubmission{From: env.From, To: env.To, Data: env.Data, RequireTLS: env.RequireTLS}
	in, err := readSubmission(sub)
	if err != nil {
		return "", smtpReply(err)
	}
	in.RequireTLS = sub.RequireTLS
	if in.raw.messageID == "" {
		m, err := s.a.SendMessage(s.p, in)
		if err != nil {
			return "", smtpReply(err)
		}
		return m.ID, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var runErr error
	resp, _, err := s.a.idempotent(ctx, s.p, s.secret, smtpIdemKey(in.raw.messageID), submissionFingerprint(sub),
		func(p Principal) Response {
			Answer(p, func(m storage.Message) Response {
				return Response{Status: http.StatusAccepted, Body: []byte(m.ID)}
			})
			m, err := s.a.SendMessage(p, in)
			if err != nil {
				runErr = err
				return Response{Status: AsError(err).Status()}
			}
			return Response{Status: http.StatusAccepted, Body: []byte(m.ID)}
		}, func(int) bool { return false })
	switch {
	case HasCode(err, CodeIdempotencyConflict):
		return "", &submission.Reply{Code: 550, Enhanced: "5.7.0", Text: "Message-ID " + in.raw.messageID +
			" was already submitted with this key within 24 hours with a different envelope or content; give a new message a new Message-ID"}
	case err != nil:
		return "", smtpReply(err)
	case runErr != nil:
		return "", smtpReply(runErr)
	}
	return string(resp.Body), nil
}

// smtpIdemKey is where a Message-ID's record is kept among the key's
// idempotency records: the control character keeps it apart from every
// Idempotency-Key header (printable ASCII).
func smtpIdemKey(messageID string) string { return "\x1fsmtp:" + messageID }

// smtpReplies is the SMTP answer to each error code a submission can
// meet; the text is the error's message. Codes not listed answer by
// their HTTP class: 4xx 554 5.6.0 (retrying unchanged cannot succeed),
// 5xx 451 4.3.0 (try again later).
var smtpReplies = map[string]submission.Reply{
	CodeDomainNotVerified:   {Code: 550, Enhanced: "5.7.1"},
	CodeValidation:          {Code: 554, Enhanced: "5.6.0"},
	CodeInvalidAPIKey:       {Code: 530, Enhanced: "5.7.0"},
	CodeTokenExpired:        {Code: 530, Enhanced: "5.7.0"},
	CodeUnauthorized:        {Code: 530, Enhanced: "5.7.0"},
	CodeForbidden:           {Code: 550, Enhanced: "5.7.1"},
	CodeInsufficientScopes:  {Code: 550, Enhanced: "5.7.1"},
	CodeIdempotencyConflict: {Code: 550, Enhanced: "5.7.0"},
	CodeRateLimitExceeded:   {Code: 451, Enhanced: "4.7.0"},
	CodeQuotaExceeded:       {Code: 452, Enhanced: "4.3.1"},
	CodeServiceUnavailable:  {Code: 451, Enhanced: "4.3.0"},
	CodeInternal:            {Code: 451, Enhanced: "4.3.0"},
}

// smtpReply is the SMTP answer to a use case's error.
func smtpReply(err error) error {
	e := AsError(err)
	if e.Code == CodeValidation && e.Details["reason"] == ReasonMessageTooLarge {
		return &submission.Reply{Code: 552, Enhanced: "5.3.4", Text: e.Message}
	}
	r, ok := smtpReplies[e.Code]
	switch {
	case ok:
	case e.Status() >= 500:
		r = submission.Reply{Code: 451, Enhanced: "4.3.0"}
	default:
		r = submission.Reply{Code: 554, Enhanced: "5.6.0"}
	}
	r.Text = e.Message
	if r.Code == 451 && e.Code != CodeRateLimitExceeded {
		r.Text = "temporary failure, try again later"
	}
	return &r
}
