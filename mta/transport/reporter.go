package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/mta/tlspolicy"
	"mailbolt/storage"
)

// ReporterOptions configure a Reporter.
type ReporterOptions struct {
	DB       *storage.DB
	Resolver Resolver
	// Uploads posts reports to https: addresses (through the guard).
	Uploads *STS
	// Org names the reporting organization (--hostname); Contact is how
	// to reach it ("mailto:" and --system-from).
	Org, Contact string
	// Mail queues a report to a mailto: address; nil skips those.
	Mail func(to string, r Report) error
	// Retry schedules the retries of uploads that failed (retry.go);
	// zero fields take DefaultRetryPolicy's.
	Retry  RetryPolicy
	Logger *slog.Logger
	Now    func() time.Time
}

// Reporter sends the daily aggregate TLS reports (RFC 8460) of the stored
// counts.
type Reporter struct{ o ReporterOptions }

// NewReporter returns a Reporter with o.
func NewReporter(o ReporterOptions) *Reporter {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Retry = o.Retry.withDefaults()
	return &Reporter{o: o}
}

// ReportGrace is how long after a day ends its counts are reported: every
// node keeps its counts in memory for up to a minute (Counter.Flush runs
// every minute), so a day reported at once could miss the last minute of
// another node's, which would then come as a second, partial report.
const ReportGrace = 10 * time.Minute

// SendDue reports every day before today (as it was ReportGrace ago) that has counts: for each
// recipient domain that publishes a TLS-RPT record (_smtp._tls.<domain>,
// read with mta/tlspolicy), one report to each of its rua addresses. The
// counts of those days are then dropped, whether a domain publishes a
// record or not; a DNS lookup that fails keeps them all for the next run.
// An upload that fails is filed for retry (retry.go) in the transaction
// that drops the counts; a mailto: report is retried by the delivery
// queue, and one that cannot be queued is logged and dropped.
func (r *Reporter) SendDue(ctx context.Context) (sent int, err error) {
	today := Day(r.o.Now().Add(-ReportGrace))
	var counts []storage.TLSCount
	if err := r.o.DB.View(func(tx *storage.Tx) (err error) { counts, err = tx.TLSCounts(today); return err }); err != nil {
		return 0, err
	}
	if len(counts) == 0 {
		return 0, nil
	}
	days := map[uint32]bool{}
	for _, c := range counts {
		days[c.Day] = true
	}
	policy := func(domain string) *tlspolicy.Policy {
		var sp storage.STSPolicy
		var err error
		r.o.DB.View(func(tx *storage.Tx) error { sp, err = tx.STSPolicy(domain); return nil })
		if err != nil {
			return nil
		}
		p, err := tlspolicy.ParsePolicy([]byte(sp.Policy))
		if err != nil {
			return nil
		}
		return p
	}
	type job struct {
		rua    []string
		report Report
	}
	var jobs []job
	ruas := map[string][]string{}
	for day := range days {
		for _, rep := range BuildReports(day, counts, r.o.Org, r.o.Contact, policy) {
			d := rep.Domain()
			rua, seen := ruas[d]
			if !seen {
				if rua, err = r.rua(ctx, d); err != nil {
					return 0, err
				}
				ruas[d] = rua
			}
			if len(rua) > 0 {
				jobs = append(jobs, job{rua, rep})
			}
		}
	}
	var retries []storage.TLSReportRetry // failed uploads, to be filed
	for _, j := range jobs {
		var gz []byte // the report as uploaded, compressed once for its https: ruas
		for _, u := range j.rua {
			var err error
			if addr, ok := strings.CutPrefix(u, "mailto:"); ok {
				if r.o.Mail == nil {
					continue
				}
				err = r.o.Mail(addr, j.report)
			} else if r.o.Uploads != nil {
				if gz == nil {
					gz, err = j.report.Gzip()
				}
				if err == nil {
					if err = r.o.Uploads.UploadGzip(ctx, u, gz); err != nil {
						retries = append(retries, r.failedUpload(j.report, u, gz, r.o.Now(), err))
						continue
					}
				}
			}
			if err != nil {
				r.o.Logger.Warn("TLS report not sent", "domain", j.report.Domain(), "rua", u, "err", err)
				continue
			}
			sent++
		}
	}
	// A report too large to keep is given up at once; so are those past
	// the cap of retries waiting.
	var keep, large []storage.TLSReportRetry
	for _, rt := range retries {
		if len(rt.Body) > maxRetryBody {
			large = append(large, rt)
		} else {
			keep = append(keep, rt)
		}
	}
	var kept int
	err = r.o.DB.Update(func(tx *storage.Tx) (err error) {
		if kept, err = tx.AddTLSReportRetries(keep, r.o.Retry.MaxPending); err != nil {
			return err
		}
		return tx.DeleteTLSCounts(today)
	})
	if err != nil {
		return sent, err
	}
	for _, rt := range keep[:kept] {
		r.notSent(rt, rt.Next)
	}
	for _, rt := range keep[kept:] {
		r.notSent(rt, time.Time{})
		r.giveUp(rt, fmt.Sprintf("%d reports already wait for a retry", r.o.Retry.MaxPending))
	}
	for _, rt := range large {
		r.notSent(rt, time.Time{})
		r.giveUp(rt, fmt.Sprintf("the report is over %d bytes", maxRetryBody))
	}
	return sent, nil
}

// rua returns the report addresses of a domain ("mailto:addr" or an
// https URL); none when it publishes no valid record.
func (r *Reporter) rua(ctx context.Context, domain string) ([]string, error) {
	txts, err := r.o.Resolver.LookupTXT(ctx, "_smtp._tls."+domain)
	if errors.Is(err, dns.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("TLS-RPT record of %s: %w", domain, err)
	}
	rec, err := tlspolicy.Select(txts, tlspolicy.TLSRPTVersion)
	if err != nil {
		return nil, nil
	}
	parsed, err := tlspolicy.ParseTLSRPTRecord(rec)
	if err != nil {
		r.o.Logger.Info("invalid TLS-RPT record: no report", "domain", domain, "err", err)
		return nil, nil
	}
	var out []string
	for _, u := range parsed.RUA {
		if strings.EqualFold(u.Scheme, "mailto") {
			out = append(out, "mailto:"+tlspolicy.MailtoAddress(u))
		} else {
			out = append(out, u.String())
		}
	}
	return out, nil
}

// JobTLSReports is the job lease (storage.DB.LeaseJob) of the daily TLS
// reports: with several nodes over one database, one sends them, so a
// domain gets each day's report once.
const JobTLSReports = "tls_reports"

// Run sends due reports every interval until ctx ends, in the rounds for
// which this node holds the job's lease.
func (r *Reporter) Run(ctx context.Context, interval time.Duration) {
	runLeased(ctx, r.o.DB, JobTLSReports, interval, r.o.Now, r.o.Logger, func(ctx context.Context) {
		if n, err := r.SendDue(ctx); err != nil && ctx.Err() == nil {
			r.o.Logger.Warn("TLS reports", "err", err)
		} else if n > 0 {
			r.o.Logger.Info("TLS reports sent", "count", n)
		}
	})
}
