package queue

import (
	"strconv"
	"time"

	"mailbolt/storage"
)

// job is one claimed message: the recipients to try now and where to send
// from.
type job struct {
	msg     storage.Message
	raw     []byte                 // the built message
	content storage.MessageContent // to build it, for messages stored without raw
	rcpts   []string
	src     SourceIP
	domain  storage.Domain
	// lease is the claim's token in the message's lease record: this
	// node, and the lease's end. The outcome is recorded only while it
	// still holds the message.
	lease string
}

// leaseToken names one claim: the node (the database handle's token) and
// the end of the lease it took.
func (q *Queue) leaseToken(until time.Time) string {
	return q.db.Node() + "/" + strconv.FormatInt(until.UnixNano(), 10)
}

// recoverLeases makes the messages this data dir's previous process was
// delivering due again at once. Only one process holds the file, so every
// lease found at start is an orphan. A database shared by several nodes
// is different: the leases found are other nodes' live work, so nothing is
// taken back; a dead node's messages fall due when their leases end (their
// queue time is the lease's end) and any node claims them then.
func (q *Queue) recoverLeases() error {
	if q.db.Shared() {
		return nil
	}
	now := q.now()
	return q.db.Update(func(tx *storage.Tx) error {
		for _, l := range tx.Leases() {
			m, err := tx.Message(l[0], l[1])
			if err != nil {
				if err := tx.DeleteLease(l[1]); err != nil {
					return err
				}
				continue
			}
			for i := range m.Recipients {
				if r := &m.Recipients[i]; r.Status == StatusSending {
					if err := setStatus(r, StatusDeferred); err != nil {
						return err
					}
					r.SMTPResponse = "interrupted by a restart; retrying"
				}
			}
			m.Status = Status(m)
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

// claimDue takes up to max due messages in one transaction: each one's
// attempt is counted and its lease written before any connection is made,
// so a crash never causes an immediate re-try storm. It returns them and
// when the next queue entry falls due. When nothing is due it only reads:
// an idle queue that wakes (the poll, a deferral filed for later) commits
// nothing, so it costs no fsync.
func (q *Queue) claimDue(now time.Time, max int) ([]job, time.Time, error) {
	var jobs []job
	var next time.Time
	var due []storage.QueuedMessage
	if err := q.db.View(func(tx *storage.Tx) error {
		due, next = tx.DueMessages(now, 1)
		return nil
	}); err != nil || len(due) == 0 {
		return nil, next, err
	}
	err := q.db.Update(func(tx *storage.Tx) error {
		jobs = nil
		due, next = tx.DueMessages(now, max)
		for _, e := range due {
			j, ok, err := q.claim(tx, e, now)
			if err != nil {
				return err
			}
			if ok {
				jobs = append(jobs, j)
			}
		}
		return nil
	})
	return jobs, next, err
}

// claim takes one due queue entry in tx. ok is false when there is nothing
// to send now: the entry was stale, every waiting recipient turned out
// suppressed, its domain is gone, or its pool is at its warm-up caps.
func (q *Queue) claim(tx *storage.Tx, e storage.QueuedMessage, now time.Time) (j job, ok bool, err error) {
	m, err := tx.Message(e.AccountID, e.MessageID)
	if err != nil || m.QueueAt == nil || !m.QueueAt.Equal(e.At) {
		// A stale entry: the message is gone or has moved on.
		return j, false, tx.DropQueued(e.At, e.MessageID)
	}
	if m.Status == StatusSending {
		// Due while sending: the entry is the end of a lease whose attempt
		// never recorded its outcome (its node died, or the attempt
		// panicked or outlived the lease). The recipients it held are
		// deferred and, below, claimed again; should that attempt still
		// finish, it no longer holds the lease and records nothing.
		for i := range m.Recipients {
			if r := &m.Recipients[i]; r.Status == StatusSending {
				if err := setStatus(r, StatusDeferred); err != nil {
					return j, false, err
				}
				r.SMTPResponse = "the attempt's lease ended before its outcome was recorded; retrying"
			}
		}
		m.Status = Status(m)
		if err := tx.DeleteLease(m.ID); err != nil {
			return j, false, err
		}
	}
	if err := suppressListed(tx, &m); err != nil {
		return j, false, err
	}
	var waiting []int
	for i, r := range m.Recipients {
		if pending(r) {
			waiting = append(waiting, i)
		}
	}
	if m.Status == StatusScheduled && len(waiting) == 0 {
		// send_at has come, and every recipient was suppressed meanwhile:
		// finished below by its recipients' state, never accepted for
		// delivery (no message.sent).
		m.Status = StatusQueued
	} else if m.Status == StatusScheduled {
		// send_at has come: the message is accepted for delivery now.
		m.Status, m.QueuedAt = StatusQueued, &now
		ev, err := q.sentEvent(m, now)
		if err != nil {
			return j, false, err
		}
		if err := appendSent(tx, m, ev); err != nil {
			return j, false, err
		}
	}
	// finish files m without an attempt, each waiting recipient moved to
	// `to` for `why`.
	finish := func(to, why string, next *time.Time) error {
		for _, i := range waiting {
			r := &m.Recipients[i]
			if err := setStatus(r, to); err != nil {
				return err
			}
			r.SMTPResponse, r.NextAttemptAt = why, next
		}
		settle(&m, now)
		return tx.UpdateMessage(m)
	}
	if len(waiting) == 0 {
		return j, false, finish("", "", nil)
	}
	if !m.Test {
		j.domain, err = tx.DomainByName(m.AccountID, m.Domain)
		if err != nil || j.domain.Status != storage.DomainVerified {
			return j, false, finish(StatusFailed, "not sent: the sending domain "+m.Domain+" is no longer verified for this account", nil)
		}
		src, ok, wait, err := PickSourceIP(tx, m.AccountID, m.IPPool, now)
		if err != nil {
			return j, false, err
		}
		if !ok {
			return j, false, finish(StatusDeferred, "waiting: every IP of the pool has reached today's warm-up cap", &wait)
		}
		if src == (SourceIP{}) && m.IPPool != "" {
			q.log.Warn("IP pool has no usable IP; sending from the default address", "account", m.AccountID, "pool", m.IPPool)
		}
		j.src = src
	}
	if !m.Test { // the sandbox needs no content
		if j.raw = tx.MessageRaw(m.AccountID, m.ID); j.raw == nil {
			if j.content, err = tx.MessageContent(m.AccountID, m.ID); err != nil {
				return j, false, err
			}
		}
	}
	for _, i := range waiting {
		r := &m.Recipients[i]
		if err := setStatus(r, StatusSending); err != nil {
			return j, false, err
		}
		r.Attempts, r.LastAttemptAt, r.NextAttemptAt = r.Attempts+1, &now, nil
		j.rcpts = append(j.rcpts, r.Email)
	}
	lease := now.Add(q.opts.Lease)
	m.Status, m.QueueAt = StatusSending, &lease
	if err := tx.UpdateMessage(m); err != nil {
		return j, false, err
	}
	j.lease = q.leaseToken(lease)
	if err := tx.PutLeaseFor(m.AccountID, m.ID, j.lease); err != nil {
		return j, false, err
	}
	j.msg = m
	return j, true, nil
}
