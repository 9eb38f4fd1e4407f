package grader

import (
	"fmt"
	"strings"

	"mailbolt/grader/dnscheck"
)

// Stage is one step of the staged SPF and DMARC advice that domain setup
// and the grader share (docs/domains.md, docs/grader.md): start at ~all
// and p=none with reports, move to -all and p=quarantine or p=reject once
// the reports are clean. The grader names the stage a domain is at, so a
// domain published as domain setup lists is told where it stands and what
// comes next, never that it is misconfigured.
type Stage struct {
	Name  string
	SPF   string // the SPF default of the stage
	DMARC string // the DMARC policy of the stage
}

// Stages are the steps in order. A domain is at the last stage both its
// SPF all term and its DMARC policy have reached: SPF ~all reaches
// "enforcing" at most, p=none with a rua= address "monitoring".
var Stages = []Stage{
	{"monitoring", "~all", "p=none with rua="},
	{"enforcing", "~all or -all", "p=quarantine"},
	{"enforced", "-all", "p=reject"},
}

// stageOf places a dnscheck result on Stages, with the steps that lead
// to the next stage; ok is false when SPF or DMARC is not at any stage
// (missing, broken, ?all, +all, p=none without reports), which other
// findings cover.
func stageOf(dr dnscheck.Result) (s int, next []string, ok bool) {
	points := map[string]dnscheck.RuleScore{}
	for _, r := range dr.Rules {
		points[r.Rule] = r
	}
	full := func(id string) bool { r := points[id]; return r.Judged && r.Points >= r.Weight }
	if !full(dnscheck.RuleSPFRecord) || !full(dnscheck.RuleDMARCRecord) || !points[dnscheck.RuleSPFAll].Judged {
		return 0, nil, false
	}
	spf := 0
	switch points[dnscheck.RuleSPFAll].Points {
	case dnscheck.MonitoringSPFAllPoints:
		spf = 1
	case points[dnscheck.RuleSPFAll].Weight:
		spf = 2
	default:
		return 0, nil, false
	}
	dmarc := 0
	switch dr.DMARCPolicy {
	case "none":
		if !full(dnscheck.RuleDMARCReports) {
			return 0, nil, false
		}
	case "quarantine":
		dmarc = 1
	case "reject":
		dmarc = 2
	default:
		return 0, nil, false
	}
	s = min(spf, dmarc)
	if spf < 2 {
		next = append(next, "end the SPF record with -all")
	}
	switch dmarc {
	case 0:
		next = append(next, "raise the DMARC policy to p=quarantine, then p=reject")
	case 1:
		next = append(next, "raise the DMARC policy to p=reject")
	}
	return s, next, true
}

// addStage reports the stage of the domain's SPF and DMARC as an info
// finding.
func (b *builder) addStage(dr dnscheck.Result) {
	s, next, ok := stageOf(dr)
	if !ok {
		return
	}
	st := Stages[s]
	msg := fmt.Sprintf("SPF and DMARC are at the %s stage (stage %d of %d: SPF %s, DMARC %s)", st.Name, s+1, len(Stages), st.SPF, st.DMARC)
	if len(next) == 0 {
		msg += ", the last one"
	} else {
		msg += "; to reach the next stage once the DMARC reports show only your own mail passing: " + strings.Join(next, " and ")
	}
	b.find(SeverityInfo, DimAuthentication, msg)
}
