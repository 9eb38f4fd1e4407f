package web

import (
	"strings"
	"testing"
)

// publishSetup adds name as a sending domain and publishes exactly the
// records domain setup lists for it (DKIM, SPF, return path, DMARC), then
// verifies it.
func (e *env) publishSetup(t *testing.T, name string) (selector string) {
	t.Helper()
	d := e.do("POST", "/v1/domains", e.key, `{"name":"`+name+`"}`).want(t, 201).json(t)
	for _, r := range d["records"].([]any) {
		rec := r.(map[string]any)
		switch rec["type"] {
		case "TXT":
			e.zone.LongTXT(rec["name"].(string), joinTXT(rec["value"].(string)))
		case "CNAME":
			e.zone.CNAME(rec["name"].(string), rec["value"].(string))
		}
	}
	v := e.do("POST", "/v1/domains/"+d["id"].(string)+"/verify", e.key, nil).want(t, 200).json(t)
	if v["status"] != "verified" || record(t, v, "dmarc", "")["status"] != "verified" {
		t.Fatalf("domain not verified with every record: %v", v)
	}
	return v["dkim_selector"].(string)
}

// agreesWithSetup fails when a grader answer contradicts domain setup: its
// DKIM key not found, or ~all / p=none with reports called a fault rather
// than the monitoring stage.
func agreesWithSetup(t *testing.T, m map[string]any, selector string) {
	t.Helper()
	foundKey, stage := false, false
	for _, f := range m["findings"].([]any) {
		f := f.(map[string]any)
		msg := f["message"].(string)
		if strings.Contains(msg, "DKIM key "+selector+"._domainkey.") && strings.Contains(msg, "2048-bit RSA") {
			foundKey = true
		}
		if strings.Contains(msg, "at the monitoring stage") {
			stage = true
		}
		if f["severity"] == "info" {
			continue
		}
		for _, bad := range []string{"DKIM", "~all", "softfail", "p=none", "SPF", "DMARC", "enforcing"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%s finding contradicts domain setup: %s", f["severity"], msg)
				break
			}
		}
	}
	if !foundKey {
		t.Errorf("the domain's own DKIM key (%s) was not found: %v", selector, m["findings"])
	}
	if !stage {
		t.Errorf("no finding naming the monitoring stage: %v", m["findings"])
	}
	for _, r := range m["recommendations"].([]any) {
		r := r.(string)
		if (strings.Contains(r, "-all") || strings.Contains(r, "p=quarantine") || strings.Contains(r, "DKIM")) && !strings.HasPrefix(r, "Next stage:") {
			t.Errorf("recommendation contradicts domain setup: %s", r)
		}
	}
	if a := m["breakdown"].(map[string]any)["authentication"].(map[string]any); a["score"].(float64) < 70 {
		t.Errorf("authentication %v for a domain set up as advised", a)
	}
}

// TestGraderAgreesWithDomainSetup grades a domain Mailbolt verified, with
// exactly the records domain setup lists, through the API: the public
// check and a submission of the raw message alone, with "to" as a string.
func TestGraderAgreesWithDomainSetup(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), nil)
	sel := e.publishSetup(t, "setup.test")

	m := e.do("POST", "/v1/grader/check", "", map[string]any{"domain": "Setup.Test"}).want(t, 200).json(t)
	agreesWithSetup(t, m, sel)

	raw := "From: Setup <news@setup.test>\r\nTo: someone@example.test\r\nSubject: =?utf-8?q?Your_receipt_=E2=9C=93?=\r\n" +
		"Date: Mon, 23 Nov 2026 12:00:00 +0000\r\nMessage-ID: <1@setup.test>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
		strings.Repeat("Thank you for your order. Your receipt is attached. ", 5) + "\r\n"
	s := e.do("POST", "/v1/grader/submit", e.key, map[string]any{"raw": raw}).want(t, 201).json(t)
	if s["domain"] != "setup.test" {
		t.Fatalf("submission graded for %v, want the From domain of raw: %s", s["domain"], s)
	}
	agreesWithSetup(t, s, sel)
	for _, f := range s["findings"].([]any) {
		if msg := f.(map[string]any)["message"].(string); strings.Contains(msg, "SUBJECT_EMPTY") || strings.Contains(msg, "FROM_MISSING") || strings.Contains(msg, "subject") && f.(map[string]any)["severity"] != "info" {
			t.Errorf("From or Subject not taken from raw: %s", msg)
		}
	}
}

// TestGraderSubmitToForms: "to" is one address or an array, as in the
// messages API; anything else is 400 INVALID_INPUT.
func TestGraderSubmitToForms(t *testing.T) {
	e := newGraderEnv(t, DefaultConfig(), nil)
	for _, to := range []any{"someone@example.test", []string{"a@example.test", "b@example.test"}} {
		s := goodSubmission()
		s["to"] = to
		e.do("POST", "/v1/grader/submit", e.key, s).want(t, 201)
	}
	s := goodSubmission()
	s["to"] = "not an address"
	e.do("POST", "/v1/grader/submit", e.key, s).want(t, 400, "INVALID_INPUT")
	s["to"] = 5
	e.do("POST", "/v1/grader/submit", e.key, s).want(t, 400, "INVALID_INPUT")
	// With only raw and no From header, from is still required.
	e.do("POST", "/v1/grader/submit", e.key, map[string]any{"raw": "Subject: hi\r\n\r\nbody\r\n"}).want(t, 400, "INVALID_INPUT")
}
