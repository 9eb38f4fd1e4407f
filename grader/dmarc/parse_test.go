package dmarc

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	with := func(f func(r *Record)) *Record {
		r := defaultRecord()
		f(&r)
		return &r
	}
	for _, tc := range []struct {
		name     string
		txt      string
		want     *Record // Warnings not compared
		err      error
		warnings int
	}{
		{"minimal", "v=DMARC1; p=none", with(func(r *Record) { r.Policy = PolicyNone }), nil, 0},
		{"no separator after p", "v=DMARC1;p=reject", with(func(r *Record) { r.Policy = PolicyReject }), nil, 0},
		{"all tags", "v=DMARC1; p=quarantine; sp=reject; np=reject; adkim=s; aspf=s; pct=50; " +
			"rua=mailto:agg@example.com!10m, https://r.example.net/dmarc; ruf=mailto:f@example.com; fo=1:d; rf=afrf; ri=3600;",
			with(func(r *Record) {
				r.Policy, r.SubdomainPolicy, r.NonexistentPolicy = PolicyQuarantine, PolicyReject, PolicyReject
				r.DKIMAlignment, r.SPFAlignment, r.Percent = Strict, Strict, 50
				r.AggregateReports = []ReportURI{{"mailto:agg@example.com", 10 << 20}, {"https://r.example.net/dmarc", 0}}
				r.FailureReports = []ReportURI{{"mailto:f@example.com", 0}}
				r.FailureOptions, r.ReportFormats, r.ReportInterval = []string{"1", "d"}, []string{"afrf"}, time.Hour
			}), nil, 0},
		{"white space and case", "  V = DMARC1 ;\tP = Reject ; ADKIM = S ;", with(func(r *Record) {
			r.Policy, r.DKIMAlignment = PolicyReject, Strict
		}), nil, 0},
		{"unknown tags ignored", "v=DMARC1; p=none; foo=bar; x=", with(func(r *Record) { r.Policy = PolicyNone }), nil, 0},

		// §6.6.3 steps 2 and 6: what is not a record, and what is invalid.
		{"not DMARC", "v=spf1 -all", nil, ErrNotDMARC, 0},
		{"version later", "p=reject; v=DMARC1", nil, ErrNotDMARC, 0},
		{"version case", "v=dmarc1; p=reject", nil, ErrNotDMARC, 0},
		{"other version", "v=DMARC10; p=reject", nil, ErrNotDMARC, 0},
		{"empty", "", nil, ErrNotDMARC, 0},
		{"p missing", "v=DMARC1; adkim=s", nil, ErrInvalidRecord, 0},
		{"p unknown", "v=DMARC1; p=block", nil, ErrInvalidRecord, 0},
		{"p empty", "v=DMARC1; p=", nil, ErrInvalidRecord, 0},
		{"sp unknown", "v=DMARC1; p=reject; sp=maybe", nil, ErrInvalidRecord, 0},
		{"missing separator", "v=DMARC1 p=reject", nil, ErrInvalidRecord, 0},
		{"p unknown, rua valid", "v=DMARC1; p=block; sp=reject; rua=mailto:a@example.com", with(func(r *Record) {
			r.Policy, r.PolicyFallback = PolicyNone, true
			r.AggregateReports = []ReportURI{{"mailto:a@example.com", 0}}
		}), nil, 1},
		{"p missing, rua invalid", "v=DMARC1; rua=a@example.com", nil, ErrInvalidRecord, 0},

		// §6.3: other syntax errors drop their tag.
		{"bad optional tags", "v=DMARC1; p=reject; adkim=x; aspf=; pct=150; fo=2; rf=a!b; ri=-1; np=soft",
			with(func(r *Record) { r.Policy = PolicyReject }), nil, 7},
		{"p not second", "v=DMARC1; rua=mailto:a@example.com; p=reject", with(func(r *Record) {
			r.Policy = PolicyReject
			r.AggregateReports = []ReportURI{{"mailto:a@example.com", 0}}
		}), nil, 1},
		{"duplicate tag keeps first", "v=DMARC1; p=reject; p=none", with(func(r *Record) { r.Policy = PolicyReject }), nil, 1},
		{"one bad URI of two", "v=DMARC1; p=none; rua=nonsense, mailto:a@example.com!5k, mailto:b@example.com!x", with(func(r *Record) {
			r.Policy = PolicyNone
			r.AggregateReports = []ReportURI{{"mailto:a@example.com", 5 << 10}}
		}), nil, 2},
		{"junk term", "v=DMARC1; p=none; junk", with(func(r *Record) { r.Policy = PolicyNone }), nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.txt)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("Parse(%q) error %v, want %v", tc.txt, err, tc.err)
			}
			if err != nil {
				return
			}
			if len(got.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", got.Warnings, tc.warnings)
			}
			got.Warnings = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q)\n got  %+v\n want %+v", tc.txt, got, tc.want)
			}
		})
	}
}

// TestParsePercent covers pct (§6.3, §6.4: 1*3DIGIT, 0 to 100); anything
// else keeps the default 100 with a warning.
func TestParsePercent(t *testing.T) {
	for _, tc := range []struct {
		pct  string
		want int
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"50", 50, true},
		{"050", 50, true},
		{"100", 100, true},
		{" 25 ", 25, true},
		{"101", 100, false},
		{"0050", 100, false},
		{"-1", 100, false},
		{"+5", 100, false},
		{"5.5", 100, false},
		{"abc", 100, false},
		{"", 100, false},
		{"99999999999999999999", 100, false},
	} {
		rec, err := Parse("v=DMARC1; p=reject; pct=" + tc.pct)
		if err != nil {
			t.Fatalf("pct=%q: %v", tc.pct, err)
		}
		if rec.Percent != tc.want || (len(rec.Warnings) == 0) != tc.ok {
			t.Errorf("pct=%q: got %d with warnings %q, want %d (valid %v)", tc.pct, rec.Percent, rec.Warnings, tc.want, tc.ok)
		}
	}
}

func TestRecordString(t *testing.T) {
	for _, txt := range []string{
		"v=DMARC1; p=none",
		"v=DMARC1; p=reject; sp=quarantine; np=reject; adkim=s; aspf=s; pct=10; rua=mailto:a@example.com!1024,mailto:b@example.com; ruf=mailto:c@example.com; fo=1:d:s; rf=afrf:iodef; ri=600",
	} {
		rec, err := Parse(txt)
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.String(); got != txt {
			t.Errorf("String() = %q, want %q", got, txt)
		}
	}
}
