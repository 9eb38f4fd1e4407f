package app

import (
	"bytes"
	"crypto/hmac"
	"errors"
	"fmt"
	"strings"
	"time"

	"mailbolt/mta/inbound"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Inbound is the inbound listener's use of the App (inbound.Handler):
// asynchronous bounces (DSNs) and complaints (ARF reports) to each
// recipient's VERP return path, complaints to the feedback-loop address,
// and unsubscribe requests to the List-Unsubscribe mailto.
type Inbound struct{ a *App }

// Inbound returns the handler the inbound SMTP listener runs.
func (a *App) Inbound() Inbound { return Inbound{a} }

// FeedbackLoopLocal is the local part of the fixed address registered with
// mailbox providers' feedback loops: fbl@bounces.<domain>.
const FeedbackLoopLocal = "fbl"

// legacyReturnPathGrace is how long after the queue lifetime, counted from
// the upgrade, the old per-message return path still takes DSNs: a DSN
// comes back at most a few days after the last attempt.
const legacyReturnPathGrace = 48 * time.Hour

// What a recipient of the listener is.
const (
	rcptReturnPath       = iota // b+<id>.<index>.<MAC>: one recipient's return path
	rcptLegacyReturnPath        // b+<id>: the old per-message form, while in transition
	rcptFeedbackLoop            // fbl@bounces.<domain>
	rcptUnsubscribe             // u+<token>@bounces.<domain>
)

// inboundRcpt is a recipient of the listener that is one of ours.
type inboundRcpt struct {
	kind  int
	verp  inbound.VERP // the return path kinds
	token string       // rcptUnsubscribe
}

var (
	errNoSuchAddress = errors.New("no such address")
	errBadMAC        = errors.New("bounce address whose MAC does not verify")
	errLegacyOver    = errors.New("old-form bounce address: no longer taken")
	errLegacyNewMail = errors.New("old-form bounce address for a message sent with per-recipient addresses")
)

// inboundKey is rcpt, an address as the listener got it, in the form
// addresses are matched in (storage.AddressKey): lower case, its domain
// in A-labels, the form return paths are made and their MACs computed in
// and inbound domains are stored in. Mail with SMTPUTF8 may give the
// domain in Unicode. err when the domain is outside ASCII and no valid
// internationalised domain name: no address of ours is at it.
func inboundKey(rcpt string) (string, error) {
	return storage.AddressKey(strings.Trim(strings.TrimSpace(rcpt), "<>"))
}

// badDomain refuses a recipient whose domain is not a valid
// internationalised domain name: 553, mailbox name not allowed (RFC 5321
// §4.2.3), 5.1.3, bad destination mailbox address syntax (RFC 3463).
func badDomain(rcpt string) error {
	return &inbound.Reply{Code: 553, Enhanced: [3]int{5, 1, 3},
		Message: "<" + rcpt + ">: the domain is not a valid internationalised domain name (IDNA)"}
}

// inboundAddress classifies a recipient of the listener. Only a return
// path whose MAC verifies, the feedback-loop address, an unsubscribe
// address, and during the transition an old-form return path of a message
// sent before the upgrade are ours; anything else is an error, and so is a
// storage failure (wrapping inbound.ErrRetryLater). The address is read in
// its normal form (inboundKey), so either spelling of an IDN bounce domain
// is the same address.
func (in Inbound) inboundAddress(rcpt string) (inboundRcpt, error) {
	a, err := inboundKey(rcpt)
	if err != nil {
		return inboundRcpt{}, errNoSuchAddress
	}
	if v, ok := inbound.ParseVERP(a); ok {
		if v.Legacy {
			return inboundRcpt{kind: rcptLegacyReturnPath, verp: v}, in.legacyTaken(v.MessageID)
		}
		if !in.a.validReturnPath(v) {
			return inboundRcpt{}, errBadMAC
		}
		return inboundRcpt{kind: rcptReturnPath, verp: v}, nil
	}
	local, domain, found := strings.Cut(a, "@")
	if !found || !strings.HasPrefix(domain, ReturnPathLabel+".") || len(domain) == len(ReturnPathLabel)+1 {
		return inboundRcpt{}, errNoSuchAddress
	}
	if tok, ok := strings.CutPrefix(local, "u+"); ok && tok != "" {
		// Tokens are base64url: case matters, so take them from the
		// address as it was given.
		orig := strings.Trim(strings.TrimSpace(rcpt), "<>")
		return inboundRcpt{kind: rcptUnsubscribe, token: orig[2:strings.LastIndexByte(orig, '@')]}, nil
	}
	if local == FeedbackLoopLocal {
		return inboundRcpt{kind: rcptFeedbackLoop}, nil
	}
	return inboundRcpt{}, errNoSuchAddress
}

// validReturnPath reports whether v, a per-recipient return path, carries
// the MAC this server gives it (compared in constant time; v is lower case,
// as the MAC is written).
func (a *App) validReturnPath(v inbound.VERP) bool {
	if v.Legacy {
		return false
	}
	want := queue.ReturnPathMAC(a.returnPathKey, v.MessageID, v.Index, v.Domain)
	return hmac.Equal([]byte(v.MAC), []byte(want))
}

// legacyTaken decides whether the old per-message return path of message
// id is still taken: only for a message created before bounce addresses
// carried a MAC, and only until the queue lifetime plus two days after
// that upgrade, when no DSN for such a message can still be due.
func (in Inbound) legacyTaken(id string) error {
	a := in.a
	since := a.returnPathSince
	if !a.Now().Before(since.Add(a.queue.Options().QueueLifetime + legacyReturnPathGrace)) {
		return errLegacyOver
	}
	var created time.Time
	err := a.db.View(func(tx *storage.Tx) error {
		owner, err := tx.MessageOwner(id)
		if err != nil {
			return err
		}
		m, err := tx.Message(owner, id)
		created = m.CreatedAt
		return err
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return errNoSuchAddress
	case err != nil:
		return fmt.Errorf("%w: %w", inbound.ErrRetryLater, err)
	case !created.Before(since):
		return errLegacyNewMail
	}
	return nil
}

// Accept takes mail only for our own addresses (see inboundAddress) and
// for the routed addresses of verified inbound domains (acceptInbound),
// either read in the normal form of addresses (inboundKey); an address
// whose domain has none is refused with 553 5.1.3 (badDomain).
// One transaction holds one kind or the other, never both (see
// separateTransactions).
func (in Inbound) Accept(env inbound.Envelope, rcpt string) error {
	if _, err := inboundKey(rcpt); err != nil {
		in.a.log.Info("inbound recipient refused", "rcpt", rcpt, "err", err)
		return badDomain(rcpt)
	}
	_, err := in.inboundAddress(rcpt)
	if err != nil && !errors.Is(err, inbound.ErrRetryLater) {
		ierr := in.acceptInbound(rcpt)
		if !errors.Is(ierr, errNotInbound) {
			if ierr != nil && !errors.Is(ierr, inbound.ErrRetryLater) {
				in.a.log.Info("inbound recipient refused", "rcpt", rcpt, "err", ierr)
			}
			if ierr == nil && len(env.Rcpts) > 0 && in.ownAddress(env.Rcpts[0]) {
				return separateTransactions(rcpt)
			}
			return ierr
		}
		in.a.log.Info("inbound recipient refused", "rcpt", rcpt, "err", err)
	}
	if err == nil && len(env.Rcpts) > 0 && !in.ownAddress(env.Rcpts[0]) {
		return separateTransactions(rcpt)
	}
	return err
}

// ownAddress reports whether rcpt, a recipient taken at RCPT, is one of the
// listener's own addresses (a report or unsubscribe address) rather than
// an address of an inbound domain: the classification Deliver makes.
func (in Inbound) ownAddress(rcpt string) bool {
	_, err := in.inboundAddress(rcpt)
	return err == nil || errors.Is(err, inbound.ErrRetryLater)
}

// separateTransactions refuses a recipient whose kind differs from the
// transaction's first one: reports and mail for inbound domains are
// recorded in separate transactions, so that a 452 or 451 for the inbound
// mail cannot make the sender retry reports already recorded. 452 4.5.3
// tells the sender to send this recipient again in another transaction
// (RFC 5321 §4.5.3.1.10).
func separateTransactions(rcpt string) error {
	return &inbound.Reply{Code: 452, Enhanced: [3]int{4, 5, 3},
		Message: "<" + rcpt + ">: mail for inbound domains and mail for bounce addresses go in separate transactions; send this recipient in another one"}
}

// Deliver processes one received message for each of its recipients:
// reports and unsubscribes to our own addresses, and mail for inbound
// domains (receive). Unknown or unmatched reports are logged and dropped;
// mail for inbound domains that cannot be stored is not acknowledged.
func (in Inbound) Deliver(env inbound.Envelope, rcpts []string, data []byte) error {
	from := env.From
	var errs []error
	var received []string
	for _, rcpt := range rcpts {
		r, err := in.inboundAddress(rcpt)
		if err != nil && !errors.Is(err, inbound.ErrRetryLater) {
			received = append(received, rcpt) // not ours: an inbound domain's, accepted at RCPT
			continue
		}
		if err == nil {
			switch r.kind {
			case rcptUnsubscribe:
				err = in.mailtoUnsubscribe(r.token)
			case rcptReturnPath:
				err = in.report(r.verp, data)
			case rcptLegacyReturnPath:
				err = in.legacyBounces(r.verp.MessageID, data)
			case rcptFeedbackLoop:
				err = in.feedbackLoop(data)
			}
		}
		if err != nil {
			in.a.log.Warn("inbound mail not used", "rcpt", rcpt, "from", from, "err", err)
			errs = append(errs, err)
			continue
		}
		// One line per report processed (docs/operations.md, "Logs").
		attrs := []any{"kind", inboundKinds[r.kind], "bytes", len(data)}
		if r.verp.MessageID != "" {
			attrs = append(attrs, "message_id", r.verp.MessageID)
		}
		in.a.log.Info("inbound report processed", attrs...)
	}
	if len(received) > 0 {
		// Accept keeps reports and inbound mail in separate
		// transactions, so received is every recipient here, and a
		// refusal or a failure to store is the transaction's answer.
		if err := in.receive(env, received, data); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// inboundKinds name the kinds of listener address in the log.
var inboundKinds = map[int]string{rcptReturnPath: "bounce_or_complaint", rcptLegacyReturnPath: "legacy_bounce",
	rcptFeedbackLoop: "feedback_loop", rcptUnsubscribe: "unsubscribe"}

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

// report reads a DSN or an ARF report sent to the return path v of one
// recipient, and records what it says about that recipient alone, whatever
// other recipients the report names.
func (in Inbound) report(v inbound.VERP, data []byte) error {
	dsn, err := inbound.ParseDSN(bytes.NewReader(data))
	if err == nil {
		return in.withRecipient(v, func(tx *storage.Tx, m *storage.Message, r *storage.Recipient, now time.Time) (bool, error) {
			d := failedFor(dsn, r.Email)
			if d == nil {
				return false, nil // delayed, delivered, relayed: nothing failed
			}
			return in.bounce(tx, m, r, *d, now)
		})
	}
	if !errors.Is(err, inbound.ErrNotDSN) {
		return err
	}
	fb, err := inbound.ParseARF(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return in.complaint(v, fb)
}

// failedFor is the failed recipient group of a DSN sent to email's own
// return path: the one naming email, else the first failed one (a
// forwarded address fails under another name); nil when none failed.
func failedFor(dsn *inbound.DSN, email string) *inbound.DSNRecipient {
	var first *inbound.DSNRecipient
	for i := range dsn.Recipients {
		d := &dsn.Recipients[i]
		if d.Action != "failed" {
			continue
		}
		for _, a := range []string{d.FinalRecipient, d.OriginalRecipient} {
			if sameRecipient(a, email) {
				return d
			}
		}
		if first == nil {
			first = d
		}
	}
	return first
}

// legacyBounces reads a DSN sent to an old-form, per-message return path
// (see legacyTaken): it names the recipient in the report's text only.
// Anything but a DSN is not used there.
func (in Inbound) legacyBounces(id string, data []byte) error {
	dsn, err := inbound.ParseDSN(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("old-form bounce address takes only DSNs: %w", err)
	}
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
			bounced, err := in.bounce(tx, m, r, d, now)
			if err != nil {
				return false, err
			}
			changed = changed || bounced
		}
		return changed, nil
	})
}

// feedbackLoop reads an ARF report sent to the feedback-loop address. The
// report counts only when the returned message's own Return-Path is a
// return path of ours whose MAC verifies, and then only for the recipient
// it names: anyone can write to fbl@, but only the holder of a message
// knows its return path.
func (in Inbound) feedbackLoop(data []byte) error {
	fb, err := inbound.ParseARF(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("the feedback-loop address takes only feedback reports: %w", err)
	}
	rp, _ := inboundKey(fb.OriginalReturnPath) // a domain that is no IDN gives no valid MAC
	v, ok := inbound.ParseVERP(rp)
	if !ok || !in.a.validReturnPath(v) {
		return fmt.Errorf("%w: the reported message's Return-Path %q is not a bounce address of ours with a valid MAC",
			errUnmatched, fb.OriginalReturnPath)
	}
	return in.complaint(v, fb)
}

// complaintTypes are the ARF feedback types that count as a complaint
// (RFC 5965 §7.3); "other" is what a report without the field gets.
var complaintTypes = map[string]bool{"abuse": true, "fraud": true, "virus": true, "other": true}

// findRecipient is the recipient of m a report names, or the only one.
func findRecipient(m *storage.Message, addrs ...string) *storage.Recipient {
	for _, a := range addrs {
		for i := range m.Recipients {
			if sameRecipient(a, m.Recipients[i].Email) {
				return &m.Recipients[i]
			}
		}
	}
	if len(m.Recipients) == 1 {
		return &m.Recipients[0]
	}
	return nil
}

// withRecipient runs fn on the recipient return path v names, in one
// transaction (see withMessage).
func (in Inbound) withRecipient(v inbound.VERP, fn func(tx *storage.Tx, m *storage.Message, r *storage.Recipient, now time.Time) (bool, error)) error {
	return in.withMessage(v.MessageID, func(tx *storage.Tx, m *storage.Message, now time.Time) (bool, error) {
		if v.Index >= len(m.Recipients) || !strings.EqualFold(m.Domain, v.Domain) {
			return false, errUnmatched
		}
		return fn(tx, m, &m.Recipients[v.Index], now)
	})
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

// bounce records a late bounce of recipient r from DSN group d. A
// recipient that already bounced is not bounced twice (the same DSN twice
// gives one event).
func (in Inbound) bounce(tx *storage.Tx, m *storage.Message, r *storage.Recipient, d inbound.DSNRecipient, now time.Time) (bool, error) {
	text := d.DiagnosticCode
	if i := strings.IndexByte(text, ';'); i >= 0 {
		text = strings.TrimSpace(text[i+1:])
	}
	return in.a.queue.BounceLater(tx, m, r, queue.Report{Code: d.SMTPCode, Enhanced: d.Status,
		Text: text, RemoteMTA: d.RemoteMTA, Diagnostic: d.DiagnosticCode}, now)
}

// complaint records a spam complaint from an ARF report about the
// recipient return path v names, once, and suppresses the recipient.
// Reports of other feedback types (not-spam, auth-failure) change nothing.
func (in Inbound) complaint(v inbound.VERP, fb *inbound.Feedback) error {
	if !complaintTypes[strings.ToLower(fb.FeedbackType)] {
		return nil
	}
	return in.withRecipient(v, func(tx *storage.Tx, m *storage.Message, r *storage.Recipient, now time.Time) (bool, error) {
		if r.ComplainedAt != nil {
			return false, nil
		}
		typ := strings.ToLower(fb.FeedbackType)
		if typ == "" {
			typ = "abuse"
		}
		return true, in.a.queue.Complain(tx, *m, r, typ, fb.FeedbackID, now)
	})
}
