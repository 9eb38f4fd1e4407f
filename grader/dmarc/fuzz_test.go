package dmarc

import (
	"context"
	"errors"
	"reflect"
	"testing"

	msgauth "github.com/emersion/go-msgauth/dmarc"

	"mailbolt/grader/spf"
)

// FuzzParse feeds arbitrary TXT records to the parser (go test
// -fuzz=FuzzParse). Nothing may panic; a rejection is ErrNotDMARC or
// ErrInvalidRecord; an accepted record has only valid values, writes back
// (Record.String) to a record that parses the same without warnings,
// agrees with go-msgauth's parser wherever both accept a clean record, and
// gives Evaluate the result the parse promises.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"v=DMARC1; p=none",
		"v=DMARC1;p=reject;sp=quarantine;np=reject;adkim=s;aspf=r;pct=50",
		"v=DMARC1; p=quarantine; rua=mailto:a@example.com!10m, https://r.example.net/x; ruf=mailto:f@example.com; fo=1:d:s; rf=afrf; ri=3600",
		"  V = DMARC1 ;\tP = Reject ;",
		"v=DMARC1; p=bogus; rua=mailto:a@example.com",
		"v=DMARC1 p=reject",
		"v=DMARC1; rua=mailto:a@example.com; p=reject; p=none",
		"v=DMARC1; p=reject; pct=0050; ri=-1; fo=2; rf=-x",
		"v=spf1 -all",
		"p=reject; v=DMARC1",
		"v=DMARC1; p=none; rua=mailto:x@example.com!18446744073709551615t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, txt string) {
		rec, err := Parse(txt)
		if err != nil {
			if rec != nil || !errors.Is(err, ErrNotDMARC) && !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("Parse(%q) = %v, %v", txt, rec, err)
			}
		} else {
			checkValid(t, txt, rec)
			checkRoundTrip(t, txt, rec)
			checkAgainstMsgauth(t, txt, rec)
		}

		z := &zone{txt: map[string][]string{"_dmarc.example.com": {txt}}}
		res, eerr := Evaluate(context.Background(), z, "example.com", SPFResult{spf.Pass, "example.com"}, nil)
		var want Status
		switch {
		case err == nil:
			want = Pass
		case errors.Is(err, ErrInvalidRecord):
			want = PermError
		default:
			want = None
		}
		if res.Result != want || (eerr != nil) != (want == PermError) {
			t.Fatalf("Evaluate with %q: %s, %v; want %s", txt, res.Result, eerr, want)
		}
	})
}

func checkValid(t *testing.T, txt string, rec *Record) {
	t.Helper()
	policy := func(p Policy, optional bool) bool {
		return p == PolicyNone || p == PolicyQuarantine || p == PolicyReject || optional && p == ""
	}
	if !policy(rec.Policy, false) || !policy(rec.SubdomainPolicy, true) || !policy(rec.NonexistentPolicy, true) ||
		rec.DKIMAlignment != Relaxed && rec.DKIMAlignment != Strict || rec.SPFAlignment != Relaxed && rec.SPFAlignment != Strict ||
		rec.Percent < 0 || rec.Percent > 100 || len(rec.FailureOptions) == 0 || len(rec.ReportFormats) == 0 {
		t.Fatalf("Parse(%q) accepted invalid values: %+v", txt, rec)
	}
	if rec.PolicyFallback && (len(rec.AggregateReports) == 0 || rec.Policy != PolicyNone) {
		t.Fatalf("Parse(%q): fallback without rua: %+v", txt, rec)
	}
}

// checkRoundTrip writes rec back and parses it again.
func checkRoundTrip(t *testing.T, txt string, rec *Record) {
	t.Helper()
	out := rec.String()
	again, err := Parse(out)
	if err != nil {
		t.Fatalf("%q parsed, but its rewrite %q does not: %v", txt, out, err)
	}
	if len(again.Warnings) > 0 {
		t.Fatalf("%q: rewrite %q has warnings %q", txt, out, again.Warnings)
	}
	want := *rec
	want.Warnings, want.PolicyFallback = nil, false
	if !reflect.DeepEqual(*again, want) {
		t.Fatalf("%q: rewrite %q parses as\n %+v\nnot\n %+v", txt, out, *again, want)
	}
}

// checkAgainstMsgauth compares the tags both parsers know, for records
// that ours reads without any warning and that are plain ASCII (go-msgauth
// trims Unicode white space, RFC 7489 only SP and HTAB).
func checkAgainstMsgauth(t *testing.T, txt string, rec *Record) {
	t.Helper()
	if len(rec.Warnings) > 0 || rec.PolicyFallback {
		return
	}
	for i := 0; i < len(txt); i++ {
		if (txt[i] < ' ' || txt[i] > '~') && txt[i] != '\t' {
			return
		}
	}
	other, err := msgauth.Parse(txt)
	if err != nil {
		return // stricter: case of keywords, rf values, ...
	}
	if string(other.Policy) != string(rec.Policy) ||
		string(other.SubdomainPolicy) != string(rec.SubdomainPolicy) ||
		string(other.DKIMAlignment) != string(rec.DKIMAlignment) ||
		string(other.SPFAlignment) != string(rec.SPFAlignment) ||
		other.Percent != nil && *other.Percent != rec.Percent {
		t.Fatalf("%q: go-msgauth reads %+v, we read %+v", txt, other, rec)
	}
}
