package transport

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"mailbolt/mta/tlspolicy"
	"mailbolt/storage"
)

// Report is an aggregate TLS report (RFC 8460 §4) for one recipient domain
// and one UTC day.
type Report struct {
	OrganizationName string         `json:"organization-name"`
	DateRange        DateRange      `json:"date-range"`
	ContactInfo      string         `json:"contact-info"`
	ReportID         string         `json:"report-id"`
	Policies         []PolicyResult `json:"policies"`
}

// DateRange is the report's period.
type DateRange struct {
	Start time.Time `json:"start-datetime"`
	End   time.Time `json:"end-datetime"`
}

// PolicyResult is the sessions of one policy type.
type PolicyResult struct {
	Policy         ReportPolicy    `json:"policy"`
	Summary        Summary         `json:"summary"`
	FailureDetails []FailureDetail `json:"failure-details,omitempty"`
}

// ReportPolicy names the policy the sessions ran under.
type ReportPolicy struct {
	Type   string   `json:"policy-type"` // sts, tlsa, no-policy-found
	String []string `json:"policy-string,omitempty"`
	Domain string   `json:"policy-domain"`
	MXHost []string `json:"mx-host,omitempty"`
}

// Summary counts the sessions.
type Summary struct {
	Success uint64 `json:"total-successful-session-count"`
	Failure uint64 `json:"total-failure-session-count"`
}

// FailureDetail counts the sessions of one failure type.
type FailureDetail struct {
	ResultType string `json:"result-type"`
	Count      uint64 `json:"failed-session-count"`
}

// BuildReports turns the counts of one day into one report per recipient
// domain, sorted by domain. policy gives the domain's cached MTA-STS
// policy for the sts entries (nil when none is cached).
func BuildReports(day uint32, counts []storage.TLSCount, org, contact string, policy func(domain string) *tlspolicy.Policy) []Report {
	start := time.Unix(int64(day)*86400, 0).UTC()
	byDomain := map[string]*Report{}
	for _, c := range counts {
		if c.Day != day {
			continue
		}
		r := byDomain[c.Domain]
		if r == nil {
			r = &Report{OrganizationName: org, ContactInfo: contact,
				DateRange: DateRange{Start: start, End: start.Add(24*time.Hour - time.Second)},
				ReportID:  fmt.Sprintf("%s.%s@%s", start.Format("2006-01-02"), c.Domain, org)}
			byDomain[c.Domain] = r
		}
		pr := PolicyResult{Policy: ReportPolicy{Type: c.Policy, Domain: c.Domain}, Summary: Summary{Success: c.Success}}
		if c.Policy == "sts" && policy != nil {
			if p := policy(c.Domain); p != nil {
				pr.Policy.String = strings.Split(strings.TrimSuffix(p.String(), "\r\n"), "\r\n")
				pr.Policy.MXHost = p.MX
			}
		}
		types := make([]string, 0, len(c.Failures))
		for t := range c.Failures {
			types = append(types, t)
		}
		sort.Strings(types)
		for _, t := range types {
			pr.Summary.Failure += c.Failures[t]
			pr.FailureDetails = append(pr.FailureDetails, FailureDetail{ResultType: t, Count: c.Failures[t]})
		}
		r.Policies = append(r.Policies, pr)
	}
	out := make([]Report, 0, len(byDomain))
	for _, r := range byDomain {
		sort.Slice(r.Policies, func(i, j int) bool { return r.Policies[i].Policy.Type < r.Policies[j].Policy.Type })
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Policies[0].Policy.Domain < out[j].Policies[0].Policy.Domain })
	return out
}

// Gzip is the report as sent: JSON, gzip-compressed (RFC 8460 §5.3).
func (r Report) Gzip() ([]byte, error) {
	js, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(js)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Domain is the recipient domain the report is about.
func (r Report) Domain() string {
	if len(r.Policies) == 0 {
		return ""
	}
	return r.Policies[0].Policy.Domain
}

// filename is the report's attachment name (RFC 8460 §5.3).
func (r Report) filename() string {
	return fmt.Sprintf("%s!%s!%d!%d.json.gz", r.OrganizationName, r.Domain(), r.DateRange.Start.Unix(), r.DateRange.End.Unix())
}

// Message is the report as an email (RFC 8460 §5.3): multipart/report with
// report-type tlsrpt, a human-readable part and the gzip JSON as
// application/tlsrpt+gzip; CRLF line endings, unsigned (the sender signs
// it with the --system-from domain's key).
func (r Report) Message(from, to, messageID string, date time.Time) ([]byte, error) {
	gz, err := r.Gzip()
	if err != nil {
		return nil, err
	}
	boundary := fmt.Sprintf("tlsrpt-%x", date.UnixNano())
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", from)
	h("To", to)
	h("Date", date.UTC().Format(time.RFC1123Z))
	h("Message-ID", messageID)
	h("Subject", fmt.Sprintf("Report Domain: %s Submitter: %s Report-ID: <%s>", r.Domain(), r.OrganizationName, r.ReportID))
	h("TLS-Report-Domain", r.Domain())
	h("TLS-Report-Submitter", r.OrganizationName)
	h("MIME-Version", "1.0")
	h("Content-Type", fmt.Sprintf(`multipart/report; report-type="tlsrpt"; boundary="%s"`, boundary))
	b.WriteString("\r\n")
	fmt.Fprintf(&b, "--%s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n", boundary)
	fmt.Fprintf(&b, "This is an aggregate TLS report (RFC 8460) from %s for %s, %s.\r\n\r\n",
		r.OrganizationName, r.Domain(), r.DateRange.Start.Format("2006-01-02"))
	fmt.Fprintf(&b, "--%s\r\nContent-Type: application/tlsrpt+gzip\r\nContent-Transfer-Encoding: base64\r\n", boundary)
	fmt.Fprintf(&b, "Content-Disposition: attachment; filename=\"%s\"\r\n\r\n", r.filename())
	enc := base64.StdEncoding.EncodeToString(gz)
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes(), nil
}

// UploadGzip posts a report, compressed (Report.Gzip), to an https: rua
// (RFC 8460 §5.2) through the same guarded, bounded client as policy
// fetches; 2xx is success. A retry posts the bytes stored at the first
// attempt. The address guard applies at every connection, to the
// addresses the rua's host has then.
func (s *STS) UploadGzip(ctx context.Context, url string, gz []byte) error {
	if !strings.HasPrefix(strings.ToLower(url), "https://") {
		return fmt.Errorf("TLS report upload to %s: not an https: address", url)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(gz))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/tlsrpt+gzip")
	resp, err := s.upload.Do(req)
	if err != nil {
		return fmt.Errorf("TLS report upload to %s: %w", url, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("TLS report upload to %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}
