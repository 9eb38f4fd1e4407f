package queue

import (
	"fmt"
	"strings"
	"time"

	"mailbolt/mta"
	"mailbolt/storage"
)

// Backoff is the wait before the next attempt after a temporary failure,
// given how many attempts were made: base, doubling, at most max.
func Backoff(attempts int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

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

// record stores the outcome of one attempt, with its events and
// suppressions, in one transaction, and gives up the message's lease.
// aborted means the attempt was cut short by shutdown: temporary failures
// are then retried at once on the next start instead of after a backoff.
// sigs holds the DKIM-Signature field each recipient's copy was sent with
// (live attempts; none for a copy that was not signed): it replaces the
// one kept from an earlier attempt.
func (q *Queue) record(j job, results []mta.RecipientResult, sigs map[string]string, aborted bool) error {
	now := q.now()
	o := q.opts
	aj := attemptJob{msgID: j.msg.ID, accountID: j.msg.AccountID, src: j.src.Addr}
	var attempts []Attempt
	stale := false
	err := q.db.Update(func(tx *storage.Tx) error {
		attempts, stale = attempts[:0], false // the transaction may run again
		m, err := tx.Message(j.msg.AccountID, j.msg.ID)
		if err != nil {
			return tx.DeleteLease(j.msg.ID) // removed meanwhile (retention)
		}
		if held, ok := tx.LeaseHolder(m.ID); !ok || held != j.lease {
			// The lease ended before this attempt finished, and another
			// claim (on this node or another) took the message: its state
			// is that claim's now. Recording this outcome would overwrite
			// it; the other attempt records its own.
			stale = true
			return nil
		}
		for _, res := range results {
			r := findSending(&m, res.Recipient)
			if r == nil {
				continue
			}
			number := r.Attempts
			r.SMTPCode, r.EnhancedCode, r.SMTPResponse = res.Code, res.Enhanced, smtpLine(res)
			r.MX, r.SourceIP, r.TLS = res.Host, j.src.Addr, res.TLS
			r.TLSVersion, r.TLSVerified, r.TLSPolicy = res.TLSVersion, res.TLSVerified, res.TLSPolicy
			if !j.msg.Test {
				r.DKIMSignature = sigs[res.Recipient]
			}
			switch res.Status {
			case mta.StatusDelivered:
				if err := setStatus(r, StatusDelivered); err != nil {
					return err
				}
				r.DeliveredAt = &now
				if err := q.event(tx, m, EventDelivered, r.Email, now, deliveredData{MessageID: m.ID, To: r.Email,
					DeliveredAt: now.Format(time.RFC3339Nano), SMTPResponse: r.SMTPResponse}, storage.StatDelivered); err != nil {
					return err
				}
				attempts = append(attempts, attempted(aj, res, number, OutcomeDelivered, ""))
				if res.Bounce.Category == sandboxComplaint {
					if err := q.Complain(tx, m, r, "abuse", "", now); err != nil {
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
					if err := setStatus(r, StatusDeferred); err != nil {
						return err
					}
					r.NextAttemptAt = &next
					attempts = append(attempts, attempted(aj, res, number, OutcomeDeferred, ""))
					continue
				}
				res.Bounce = mta.Bounce{Type: mta.BounceSoft, Category: mta.CategoryExpired}
				r.SMTPResponse = fmt.Sprintf("gave up after %s in the queue; last attempt: %s", o.QueueLifetime, r.SMTPResponse)
			}
			if err := q.bounce(tx, m, r, res, "", now); err != nil {
				return err
			}
			attempts = append(attempts, attempted(aj, res, number, OutcomeBounced, r.BounceType))
		}
		settle(&m, now)
		if err := tx.UpdateMessage(m); err != nil {
			return err
		}
		return tx.DeleteLease(m.ID)
	})
	if stale {
		q.log.Warn("a delivery attempt outlived its lease and the message was claimed again; its outcome is not recorded",
			"message_id", j.msg.ID, "lease", q.opts.Lease.String())
		return err
	}
	if err == nil {
		q.report(attempts)
	}
	return err
}

// event records one event of message m in tx, kept for the event
// retention.
func (q *Queue) event(tx *storage.Tx, m storage.Message, typ, rcpt string, at time.Time, data any, stats ...storage.Stat) error {
	return AppendEvent(tx, m, typ, rcpt, at, q.opts.EventRetention, data, stats...)
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
func (q *Queue) bounce(tx *storage.Tx, m storage.Message, r *storage.Recipient, res mta.RecipientResult, diag string, now time.Time) error {
	b := res.Bounce
	if b.Type == "" {
		b = mta.Classify(res.Code, res.Enhanced, res.Text)
	}
	if err := setStatus(r, StatusBounced); err != nil {
		return err
	}
	r.BouncedAt = &now
	r.BounceType, r.BounceCategory = string(b.Type), string(b.Category)
	code := res.Enhanced
	if code == "" && res.Code != 0 {
		code = fmt.Sprint(res.Code)
	}
	if diag == "" && res.Code != 0 {
		diag = "smtp; " + smtpLine(res)
	}
	if err := q.event(tx, m, EventBounced, r.Email, now, bouncedData{MessageID: m.ID, To: r.Email, BounceType: r.BounceType,
		BounceCategory: r.BounceCategory, BounceCode: code, BounceMessage: r.SMTPResponse, DiagnosticCode: diag},
		bounceStat(b.Type)); err != nil {
		return err
	}
	if b.Type == mta.BounceHard {
		return suppress(tx, m, r.Email, "hard_bounce", now)
	}
	return nil
}

// Report is what an asynchronous bounce report (a DSN) says about one
// recipient: its reply, with the diagnostic as the report gave it.
type Report struct {
	Code       int
	Enhanced   string
	Text       string
	RemoteMTA  string
	Diagnostic string
}

// BounceLater records an asynchronous bounce of recipient r of message m,
// reported after the attempt (RFC 3464 DSN to the VERP return path). A
// recipient already bounced, or never sent to, is left alone, so the same
// report twice gives one event. It reports whether r bounced now; the
// caller updates m in tx (Status sums it up).
func (q *Queue) BounceLater(tx *storage.Tx, m *storage.Message, r *storage.Recipient, rep Report, now time.Time) (bool, error) {
	if r.BouncedAt != nil {
		return false, nil
	}
	if _, ok := recipientMoves[move{r.Status, StatusBounced}]; !ok {
		return false, nil
	}
	res := mta.RecipientResult{Recipient: r.Email, Status: mta.StatusPermanent, Code: rep.Code,
		Enhanced: rep.Enhanced, Text: rep.Text, Host: rep.RemoteMTA}
	res.Bounce = mta.Classify(rep.Code, rep.Enhanced, rep.Text)
	if res.Bounce.Type == "" {
		res.Bounce = mta.Bounce{Type: mta.BounceSoft, Category: mta.CategoryOther}
	}
	r.SMTPCode, r.EnhancedCode, r.SMTPResponse = rep.Code, rep.Enhanced, rep.Text
	if err := q.bounce(tx, *m, r, res, rep.Diagnostic, now); err != nil {
		return false, err
	}
	settle(m, now)
	return true, nil
}

// Complain records a spam complaint about message m by recipient r:
// message.complained, once per recipient, and a suppression. It reports
// nothing when r complained before.
func (q *Queue) Complain(tx *storage.Tx, m storage.Message, r *storage.Recipient, feedbackType, feedbackID string, now time.Time) error {
	if r.ComplainedAt != nil {
		return nil
	}
	r.ComplainedAt = &now
	if err := q.event(tx, m, EventComplained, r.Email, now, complainedData{MessageID: m.ID, To: r.Email,
		ComplainedAt: now.Format(time.RFC3339Nano), FeedbackType: feedbackType, FeedbackID: feedbackID},
		storage.StatComplained); err != nil {
		return err
	}
	return suppress(tx, m, r.Email, "complaint", now)
}

func suppress(tx *storage.Tx, m storage.Message, rcpt, reason string, now time.Time) error {
	_, _, err := tx.PutSuppression(storage.Suppression{AccountID: m.AccountID, Recipient: rcpt, Reason: reason,
		SourceMessageID: m.ID, CreatedAt: now})
	return err
}
