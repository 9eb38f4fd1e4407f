package transport

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/mail"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/tlspolicy"
	"mailbolt/storage"
)

func gunzipReport(t *testing.T, gz []byte) map[string]any {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := io.ReadAll(zr)
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReportFromCounts(t *testing.T) {
	day := Day(time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC))
	counts := []storage.TLSCount{
		{Day: day, Domain: "b.test", Policy: "no-policy-found", Success: 4},
		{Day: day, Domain: "a.test", Policy: "sts", Success: 3, Failures: map[string]uint64{"certificate-expired": 1, "starttls-not-supported": 2}},
		{Day: day - 1, Domain: "a.test", Policy: "sts", Success: 100},
	}
	pol, _ := tlspolicy.ParsePolicy([]byte("version: STSv1\nmode: enforce\nmx: mx.a.test\nmax_age: 86400\n"))
	reports := BuildReports(day, counts, "mta.mailbolt.test", "mailto:postmaster@mailbolt.test", func(d string) *tlspolicy.Policy {
		if d == "a.test" {
			return pol
		}
		return nil
	})
	if len(reports) != 2 || reports[0].Domain() != "a.test" {
		t.Fatalf("%+v", reports)
	}
	gz, err := reports[0].Gzip()
	if err != nil {
		t.Fatal(err)
	}
	v := gunzipReport(t, gz)
	p := v["policies"].([]any)[0].(map[string]any)
	sum := p["summary"].(map[string]any)
	if v["organization-name"] != "mta.mailbolt.test" || v["date-range"].(map[string]any)["start-datetime"] != "2026-11-25T00:00:00Z" ||
		sum["total-successful-session-count"] != 3.0 || sum["total-failure-session-count"] != 3.0 ||
		p["policy"].(map[string]any)["policy-type"] != "sts" || p["policy"].(map[string]any)["mx-host"].([]any)[0] != "mx.a.test" ||
		len(p["failure-details"].([]any)) != 2 {
		t.Fatalf("report %v", v)
	}

	raw, err := reports[0].Message("TLS reports <tls@mailbolt.test>", "tls@a.test", "<r1@mailbolt.test>", time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if mt != "multipart/report" || params["report-type"] != "tlsrpt" || msg.Header.Get("TLS-Report-Domain") != "a.test" ||
		!strings.Contains(msg.Header.Get("Subject"), "Report-ID: <2026-11-25.a.test@mta.mailbolt.test>") {
		t.Fatalf("header %v", msg.Header)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	mr.NextPart()
	part, err := mr.NextPart()
	if err != nil || part.Header.Get("Content-Type") != "application/tlsrpt+gzip" || !strings.HasSuffix(part.FileName(), ".json.gz") {
		t.Fatalf("report part %v %v", part, err)
	}
	b64, _ := io.ReadAll(part)
	gz2, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b64), "\r\n", ""))
	if err != nil || gunzipReport(t, gz2)["report-id"] != v["report-id"] {
		t.Fatalf("attachment: %v", err)
	}
}

func TestReportUploadThroughTheGuard(t *testing.T) {
	f := setup(t)
	var got []byte
	var ctype string
	f.ps.set(func(w http.ResponseWriter, r *http.Request) {
		ctype = r.Header.Get("Content-Type")
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	f.zone.A("reports.example.test", "127.0.0.1")
	// The policy server's certificate is for mta-sts.example.test: the
	// upload goes there by that name, on the URL's port.
	r := Report{OrganizationName: "mta.mailbolt.test", ReportID: "x", Policies: []PolicyResult{{Policy: ReportPolicy{Type: "sts", Domain: "example.test"}}}}
	url := "https://mta-sts.example.test:" + strings.TrimPrefix(f.ps.srv.URL[strings.LastIndexByte(f.ps.srv.URL, ':'):], ":") + "/tlsrpt"
	gz, err := r.Gzip()
	if err != nil {
		t.Fatal(err)
	}
	s := f.sts()
	if err := s.UploadGzip(context.Background(), url, gz); err != nil {
		t.Fatal(err)
	}
	if ctype != "application/tlsrpt+gzip" || gunzipReport(t, got)["report-id"] != "x" {
		t.Fatalf("server got %q %q", ctype, got)
	}
	s.o.Guard.Allow = nil // loopback refused again
	s = NewSTS(s.o)
	if err := s.UploadGzip(context.Background(), url, gz); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("guard: %v", err)
	}
}
