package web

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/mta"
	"mailbolt/mta/smtptest"
	"mailbolt/mta/transport"
	"mailbolt/storage"
)

// A TLS report goes from --system-from through the normal queue to the
// rua address: multipart/report with the gzip JSON, DKIM-signed with the
// system sender's domain key, carrying the counts it was built from.
func TestTLSReportReachesTheRuaThroughTheQueue(t *testing.T) {
	e, sink := newDeliveringEnv(t, DefaultConfig(), smtptest.Options{}, func(o *app.Options, mo *mta.Options) {
		o.SystemFrom = "TLS reports <tls-reports@acme.test>"
	})

	day := transport.Day(e.clock.Now()) - 1
	reports := transport.BuildReports(day, []storage.TLSCount{{Day: day, Domain: "dest.test", Policy: "sts", Success: 7,
		Failures: map[string]uint64{"starttls-not-supported": 3}}}, "mx.mailbolt.test", "mailto:tls-reports@acme.test", nil)
	r := reports[0]
	id, err := e.app.SendSystemRaw("tls@dest.test", "TLS report", "attached", []string{"tls-report"},
		func(from, messageID string, date time.Time) ([]byte, error) {
			return r.Message(from, "tls@dest.test", messageID, date)
		})
	if err != nil {
		t.Fatal(err)
	}
	e.runWorkers()
	if !sink.WaitFor(1, 15*time.Second) {
		t.Fatal("the report did not arrive")
	}
	got := sink.Messages()[0]
	if got.To[0] != "tls@dest.test" || !bytes.HasPrefix(got.Data, []byte("DKIM-Signature:")) || !strings.Contains(string(got.Data), "d=acme.test") {
		t.Fatalf("arrived unsigned or elsewhere: %v\n%.400s", got.To, got.Data)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got.Data))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if mt != "multipart/report" || params["report-type"] != "tlsrpt" || !strings.Contains(msg.Header.Get("Message-Id"), id) {
		t.Fatalf("header %v", msg.Header)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	mr.NextPart()
	part, err := mr.NextPart()
	if err != nil || part.Header.Get("Content-Type") != "application/tlsrpt+gzip" {
		t.Fatalf("part %v %v", part, err)
	}
	b64, _ := io.ReadAll(part)
	gz, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b64), "\r\n", ""))
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	var rep transport.Report
	if err := json.NewDecoder(zr).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if s := rep.Policies[0].Summary; s.Success != 7 || s.Failure != 3 || rep.Policies[0].FailureDetails[0].ResultType != "starttls-not-supported" {
		t.Fatalf("report %+v", rep)
	}
}
