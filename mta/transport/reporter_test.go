package transport

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/storage"
)

// Yesterday's counts go, as one report per domain, to each rua of the
// domains that publish a TLS-RPT record (mailto: to Mail, https: uploaded
// through the guard), with the right counts; today's stay.
func TestReporterSendsYesterdaysReports(t *testing.T) {
	f := setup(t)
	today := Day(f.clock)
	f.db.Update(func(tx *storage.Tx) error {
		tx.AddTLSCount(today-1, "example.test", "sts", "", 5)
		tx.AddTLSCount(today-1, "example.test", "sts", "certificate-host-mismatch", 2)
		tx.AddTLSCount(today-1, "quiet.test", "no-policy-found", "", 1) // publishes no record
		tx.AddTLSCount(today, "example.test", "sts", "", 9)
		return nil
	})
	port := f.ps.srv.URL[strings.LastIndexByte(f.ps.srv.URL, ':')+1:]
	f.zone.TXT("_smtp._tls.example.test", "v=TLSRPTv1; rua=mailto:tls@example.test,https://mta-sts.example.test:"+port+"/reports")
	var mu sync.Mutex
	var mailed []Report
	var to []string
	var uploaded []byte
	f.ps.set(func(w http.ResponseWriter, r *http.Request) { uploaded, _ = io.ReadAll(r.Body) })
	rep := NewReporter(ReporterOptions{DB: f.db, Resolver: &dns.Resolver{Server: f.zone.Addr}, Uploads: f.sts(),
		Org: "mta.mailbolt.test", Contact: "mailto:postmaster@mailbolt.test", Now: func() time.Time { return f.clock },
		Mail: func(addr string, r Report) error {
			mu.Lock()
			mailed, to = append(mailed, r), append(to, addr)
			mu.Unlock()
			return nil
		}})
	n, err := rep.SendDue(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("sent %d, %v", n, err)
	}
	if len(mailed) != 1 || to[0] != "tls@example.test" || mailed[0].Domain() != "example.test" {
		t.Fatalf("mailed %v to %v", mailed, to)
	}
	s := mailed[0].Policies[0].Summary
	if s.Success != 5 || s.Failure != 2 || mailed[0].Policies[0].FailureDetails[0].ResultType != "certificate-host-mismatch" {
		t.Fatalf("report %+v", mailed[0])
	}
	if gunzipReport(t, uploaded)["report-id"] != mailed[0].ReportID {
		t.Fatal("upload differs from the mailed report")
	}
	f.db.View(func(tx *storage.Tx) error {
		if left, _ := tx.TLSCounts(today + 1); len(left) != 1 || left[0].Day != today {
			t.Errorf("counts left: %+v", left)
		}
		return nil
	})
	// Nothing more is due.
	if n, err := rep.SendDue(context.Background()); n != 0 || err != nil {
		t.Fatalf("again: %d %v", n, err)
	}
}

// Just after midnight yesterday is not reported yet: another node may
// still hold its last minute of counts in memory. ReportGrace later it is.
func TestReporterWaitsForEveryNodesCounts(t *testing.T) {
	f := setup(t)
	f.clock = time.Date(2026, 11, 26, 0, 2, 0, 0, time.UTC)
	today := Day(f.clock)
	f.db.Update(func(tx *storage.Tx) error { return tx.AddTLSCount(today-1, "example.test", "sts", "", 5) })
	f.zone.TXT("_smtp._tls.example.test", "v=TLSRPTv1; rua=mailto:tls@example.test")
	mailed := 0
	var success int64
	rep := NewReporter(ReporterOptions{DB: f.db, Resolver: &dns.Resolver{Server: f.zone.Addr}, Uploads: f.sts(),
		Org: "mta.mailbolt.test", Now: func() time.Time { return f.clock },
		Mail: func(_ string, r Report) error { mailed++; success = int64(r.Policies[0].Summary.Success); return nil }})
	if n, err := rep.SendDue(context.Background()); n != 0 || err != nil || mailed != 0 {
		t.Fatalf("two minutes after midnight: sent %d, %v", n, err)
	}
	// A late flush from another node adds to the same day's counts.
	f.db.Update(func(tx *storage.Tx) error { return tx.AddTLSCount(today-1, "example.test", "sts", "", 1) })
	f.clock = f.clock.Add(ReportGrace)
	if n, err := rep.SendDue(context.Background()); n != 1 || err != nil || mailed != 1 {
		t.Fatalf("after the grace: sent %d (%d mailed), %v", n, mailed, err)
	}
	if success != 6 {
		t.Errorf("one report of %d sessions, want 6", success)
	}
}
