package app

import (
	"context"
	"crypto"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"mailbolt/mta"
	"mailbolt/storage"
)

// Sender hands one message to the next hop: mta.Deliverer in production.
type Sender interface {
	Send(ctx context.Context, env mta.Envelope) []mta.RecipientResult
}

// DeliveryOptions configure the delivery queue.
type DeliveryOptions struct {
	// Sender delivers live mail. Without one live messages stay queued.
	Sender Sender
	// RetryBase is the first delay after a temporary failure (5 min); each
	// further one doubles, up to RetryMax (2 h).
	RetryBase, RetryMax time.Duration
	// QueueLifetime is how long a recipient keeps being retried after its
	// message was accepted for delivery; then it soft-bounces. 120 h.
	QueueLifetime time.Duration
	// Lease is how long a claimed message is held by one attempt before
	// another may take it over; 15 min. A restart takes its own leases back
	// at once.
	Lease time.Duration
	// Concurrency is how many messages are in flight at once; 64.
	Concurrency int
	// ClaimBatch caps the messages claimed in one transaction; 256.
	ClaimBatch int
	// Poll is the longest the queue sleeps without a wake-up; 1 s.
	Poll time.Duration
}

func (o *DeliveryOptions) defaults() {
	if o.RetryBase == 0 {
		o.RetryBase = 5 * time.Minute
	}
	if o.RetryMax == 0 {
		o.RetryMax = 2 * time.Hour
	}
	if o.QueueLifetime == 0 {
		o.QueueLifetime = 120 * time.Hour
	}
	if o.Lease == 0 {
		o.Lease = 15 * time.Minute
	}
	if o.Concurrency == 0 {
		o.Concurrency = 64
	}
	if o.ClaimBatch == 0 {
		o.ClaimBatch = 256
	}
	if o.Poll == 0 {
		o.Poll = time.Second
	}
}

// Backoff is the wait before the next attempt after a temporary failure,
// given how many attempts were made: base, doubling, at most max.
func Backoff(attempts int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// deliveryJob is one claimed message: the recipients to try now and where
// to send from.
type deliveryJob struct {
	msg     storage.Message
	raw     []byte                 // the built message
	content storage.MessageContent // to build it, for messages stored without raw
	rcpts   []string
	src     SourceIP
	domain  storage.Domain
}

// kickDelivery wakes the queue: new messages are waiting.
func (a *App) kickDelivery() {
	select {
	case a.deliveryKick <- struct{}{}:
	default:
	}
}

// runDelivery runs the delivery queue until ctx ends, then waits for the
// attempts in flight.
func (a *App) runDelivery(ctx context.Context) {
	o := a.opts.Delivery
	if err := a.recoverLeases(); err != nil {
		a.log.Error("recovering delivery leases failed", "err", err)
	}
	sem := make(chan struct{}, o.Concurrency)
	done := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for ctx.Err() == nil {
		free := o.Concurrency - len(sem)
		var next time.Time
		if free > 0 {
			jobs, n, err := a.claimMessages(a.Now(), min(free, o.ClaimBatch))
			if err != nil {
				a.log.Error("claiming messages failed", "err", err)
			}
			next = n
			for _, j := range jobs {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() {
						<-sem
						wg.Done()
						select {
						case done <- struct{}{}:
						default:
						}
					}()
					a.deliver(ctx, j)
				}()
			}
			if len(jobs) == min(free, o.ClaimBatch) {
				continue // there may be more due now
			}
		}
		wait := o.Poll
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(a.Now()), time.Millisecond))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
		case <-a.deliveryKick:
		case <-done:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// recoverLeases makes the messages this data dir's previous process was
// delivering due again at once. Only one process holds the file, so every
// lease found at start is an orphan.
func (a *App) recoverLeases() error {
	now := a.Now()
	return a.db.Update(func(tx *storage.Tx) error {
		for _, l := range tx.Leases() {
			m, err := tx.Message(l[0], l[1])
			if err != nil {
				if err := tx.DeleteLease(l[1]); err != nil {
					return err
				}
				continue
			}
			for i := range m.Recipients {
				if m.Recipients[i].Status == StatusSending {
					m.Recipients[i].Status = StatusDeferred
					m.Recipients[i].SMTPResponse = "interrupted by a restart; retrying"
				}
			}
			m.Status = aggregateStatus(m)
			m.QueueAt = &now
			if err := tx.UpdateMessage(m); err != nil {
				return err
			}
			if err := tx.DeleteLease(l[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

// claimMessages takes up to max due messages in one transaction: each one's
// attempt is counted and its lease written before any connection is made.
// It returns them and when the next queue entry falls due.
func (a *App) claimMessages(now time.Time, max int) ([]deliveryJob, time.Time, error) {
	var jobs []deliveryJob
	var next time.Time
	var sent bool
	err := a.db.Update(func(tx *storage.Tx) error {
		jobs, sent = nil, false
		var due []storage.QueuedMessage
		due, next = tx.DueMessages(now, max)
		for _, q := range due {
			j, ok, ev, err := a.claim(tx, q, now)
			if err != nil {
				return err
			}
			sent = sent || ev
			if ok {
				jobs = append(jobs, j)
			}
		}
		return nil
	})
	if sent {
		a.EventsCommitted()
	}
	return jobs, next, err
}

func (a *App) claim(tx *storage.Tx, q storage.QueuedMessage, now time.Time) (j deliveryJob, ok, event bool, err error) {
	m, err := tx.Message(q.AccountID, q.MessageID)
	if err != nil || m.QueueAt == nil || !m.QueueAt.Equal(q.At) {
		// A stale entry: the message is gone or has moved on.
		return j, false, false, tx.DropQueued(q.At, q.MessageID)
	}
	suppressRecipients(tx, &m, now)
	if m.Status == StatusScheduled {
		m.Status = StatusQueued
		m.QueuedAt = &now
		ev, err := a.sentEvent(m, now)
		if err != nil {
			return j, false, false, err
		}
		if err := a.appendSent(tx, m, ev); err != nil {
			return j, false, false, err
		}
		event = true
	}
	var pending []int
	for i, r := range m.Recipients {
		if r.Status == StatusQueued || r.Status == StatusDeferred {
			pending = append(pending, i)
		}
	}
	finish := func() error {
		m.Status = aggregateStatus(m)
		m.QueueAt = nextAttempt(m)
		if m.QueueAt == nil {
			m.CompletedAt = &now
		}
		return tx.UpdateMessage(m)
	}
	if len(pending) == 0 {
		return j, false, event, finish()
	}
	if !m.Test {
		j.domain, err = tx.DomainByName(m.AccountID, m.Domain)
		if err != nil || j.domain.Status != DomainVerified {
			for _, i := range pending {
				r := &m.Recipients[i]
				r.Status, r.SMTPResponse = StatusFailed, "not sent: the sending domain "+m.Domain+" is no longer verified for this account"
			}
			return j, false, event, finish()
		}
		src, ok, wait, err := a.PickSourceIP(tx, m.AccountID, m.IPPool, now)
		if err != nil {
			return j, false, event, err
		}
		if !ok {
			for _, i := range pending {
				r := &m.Recipients[i]
				r.Status, r.NextAttemptAt = StatusDeferred, &wait
				r.SMTPResponse = "waiting: every IP of the pool has reached today's warm-up cap"
			}
			return j, false, event, finish()
		}
		j.src = src
	}
	if m.Test {
		// The sandbox needs no content.
	} else if j.raw = tx.MessageRaw(m.ID); j.raw == nil {
		if j.content, err = tx.MessageContent(m.ID); err != nil {
			return j, false, event, err
		}
	}
	for _, i := range pending {
		r := &m.Recipients[i]
		r.Status, r.Attempts, r.LastAttemptAt, r.NextAttemptAt = StatusSending, r.Attempts+1, &now, nil
		j.rcpts = append(j.rcpts, r.Email)
	}
	lease := now.Add(a.opts.Delivery.Lease)
	m.Status, m.QueueAt = StatusSending, &lease
	if err := tx.UpdateMessage(m); err != nil {
		return j, false, event, err
	}
	if err := tx.PutLease(m.AccountID, m.ID); err != nil {
		return j, false, event, err
	}
	j.msg = m
	return j, true, event, nil
}

// nextAttempt is the earliest next attempt among deferred recipients; nil
// when none waits.
func nextAttempt(m storage.Message) *time.Time {
	var next *time.Time
	for _, r := range m.Recipients {
		if r.Status == StatusDeferred && r.NextAttemptAt != nil && (next == nil || r.NextAttemptAt.Before(*next)) {
			t := *r.NextAttemptAt
			next = &t
		}
		if r.Status == StatusQueued {
			t := time.Time{}
			if m.QueuedAt != nil {
				t = *m.QueuedAt
			}
			next = &t
		}
	}
	return next
}

// deliver makes one attempt for a claimed message and records the outcome.
func (a *App) deliver(ctx context.Context, j deliveryJob) {
	var results []mta.RecipientResult
	if j.msg.Test {
		results = sandboxResults(j.rcpts)
	} else {
		results = a.sendLive(ctx, j)
	}
	if err := a.recordResults(j, results, ctx.Err() != nil); err != nil {
		a.log.Error("recording a delivery attempt failed", "message_id", j.msg.ID, "err", err)
	}
}

// sendLive builds, signs and sends a live message: one build and one DKIM
// signature per message, whatever the number of recipients.
func (a *App) sendLive(ctx context.Context, j deliveryJob) []mta.RecipientResult {
	fail := func(err error) []mta.RecipientResult {
		out := make([]mta.RecipientResult, len(j.rcpts))
		for i, r := range j.rcpts {
			out[i] = mta.RecipientResult{Recipient: r, Status: mta.StatusPermanent, Enhanced: "5.3.0",
				Text: "message could not be prepared: " + err.Error(), Bounce: mta.Classify(554, "5.3.0", err.Error())}
		}
		return out
	}
	sender := a.opts.Delivery.Sender
	if sender == nil {
		out := make([]mta.RecipientResult, len(j.rcpts))
		for i, r := range j.rcpts {
			out[i] = mta.RecipientResult{Recipient: r, Status: mta.StatusTemporary, Enhanced: "4.4.0", Text: "no outbound delivery configured"}
		}
		return out
	}
	raw := j.raw
	if raw == nil {
		var err error
		if raw, err = mta.Build(buildMessage(j.msg, j.content)); err != nil {
			return fail(err)
		}
	}
	selector, key, signed := SigningKey(j.domain)
	var signer crypto.Signer
	if signed {
		var err error
		if signer, err = a.signer(j.domain.ID, selector, key); err != nil {
			return fail(err)
		}
	}
	send := func(data []byte, rcpts []string) []mta.RecipientResult {
		if signed {
			var err error
			if data, err = mta.Sign(data, j.domain.Name, selector, signer); err != nil {
				return fail(err)
			}
		}
		env := mta.Envelope{From: ReturnPath(j.msg), To: rcpts, Data: data, HELO: j.src.Hostname}
		if j.src.Addr != "" {
			env.SourceIP = net.ParseIP(j.src.Addr)
		}
		return sender.Send(ctx, env)
	}
	if !j.msg.ListUnsubscribe {
		return send(raw, j.rcpts) // one signed copy for every recipient
	}
	// Each recipient has its own List-Unsubscribe link, so its own copy
	// and signature; a single-recipient message still signs once.
	var out []mta.RecipientResult
	for _, rcpt := range j.rcpts {
		i := recipientIndex(j.msg, rcpt)
		data := append(a.unsubscribeHeaders(j.msg, i), raw...)
		out = append(out, send(data, []string{rcpt})...)
	}
	return out
}

func recipientIndex(m storage.Message, email string) int {
	for i, r := range m.Recipients {
		if r.Email == email {
			return i
		}
	}
	return 0
}

// ReturnPath is the VERP envelope sender of a message: on the domain's
// bounce subdomain (whose CNAME points at this server), carrying the
// message id so an asynchronous bounce finds its message; the DSN names
// the recipient.
func ReturnPath(m storage.Message) string {
	return "b+" + strings.ReplaceAll(m.ID, "-", "") + "@" + ReturnPathLabel + "." + m.Domain
}

// signer returns the parsed DKIM key of a domain, parsing it once.
func (a *App) signer(domainID, selector string, key mta.DKIMKey) (crypto.Signer, error) {
	k := domainID + "/" + selector
	if s, ok := a.signers.Load(k); ok {
		return s.(crypto.Signer), nil
	}
	s, err := key.Signer()
	if err != nil {
		return nil, fmt.Errorf("DKIM key of selector %s: %w", selector, err)
	}
	a.signers.Store(k, s)
	return s, nil
}
