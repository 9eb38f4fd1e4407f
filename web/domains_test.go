package web

import (
	"strings"
	"testing"

	"mailbolt/mta/dkim"
)

// joinTXT is dkim.JoinTXT, for tests whose variables are named dkim.
var joinTXT = dkim.JoinTXT

// record finds the record of a purpose (and, for DKIM, selector) in a
// domain answer.
func record(t *testing.T, d map[string]any, purpose, selector string) map[string]any {
	t.Helper()
	for _, r := range d["records"].([]any) {
		rec := r.(map[string]any)
		if rec["purpose"] == purpose && (selector == "" || rec["selector"] == selector) {
			return rec
		}
	}
	t.Fatalf("no %s record in %v", purpose, d["records"])
	return nil
}

func TestDomainLifecycleOverHTTP(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	created := e.do("POST", "/v1/domains", e.key, `{"name":"Mail.Example.TEST"}`).want(t, 201)
	d := created.json(t)
	id := d["id"].(string)
	if d["name"] != "mail.example.test" || d["status"] != "pending" || d["dkim_algorithm"] != "rsa-2048" || d["dkim_selector"] != nil {
		t.Fatalf("created %v", d)
	}
	if created.Header.Get("Location") != "/v1/domains/"+id {
		t.Errorf("Location %q", created.Header.Get("Location"))
	}
	if strings.Contains(string(created.body), "PRIVATE") || strings.Contains(string(created.body), "private") {
		t.Fatal("private key in the answer")
	}
	e.do("POST", "/v1/domains", e.key, `{"name":"mail.example.test"}`).want(t, 409, "CONFLICT")
	e.do("POST", "/v1/domains", e.key, `{"name":"co.uk"}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/domains", e.key, `{"name":"x.test","dkim_algorithm":"dsa"}`).want(t, 400, "VALIDATION_ERROR")

	// Publish what the answer says, exactly as shown.
	key := record(t, d, "dkim", "")
	e.zone.LongTXT(key["name"].(string), dkim.JoinTXT(key["value"].(string)))
	spf := record(t, d, "spf", "")
	e.zone.TXT(spf["name"].(string), spf["value"].(string))
	v := e.do("POST", "/v1/domains/"+id+"/verify", e.key, nil).want(t, 200).json(t)
	if v["status"] != "verified" || record(t, v, "dkim", "")["status"] != "verified" || record(t, v, "dmarc", "")["status"] != "missing" {
		t.Fatalf("verify: %v", v)
	}
	if v["dkim_selector"] != key["selector"] || v["verified_at"] == nil || v["last_checked_at"] == nil {
		t.Errorf("after verify: %v", v)
	}

	// Rotation: two DKIM records, the new one inactive until it verifies.
	rot := e.do("POST", "/v1/domains/"+id+"/dkim/rotate", e.key, `{"dkim_algorithm":"ed25519"}`).want(t, 200).json(t)
	var next map[string]any
	for _, r := range rot["records"].([]any) {
		rec := r.(map[string]any)
		if rec["purpose"] == "dkim" && rec["selector"] != key["selector"] {
			next = rec
		}
	}
	if next == nil || next["active"] != false || !strings.Contains(next["value"].(string), "k=ed25519") {
		t.Fatalf("rotation records: %v", rot["records"])
	}
	// dkim_algorithm is the newest key's while the old one still signs.
	if rot["dkim_algorithm"] != "ed25519" || rot["dkim_selector"] != key["selector"] {
		t.Errorf("during the rotation: dkim_algorithm %v, dkim_selector %v (signing %v)", rot["dkim_algorithm"], rot["dkim_selector"], key["selector"])
	}
	e.do("POST", "/v1/domains/"+id+"/dkim/rotate", e.key, nil).want(t, 409, "CONFLICT")
	e.zone.TXT(next["name"].(string), next["value"].(string))
	v = e.do("POST", "/v1/domains/"+id+"/verify", e.key, nil).want(t, 200).json(t)
	if v["dkim_selector"] != next["selector"] || record(t, v, "dkim", key["selector"].(string))["removable_after"] == nil {
		t.Fatalf("after publishing the new key: %v", v)
	}

	// Reading, listing and tenancy.
	e.do("GET", "/v1/domains/"+id, e.key, nil).want(t, 200)
	list := e.do("GET", "/v1/domains?page=1", e.key, nil).want(t, 200).json(t)
	if list["total"] != 1.0 {
		t.Errorf("list %v", list)
	}
	_, other := e.account("other", "enterprise", 100000)
	for _, c := range [][2]string{{"GET", ""}, {"DELETE", ""}, {"POST", "/verify"}, {"POST", "/dkim/rotate"}} {
		e.do(c[0], "/v1/domains/"+id+c[1], other, nil).want(t, 404, "NOT_FOUND")
	}
	readOnly := e.newKey(e.acct.ID, []string{"domains:read"}, false, nil)
	e.do("POST", "/v1/domains/"+id+"/verify", readOnly, nil).want(t, 403, "INSUFFICIENT_SCOPES")

	e.do("DELETE", "/v1/domains/"+id, e.key, nil).want(t, 204)
	e.do("GET", "/v1/domains/"+id, e.key, nil).want(t, 404, "NOT_FOUND")
}

func TestDomainVerifyReportsDNSFailure(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	d := e.do("POST", "/v1/domains", e.key, `{"name":"flaky.test"}`).want(t, 201).json(t)
	e.zone.ServFail("flaky.test", true)
	v := e.do("POST", "/v1/domains/"+d["id"].(string)+"/verify", e.key, nil).want(t, 200).json(t)
	spf := record(t, v, "spf", "")
	if v["status"] != "pending" || v["check_error"] == nil || spf["status"] != "pending" || spf["error"] == nil {
		t.Fatalf("SERVFAIL: %v", v)
	}
}
