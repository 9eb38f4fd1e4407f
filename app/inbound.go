package app

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"mailbolt/mta/inbound"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Inbound is the inbound listener's use of the App (inbound.Handler):
// asynchronous bounces (DSNs) and complaints (ARF reports) to VERP
// addresses, and unsubscribe requests to the List-Unsubscribe mailto.
type Inbound struct{ a *App }

// Inbound returns the handler the inbound SMTP listener runs.
func (a *App) Inbound() Inbound { return Inbound{a} }

// inboundAddress classifies a recipient of the listener: a VERP return
// path (bounces, complaints) or an unsubscribe address, both on a bounce
// subdomain.
func (in Inbound) inboundAddress(rcpt string) (kind byte, value string, ok bool) {
	if id, ok := inbound.ParseVERP(rcpt); ok {
		return 'b', id, true
	}
	a := strings.ToLower(strings.Trim(strings.TrimSpace(rcpt), "<>"))
	local, domain, found := strings.Cut(a, "@")
	if !found || !strings.HasPrefix(domain, ReturnPathLabel+".") {
		return 0, "", false
	}
	if tok, ok := strings.CutPrefix(local, "u+"); ok && tok != "" {
		// Tokens are base64url: case matters, so take them from the
		// address as it was given.
		orig := strings.Trim(strings.TrimSpace(rcpt), "<>")
		return 'u', orig[2:strings.LastIndexByte(orig, '@')], true
	}
	// Any other address on a bounce subdomain (a feedback loop's fixed
	// address, postmaster): reports there are matched by what they quote.
	return 'b', "", true
}

// Accept takes mail only for VERP and unsubscribe addresses.
func (in Inbound) Accept(rcpt string) bool {
	_, _, ok := in.inboundAddress(rcpt)
	return ok
}

// Deliver processes one received message for each of its recipients.
// Unknown or unmatched mail is logged and dropped.
func (in Inbound) Deliver(from string, rcpts []string, data []byte) error {
	var errs []error
	for _, rcpt := range rcpts {
		kind, value, ok := in.inboundAddress(rcpt)
		if !ok {
			continue
		}
		var err error
		switch kind {
		case 'u':
			err = in.mailtoUnsubscribe(value)
		case 'b':
			err = in.report(value, data)
		}
		if err != nil {
			in.a.log.Warn("inbound mail not used", "rcpt", rcpt, "from", from, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var errUnmatched = errors.New("names no message of this server")

func (in Inbound) mailtoUnsubscribe(token string) error {
	t, ok := in.a.verifyToken(tokenUnsubscribe, token)
	if !ok {
		return errors.New("unsubscribe token does not verify")
	}
	if _, err := in.a.unsubscribe(t, MethodMailto); HasCode(err, CodeNotFound) {
		return errUnmatched
	} else if err != nil {
		return fmt.Errorf("%w: %w", inbound.ErrRetryLater, err)
	}
	return nil
}

// report reads a DSN or an ARF report sent to the return path of message
// id, and records what it says.
func (in Inbound) report(id string, data []byte) error {
	dsn, err := inbound.ParseDSN(bytes.NewReader(data))
	if err == nil {
		if id == "" {
			var ok bool
			if id, ok = dsn.VERPMessageID(); !ok {
				id, _ = quotedMessageID(dsn.OriginalMessageID)
			}
		}
		return in.bounces(id, dsn)
	}
	if !errors.Is(err, inbound.ErrNotDSN) {
		return err
	}
	fb, err := inbound.ParseARF(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if !complaintTypes[strings.ToLower(fb.FeedbackType)] {
		return nil // not-spam, auth-failure: not a complaint about the recipient
	}
	return in.complaint(id, fb)
}

// complaintTypes are the ARF feedback types that count as a complaint
// (RFC 5965 §7.3); "other" is what a report without the field gets.
var complaintTypes = map[string]bool{"abuse": true, "fraud": true, "virus": true, "other": true}

// quotedMessageID reads our message id from a quoted Message-ID,
// "<id@domain>", when it is one of ours (a UUID).
func quotedMessageID(msgID string) (string, bool) {
	local, _, ok := strings.Cut(strings.Trim(strings.TrimSpace(msgID), "<>"), "@")
	if !ok {
		return "", false
	}
	u, err := uuid.Parse(local)
	if err != nil {
		return "", false
	}
	return u.String(), true
}

// findRecipient is the recipient of m a report names, or the only one.
func findRecipient(m *storage.Message, addrs ...string) *storage.Recipient {
	for _, a := range addrs {
		a = strings.ToLower(strings.TrimSpace(a))
		for i := range m.Recipients {
			if a != "" && m.Recipients[i].Email == a {
				return &m.Recipients[i]
			}
		}
	}
	if len(m.Recipients) == 1 {
		return &m.Recipients[0]
	}
	return nil
}

// withMessage runs fn on message id in one transaction; fn reports whether
// it changed the message, which is then stored. A failure to store it
// wraps inbound.ErrRetryLater, so the sender is told to try again.
func (in Inbound) withMessage(id string, fn func(tx *storage.Tx, m *storage.Message, now time.Time) (bool, error)) error {
	a := in.a
	now := a.Now()
	err := a.db.Update(func(tx *storage.Tx) error {
		if id == "" {
			return errUnmatched
		}
		owner, err := tx.MessageOwner(id)
		if errors.Is(err, storage.ErrNotFound) {
			return errUnmatched
		} else if err != nil {
			return err
		}
		m, err := tx.Message(owner, id)
		if errors.Is(err, storage.ErrNotFound) {
			return errUnmatched
		} else if err != nil {
			return err
		}
		if changed, err := fn(tx, &m, now); err != nil || !changed {
			return err
		}
		return tx.UpdateMessage(m)
	})
	if err != nil && !errors.Is(err, errUnmatched) {
		return fmt.Errorf("%w: %w", inbound.ErrRetryLater, err)
	}
	return err
}

// bounces records the failed recipients of a DSN. Delayed, delivered and
// relayed reports change nothing; a recipient that already bounced is not
// bounced twice (the same DSN twice gives one event).
func (in Inbound) bounces(id string, dsn *inbound.DSN) error {
	return in.withMessage(id, func(tx *storage.Tx, m *storage.Message, now time.Time) (bool, error) {
		changed := false
		for _, d := range dsn.Recipients {
			if d.Action != "failed" {
				continue
			}
			r := findRecipient(m, d.FinalRecipient, d.OriginalRecipient)
			if r == nil {
				continue
			}
			text := d.DiagnosticCode
			if i := strings.IndexByte(text, ';'); i >= 0 {
				text = strings.TrimSpace(text[i+1:])
			}
			bounced, err := in.a.queue.BounceLater(tx, m, r, queue.Report{Code: d.SMTPCode, Enhanced: d.Status,
				Text: text, RemoteMTA: d.RemoteMTA, Diagnostic: d.DiagnosticCode}, now)
			if err != nil {
				return false, err
			}
			changed = changed || bounced
		}
		return changed, nil
	})
}

// complaint records a spam complaint from an ARF report, once per
// recipient, and suppresses the recipient.
func (in Inbound) complaint(id string, fb *inbound.Feedback) error {
	if vid, ok := fb.VERPMessageID(); ok {
		id = vid
	} else if qid, ok := quotedMessageID(fb.OriginalMessageID); ok && id == "" {
		id = qid
	}
	return in.withMessage(id, func(tx *storage.Tx, m *storage.Message, now time.Time) (bool, error) {
		r := findRecipient(m, append(append([]string{}, fb.OriginalRcptTo...), fb.OriginalTo...)...)
		if r == nil || r.ComplainedAt != nil {
			return false, nil
		}
		typ := strings.ToLower(fb.FeedbackType)
		if typ == "" {
			typ = "abuse"
		}
		return true, in.a.queue.Complain(tx, *m, r, typ, fb.FeedbackID, now)
	})
}
