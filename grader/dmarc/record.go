package dmarc

import (
	"strconv"
	"strings"
	"time"
)

// Policy is a requested Mail Receiver policy (RFC 7489 §6.3 "p").
type Policy string

// The three policies of §6.3, from the weakest.
const (
	PolicyNone       Policy = "none"       // monitor only
	PolicyQuarantine Policy = "quarantine" // treat as suspicious
	PolicyReject     Policy = "reject"     // refuse during the SMTP transaction
)

// Alignment is an identifier alignment mode (§3.1, tags "adkim" and "aspf").
type Alignment string

// The two alignment modes of §3.1.
const (
	Relaxed Alignment = "r" // organizational domains equal (the default)
	Strict  Alignment = "s" // domains equal
)

// Defaults of the optional tags (§6.3).
const (
	DefaultPercent        = 100
	DefaultReportInterval = 86400 * time.Second
)

// ReportURI is one entry of "rua" or "ruf" (§6.2, §6.3).
type ReportURI struct {
	// Address is the URI, e.g. "mailto:dmarc@example.com".
	Address string
	// MaxSize is the largest report in bytes the receiver accepts (the
	// "!size" suffix with its k, m, g or t unit applied), 0 when unlimited.
	MaxSize uint64
}

// Record is a parsed DMARC policy record (§6.3). Tags the record leaves out
// hold their defaults, except sp and np, which are "" when absent (p then
// applies in their place).
type Record struct {
	Policy            Policy    // p
	SubdomainPolicy   Policy    // sp; "" when absent
	NonexistentPolicy Policy    // np (RFC 9091 §4.1); "" when absent
	DKIMAlignment     Alignment // adkim; Relaxed by default
	SPFAlignment      Alignment // aspf; Relaxed by default
	// Percent is the share of failing messages the policy is meant for
	// (pct, 0 to 100; DefaultPercent by default), see Result.Disposition.
	Percent          int
	AggregateReports []ReportURI   // rua, the valid URIs only
	FailureReports   []ReportURI   // ruf, the valid URIs only
	FailureOptions   []string      // fo: "0", "1", "d", "s"; ["0"] by default
	ReportFormats    []string      // rf; ["afrf"] by default
	ReportInterval   time.Duration // ri; DefaultReportInterval by default

	// PolicyFallback is set when p was missing or invalid, or sp invalid,
	// and the record is read as "p=none" because rua holds a valid URI
	// (§6.6.3 step 6.1).
	PolicyFallback bool
	// Warnings describe the syntax errors that were discarded (§6.3), for
	// findings; they do not change the evaluation beyond what the fields
	// say.
	Warnings []string
}

func defaultRecord() Record {
	return Record{
		DKIMAlignment:  Relaxed,
		SPFAlignment:   Relaxed,
		Percent:        DefaultPercent,
		FailureOptions: []string{"0"},
		ReportFormats:  []string{"afrf"},
		ReportInterval: DefaultReportInterval,
	}
}

// String writes the record as a TXT value: "v=DMARC1; p=…" and then the
// tags whose values differ from the defaults, so that publishing it means
// what the fields say.
func (r *Record) String() string {
	var b strings.Builder
	b.WriteString("v=DMARC1; p=")
	b.WriteString(string(r.Policy))
	tag := func(name, value string) {
		b.WriteString("; ")
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(value)
	}
	if r.SubdomainPolicy != "" {
		tag("sp", string(r.SubdomainPolicy))
	}
	if r.NonexistentPolicy != "" {
		tag("np", string(r.NonexistentPolicy))
	}
	if r.DKIMAlignment == Strict {
		tag("adkim", "s")
	}
	if r.SPFAlignment == Strict {
		tag("aspf", "s")
	}
	if r.Percent != DefaultPercent {
		tag("pct", strconv.Itoa(r.Percent))
	}
	if len(r.AggregateReports) > 0 {
		tag("rua", uriList(r.AggregateReports))
	}
	if len(r.FailureReports) > 0 {
		tag("ruf", uriList(r.FailureReports))
	}
	if len(r.FailureOptions) > 0 && !(len(r.FailureOptions) == 1 && r.FailureOptions[0] == "0") {
		tag("fo", strings.Join(r.FailureOptions, ":"))
	}
	if len(r.ReportFormats) > 0 && !(len(r.ReportFormats) == 1 && r.ReportFormats[0] == "afrf") {
		tag("rf", strings.Join(r.ReportFormats, ":"))
	}
	if r.ReportInterval != DefaultReportInterval {
		tag("ri", strconv.FormatInt(int64(r.ReportInterval/time.Second), 10))
	}
	return b.String()
}

func uriList(uris []ReportURI) string {
	parts := make([]string, len(uris))
	for i, u := range uris {
		parts[i] = u.Address
		if u.MaxSize > 0 {
			parts[i] += "!" + strconv.FormatUint(u.MaxSize, 10)
		}
	}
	return strings.Join(parts, ",")
}
