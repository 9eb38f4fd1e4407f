package queue

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"mailbolt/mta"
)

// Attempt is one recipient's delivery attempt as recorded: what the
// delivery log line says and the attempt metric counts. Outcome is
// delivered, deferred or bounced; BounceType is hard, soft or block when
// bounced, empty otherwise.
type Attempt struct {
	MessageID, AccountID string
	Recipient            string
	Number               int // the recipient's attempts so far, this one included
	MX, SourceIP         string
	TLSVersion           string // empty without TLS
	TLSVerified          bool   // the certificate was verified (PKIX or DANE)
	TLSPolicy            string // none, mta-sts or dane; empty through a relay or before a session
	Code                 int
	Enhanced, Text       string
	Duration             time.Duration
	Outcome, BounceType  string
}

// Attempt outcomes.
const (
	OutcomeDelivered = "delivered"
	OutcomeDeferred  = "deferred"
	OutcomeBounced   = "bounced"
)

// attempted is what record found out for one recipient, to report once
// the transaction holding it has committed.
func attempted(j attemptJob, res mta.RecipientResult, number int, outcome, bounceType string) Attempt {
	return Attempt{MessageID: j.msgID, AccountID: j.accountID, Recipient: res.Recipient, Number: number,
		MX: res.Host, SourceIP: j.src, TLSVersion: res.TLSVersion,
		TLSVerified: res.TLSVerified, TLSPolicy: res.TLSPolicy, Code: res.Code, Enhanced: res.Enhanced,
		Text: res.Text, Duration: res.Duration, Outcome: outcome, BounceType: bounceType}
}

type attemptJob struct{ msgID, accountID, src string }

// report logs each committed attempt, one line each (docs/operations.md,
// "Logs"), and hands it to Options.Attempted. The recipient's address is
// logged only with Options.LogRecipients; its domain always.
func (q *Queue) report(attempts []Attempt) {
	for _, a := range attempts {
		if q.opts.Attempted != nil {
			q.opts.Attempted(a)
		}
		level := slog.LevelInfo
		if a.Outcome != OutcomeDelivered {
			level = slog.LevelWarn
		}
		if !q.log.Enabled(context.Background(), level) {
			continue
		}
		domain := a.Recipient
		if i := strings.LastIndexByte(domain, '@'); i >= 0 {
			domain = domain[i+1:]
		}
		attrs := []slog.Attr{slog.String("message_id", a.MessageID), slog.String("account", a.AccountID),
			slog.String("rcpt_domain", domain)}
		if q.opts.LogRecipients {
			attrs = append(attrs, slog.String("rcpt", a.Recipient))
		}
		attrs = append(attrs, slog.String("mx", a.MX), slog.String("source_ip", a.SourceIP), slog.String("tls", a.TLSVersion),
			slog.Bool("tls_verified", a.TLSVerified), slog.String("tls_policy", a.TLSPolicy),
			slog.Int("code", a.Code), slog.String("enhanced", a.Enhanced), slog.String("reply", a.Text),
			slog.Float64("duration_ms", float64(a.Duration.Microseconds())/1000), slog.Int("attempt", a.Number),
			slog.String("outcome", a.Outcome))
		if a.BounceType != "" {
			attrs = append(attrs, slog.String("bounce_type", a.BounceType))
		}
		q.log.LogAttrs(context.Background(), level, "delivery attempt", attrs...)
	}
}
