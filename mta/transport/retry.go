package transport

import (
	"context"
	"errors"
	"time"

	"mailbolt/storage"
)

// Retries of TLS report uploads. RFC 8460 §5.4 (Delivery Retry): "In the
// event of a delivery failure, regardless of the delivery method, a sender
// SHOULD attempt redelivery for up to 24 hours after the initial attempt",
// ideally with exponential backoff. Failure rules, first:
//
//   - Only https: uploads are retried here. A mailto: report is a message
//     in the delivery queue, which retries it as any other.
//   - Every failure is temporary: a DNS or connection error, an address the
//     guard refuses (checked again at each attempt, on the addresses the
//     rua's host has then), a TLS error, an answer other than 2xx.
//   - Durable before sent. A failed first attempt is filed in storage
//     (tls_report_retries) in the transaction that drops the day's counts;
//     each retry is claimed (its attempt counted, its next due time
//     written) before the request is made, so a node that stops mid-attempt
//     leaves it to be made again at that time, on any node, never at once
//     and never twice at the same time.
//   - Bounded. Retries stop Lifetime after the first attempt; at most
//     MaxPending uploads wait, each of at most maxRetryBody bytes. A report
//     beyond either is given up at once. Giving up is logged ("TLS report
//     given up") with the reason.

// RetryPolicy schedules the retries of failed TLS report uploads.
type RetryPolicy struct {
	// Base is the wait after the first attempt failed; each further wait
	// doubles, up to Max.
	Base, Max time.Duration
	// Lifetime is how long after its first attempt an upload is retried.
	Lifetime time.Duration
	// MaxPending is how many uploads wait for a retry at most.
	MaxPending int
}

// DefaultRetryPolicy is the policy of --tls-report-retry-*: 5 min, doubling
// to 2 h, for the RFC's 24 h, at most 1,000 waiting.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Base: 5 * time.Minute, Max: 2 * time.Hour, Lifetime: 24 * time.Hour, MaxPending: 1000}
}

// withDefaults fills the zero fields from DefaultRetryPolicy.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.Base <= 0 {
		p.Base = d.Base
	}
	if p.Max <= 0 {
		p.Max = max(d.Max, p.Base)
	}
	if p.Lifetime <= 0 {
		p.Lifetime = d.Lifetime
	}
	if p.MaxPending <= 0 {
		p.MaxPending = d.MaxPending
	}
	return p
}

// Delay is the wait before the next attempt once attempts attempts have
// failed: Base, doubling, at most Max.
func (p RetryPolicy) Delay(attempts int) time.Duration {
	d := p.Base
	for i := 1; i < attempts && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Interval is how often due retries are looked for: every Base, at most a
// minute apart, so a retry is made at most that late.
func (p RetryPolicy) Interval() time.Duration { return min(p.Base, time.Minute) }

const (
	// maxRetryBody bounds a stored report. A report holds at most three
	// policies, with one MTA-STS policy file (64 KiB at most) among them,
	// so real ones are far smaller once compressed.
	maxRetryBody = 1 << 20
	// retryBatch is how many due retries one round lists.
	retryBatch = 100
	// attemptLimit bounds one retry's upload (the upload client's own
	// timeout is shorter, a minute), and claimHold is how long a claim
	// keeps a retry from every other round: longer than any attempt, so a
	// slow one is never made twice at the same time, and its outcome is
	// recorded under the claim it made.
	attemptLimit = 2 * time.Minute
	claimHold    = attemptLimit + 30*time.Second
)

// failedUpload is the retry of the first upload of report rep (gz) to
// url, which failed at now with err, due again after Delay(1).
func (r *Reporter) failedUpload(rep Report, url string, gz []byte, now time.Time, err error) storage.TLSReportRetry {
	return storage.TLSReportRetry{URL: url, Domain: rep.Domain(), ReportID: rep.ReportID, Body: gz,
		Attempts: 1, First: now, Next: now.Add(r.o.Retry.Delay(1)), LastError: err.Error()}
}

// notSent logs one failed attempt of d; retryAt is zero when none follows.
func (r *Reporter) notSent(d storage.TLSReportRetry, retryAt time.Time) {
	args := []any{"domain", d.Domain, "rua", d.URL, "report_id", d.ReportID, "attempts", d.Attempts}
	if !retryAt.IsZero() {
		args = append(args, "retry_at", retryAt)
	}
	r.o.Logger.Warn("TLS report not sent", append(args, "err", d.LastError)...)
}

// RetryDue makes the retries that are due, one at a time: sent counts the
// uploads accepted, gaveUp those given up.
func (r *Reporter) RetryDue(ctx context.Context) (sent, gaveUp int, err error) {
	var due []storage.TLSReportRetry
	now := r.o.Now()
	if err := r.o.DB.View(func(tx *storage.Tx) (err error) { due, err = tx.DueTLSReportRetries(now, retryBatch); return err }); err != nil {
		return 0, 0, err
	}
	for _, d := range due {
		if ctx.Err() != nil {
			return sent, gaveUp, ctx.Err()
		}
		ok, gone, err := r.retry(ctx, d)
		if err != nil {
			return sent, gaveUp, err
		}
		if ok {
			sent++
		}
		if gone {
			gaveUp++
		}
	}
	return sent, gaveUp, nil
}

// retry makes one attempt of retry d: ok when the upload was accepted,
// gaveUp when d was dropped without success.
func (r *Reporter) retry(ctx context.Context, d storage.TLSReportRetry) (ok, gaveUp bool, err error) {
	p := r.o.Retry
	now := r.o.Now()
	end := d.First.Add(p.Lifetime)
	if r.o.Uploads == nil || !now.Before(end) {
		// Due after its lifetime (the nodes were down, or the lifetime
		// was shortened), or no longer sendable (--relay: no uploads).
		reason := "retried for " + p.Lifetime.String()
		if r.o.Uploads == nil {
			reason = "no https: uploads (--relay)"
		}
		return false, true, r.drop(d, reason)
	}
	var c storage.TLSReportRetry
	err = r.o.DB.Update(func(tx *storage.Tx) (err error) { c, err = tx.ClaimTLSReportRetry(d, now.Add(claimHold)); return err })
	if errors.Is(err, storage.ErrNotFound) {
		return false, false, nil // another node's round took it
	}
	if err != nil {
		return false, false, err
	}
	actx, cancel := context.WithTimeout(ctx, attemptLimit)
	uerr := r.o.Uploads.UploadGzip(actx, c.URL, c.Body)
	cancel()
	if uerr == nil {
		if err := r.o.DB.Update(func(tx *storage.Tx) error { return tx.DeleteTLSReportRetry(c) }); err != nil {
			return false, false, err
		}
		r.o.Logger.Info("TLS report sent", "domain", c.Domain, "rua", c.URL, "report_id", c.ReportID, "attempts", c.Attempts)
		return true, false, nil
	}
	if ctx.Err() != nil {
		return false, false, nil // stopping: the claim stands, it is made again when it ends
	}
	c.LastError = uerr.Error()
	next := r.o.Now().Add(p.Delay(c.Attempts))
	if !next.Before(end) {
		r.notSent(c, time.Time{})
		return false, true, r.drop(c, "retried for "+p.Lifetime.String())
	}
	err = r.o.DB.Update(func(tx *storage.Tx) error { _, err := tx.RetryTLSReportLater(c, next, c.LastError); return err })
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, false, err
	}
	r.notSent(c, next)
	return false, false, nil
}

// drop removes retry d from storage and logs it given up for reason.
func (r *Reporter) drop(d storage.TLSReportRetry, reason string) error {
	if err := r.o.DB.Update(func(tx *storage.Tx) error { return tx.DeleteTLSReportRetry(d) }); err != nil {
		return err
	}
	r.giveUp(d, reason)
	return nil
}

// giveUp logs a report dropped without success, with the error of its
// last attempt.
func (r *Reporter) giveUp(d storage.TLSReportRetry, reason string) {
	r.o.Logger.Warn("TLS report given up", "domain", d.Domain, "rua", d.URL, "report_id", d.ReportID, "attempts", d.Attempts,
		"reason", reason, "err", d.LastError)
}

// JobTLSReportRetries is the job lease (storage.DB.LeaseJob) of the
// retries of TLS report uploads: one node makes them at a time (each
// retry is also claimed on its own, so an overlap sends nothing twice).
const JobTLSReportRetries = "tls_report_retries"

// RunRetries makes the due retries every RetryPolicy.Interval until ctx
// ends, in the rounds for which this node holds the job's lease.
func (r *Reporter) RunRetries(ctx context.Context) {
	runLeased(ctx, r.o.DB, JobTLSReportRetries, r.o.Retry.Interval(), r.o.Now, r.o.Logger, func(ctx context.Context) {
		if _, _, err := r.RetryDue(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.Warn("TLS report retries", "err", err)
		}
	})
}
