package app

import (
	"fmt"
	"strings"
	"time"

	"mailbolt/mta"
	"mailbolt/storage"
)

// deliveredData is the message.delivered payload (spec §6).
type deliveredData struct {
	MessageID    string `json:"messageId"`
	To           string `json:"to"`
	DeliveredAt  string `json:"deliveredAt"`
	SMTPResponse string `json:"smtpResponse"`
}

// bouncedData is the message.bounced payload (spec §6).
type bouncedData struct {
	MessageID      string `json:"messageId"`
	To             string `json:"to"`
	BounceType     string `json:"bounceType"`
	BounceCategory string `json:"bounceCategory"`
	BounceCode     string `json:"bounceCode"`
	BounceMessage  string `json:"bounceMessage"`
	DiagnosticCode string `json:"diagnosticCode"`
}

// complainedData is the message.complained payload (spec §6).
type complainedData struct {
	MessageID    string `json:"messageId"`
	To           string `json:"to"`
	ComplainedAt string `json:"complainedAt"`
	FeedbackType string `json:"feedbackType"`
	FeedbackID   string `json:"feedbackId"`
}

// emitFunc records one event of the message being worked on.
type emitFunc func(typ, rcpt string, data any, stats ...storage.Stat) error

// bounceStat is the statistics counter of a bounce type.
func bounceStat(t mta.BounceType) storage.Stat {
	switch t {
	case mta.BounceHard:
		return storage.StatBouncedHard
	case mta.BounceBlock:
		return storage.StatBouncedBlock
	}
	return storage.StatBouncedSoft
}

// smtpLine is a reply as one line: "250 2.0.0 text".
func smtpLine(res mta.RecipientResult) string {
	parts := []string{}
	if res.Code != 0 {
		parts = append(parts, fmt.Sprint(res.Code))
	}
	if res.Enhanced != "" {
		parts = append(parts, res.Enhanced)
	}
	if res.Text != "" {
		parts = append(parts, res.Text)
	}
	return strings.Join(parts, " ")
}

// recordResults stores the outcome of one attempt, with its events and
// suppressions, in one transaction. aborted means the attempt was cut
// short by shutdown: temporary failures are then retried at once on the
// next start instead of after a backoff.
func (a *App) recordResults(j deliveryJob, results []mta.RecipientResult, aborted bool) error {
	now := a.Now()
	o := a.opts.Delivery
	var events int
	err := a.db.Update(func(tx *storage.Tx) error {
		events = 0
		m, err := tx.Message(j.msg.AccountID, j.msg.ID)
		if err != nil {
			return tx.DeleteLease(j.msg.ID) // removed meanwhile (retention)
		}
		emit := func(typ, rcpt string, data any, stats ...storage.Stat) error {
			events++
			return a.appendMessageEvent(tx, m, typ, rcpt, now, data, stats...)
		}
		for _, res := range results {
			r := findSending(&m, res.Recipient)
			if r == nil {
				continue
			}
			r.SMTPCode, r.EnhancedCode, r.SMTPResponse = res.Code, res.Enhanced, smtpLine(res)
			r.MX, r.SourceIP, r.TLS = res.Host, j.src.Addr, res.TLS
			switch res.Status {
			case mta.StatusDelivered:
				r.Status, r.DeliveredAt = StatusDelivered, &now
				if err := emit(EventDelivered, r.Email, deliveredData{MessageID: m.ID, To: r.Email,
					DeliveredAt: now.Format(time.RFC3339Nano), SMTPResponse: r.SMTPResponse}, storage.StatDelivered); err != nil {
					return err
				}
				if res.Bounce.Category == sandboxComplaint {
					if err := a.complain(tx, m, r.Email, now, emit); err != nil {
						return err
					}
				}
				continue
			case mta.StatusTemporary:
				expired := m.QueuedAt != nil && now.Sub(*m.QueuedAt) >= o.QueueLifetime
				if !expired {
					next := now.Add(Backoff(r.Attempts, o.RetryBase, o.RetryMax))
					if aborted {
						next = now
					}
					r.Status, r.NextAttemptAt = StatusDeferred, &next
					continue
				}
				res.Bounce = mta.Bounce{Type: mta.BounceSoft, Category: mta.CategoryExpired}
				r.SMTPResponse = fmt.Sprintf("gave up after %s in the queue; last attempt: %s", o.QueueLifetime, r.SMTPResponse)
			}
			if err := a.bounce(tx, m, r, res, "", now, emit); err != nil {
				return err
			}
		}
		m.Status = aggregateStatus(m)
		m.QueueAt = nextAttempt(m)
		if m.QueueAt == nil {
			m.CompletedAt = &now
		}
		if err := tx.UpdateMessage(m); err != nil {
			return err
		}
		return tx.DeleteLease(m.ID)
	})
	if err == nil && events > 0 {
		a.EventsCommitted()
	}
	return err
}

func findSending(m *storage.Message, email string) *storage.Recipient {
	email = strings.ToLower(email)
	for i := range m.Recipients {
		if m.Recipients[i].Email == email && m.Recipients[i].Status == StatusSending {
			return &m.Recipients[i]
		}
	}
	return nil
}

// bounce marks a recipient bounced, emits message.bounced and suppresses
// the address after a hard bounce (a block is about us, not the address).
func (a *App) bounce(tx *storage.Tx, m storage.Message, r *storage.Recipient, res mta.RecipientResult, diag string, now time.Time, emit emitFunc) error {
	b := res.Bounce
	if b.Type == "" {
		b = mta.Classify(res.Code, res.Enhanced, res.Text)
	}
	r.Status, r.BouncedAt = StatusBounced, &now
	r.BounceType, r.BounceCategory = string(b.Type), string(b.Category)
	code := res.Enhanced
	if code == "" && res.Code != 0 {
		code = fmt.Sprint(res.Code)
	}
	if diag == "" && res.Code != 0 {
		diag = "smtp; " + smtpLine(res)
	}
	if err := emit(EventBounced, r.Email, bouncedData{MessageID: m.ID, To: r.Email, BounceType: r.BounceType,
		BounceCategory: r.BounceCategory, BounceCode: code, BounceMessage: r.SMTPResponse, DiagnosticCode: diag},
		bounceStat(b.Type)); err != nil {
		return err
	}
	if b.Type == mta.BounceHard {
		return suppress(tx, m, r.Email, "hard_bounce", now)
	}
	return nil
}

// complain records a spam complaint: message.complained and a suppression.
func (a *App) complain(tx *storage.Tx, m storage.Message, rcpt string, now time.Time, emit emitFunc) error {
	if err := emit(EventComplained, rcpt, complainedData{MessageID: m.ID, To: rcpt,
		ComplainedAt: now.Format(time.RFC3339Nano), FeedbackType: "abuse", FeedbackID: ""}, storage.StatComplained); err != nil {
		return err
	}
	return suppress(tx, m, rcpt, "complaint", now)
}

func suppress(tx *storage.Tx, m storage.Message, rcpt, reason string, now time.Time) error {
	_, _, err := tx.PutSuppression(storage.Suppression{AccountID: m.AccountID, Recipient: rcpt, Reason: reason,
		SourceMessageID: m.ID, CreatedAt: now})
	return err
}

// sandboxComplaint marks a simulated delivery that the recipient then
// reports as spam.
const sandboxComplaint mta.BounceCategory = "sandbox-complaint"

// sandboxResults simulates an attempt for a test-mode message: no
// connection is made; the recipient's local part decides the outcome.
func sandboxResults(rcpts []string) []mta.RecipientResult {
	out := make([]mta.RecipientResult, len(rcpts))
	for i, rcpt := range rcpts {
		local := strings.ToLower(rcpt[:strings.LastIndexByte(rcpt, '@')])
		res := mta.RecipientResult{Recipient: rcpt, Host: "sandbox"}
		switch local {
		case "bounce":
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusPermanent, 550, "5.1.1", "sandbox: the mailbox does not exist"
		case "softbounce":
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusPermanent, 452, "4.2.2", "sandbox: the mailbox is full"
			res.Bounce = mta.Classify(452, "4.2.2", res.Text)
			res.Bounce.Type = mta.BounceSoft
		case "blocked":
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusPermanent, 554, "5.7.1", "sandbox: message blocked by policy"
		default:
			res.Status, res.Code, res.Enhanced, res.Text = mta.StatusDelivered, 250, "2.0.0", "sandbox: accepted"
			if local == "complaint" {
				res.Bounce.Category = sandboxComplaint
			}
		}
		if res.Bounce.Type == "" && res.Status == mta.StatusPermanent {
			res.Bounce = mta.Classify(res.Code, res.Enhanced, res.Text)
		}
		out[i] = res
	}
	return out
}
