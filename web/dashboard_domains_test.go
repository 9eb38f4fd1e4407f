package web

import (
	"html"
	"net/url"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/grader"
	"mailbolt/mta/dns"
)

func TestDashboardDomains(t *testing.T) {
	e := newEnvWith(t, dashConfig(nil), func(o *app.Options) {
		// The grader asks the env's DNS zone too; blocklists are off (the
		// zone would be asked about them).
		o.Grader.Config = grader.Config{
			Resolver:     &dns.Resolver{Server: o.Domains.Resolver.(*dns.Resolver).Server, Timeout: time.Second},
			IPBlocklists: []string{}, DomainBlocklists: []string{}}
	})
	ann := e.loggedIn(e.acct, "ann@example.com", "developer")
	vic := e.loggedIn(e.acct, "vic@example.com", "viewer")

	wantStatus(t, "a viewer adds a domain", vic.post("/dashboard/domains", "/dashboard/domains", url.Values{"name": {"mail.acme.test"}}), 403)
	if p := vic.get("/dashboard/domains"); strings.Contains(p.body, `action="/dashboard/domains"`) {
		t.Errorf("the viewer is offered the add form")
	}
	wantStatus(t, "a bad name", ann.post("/dashboard/domains", "/dashboard/domains", url.Values{"name": {"co.uk"}}), 400)
	added := ann.post("/dashboard/domains", "/dashboard/domains", url.Values{"name": {"Mail.Acme.TEST"}, "dkim_algorithm": {"rsa-2048"}})
	if added.StatusCode != 303 || !strings.HasPrefix(added.Header.Get("Location"), "/dashboard/domains/") {
		t.Fatalf("adding: %d %s", added.StatusCode, added.body)
	}
	page := added.Header.Get("Location")
	id := strings.TrimPrefix(page, "/dashboard/domains/")
	again := ann.post("/dashboard/domains", "/dashboard/domains", url.Values{"name": {"mail.acme.test"}})
	wantStatus(t, "adding it twice", again, 409)
	if !strings.Contains(again.body, `value="mail.acme.test"`) {
		t.Errorf("the form is not shown again: %s", again.body)
	}
	if p := ann.get("/dashboard/domains"); !strings.Contains(p.body, `href="`+page+`"`) {
		t.Errorf("the list does not link to the domain")
	}

	// The records to publish, each with its status and copy buttons.
	p := ann.get(page)
	wantStatus(t, "the domain page", p, 200)
	api := e.do("GET", "/v1/domains/"+id, e.key, nil).want(t, 200).json(t)
	records := api["records"].([]any)
	for _, r := range records {
		rec := r.(map[string]any)
		if body := html.UnescapeString(p.body); !strings.Contains(body, ">"+rec["value"].(string)+"</code>") || !strings.Contains(body, ">"+rec["name"].(string)+"</code>") {
			t.Errorf("the page lacks the record %v", rec)
		}
	}
	if strings.Count(p.body, `data-copy="record-`) != 2*len(records) || strings.Count(p.body, `class="muted">pending</span>`) != len(records) ||
		!strings.Contains(p.body, `<script src="/dashboard/assets/copy.js"`) {
		t.Errorf("not two copy buttons and a pending status per record: %s", p.body)
	}
	if js := ann.get("/dashboard/assets/copy.js"); js.StatusCode != 200 || !strings.Contains(js.Header.Get("Content-Type"), "javascript") {
		t.Errorf("copy.js: %d %s", js.StatusCode, js.Header.Get("Content-Type"))
	}

	// Verify now, against the zone holding what the page said to publish.
	wantStatus(t, "a viewer verifies", vic.post(page, page+"/verify", url.Values{}), 403)
	wantStatus(t, "verify without the CSRF token", ann.do("POST", page+"/verify", url.Values{}), 403)
	for _, r := range records {
		rec := r.(map[string]any)
		switch rec["type"] {
		case "TXT":
			e.zone.LongTXT(rec["name"].(string), joinTXT(rec["value"].(string)))
		case "CNAME":
			e.zone.CNAME(rec["name"].(string), rec["value"].(string))
		}
	}
	wantRedirect(t, "verify", ann.post(page, page+"/verify", url.Values{}), page)
	p = ann.get(page)
	if !strings.Contains(p.body, `<span class="ok">verified</span>`) || strings.Count(p.body, `<span class="ok">verified</span>`) != len(records)+1 {
		t.Errorf("the domain and its records are not shown verified: %s", p.body)
	}
	if v := e.do("GET", "/v1/domains/"+id, e.key, nil).want(t, 200).json(t); v["status"] != "verified" {
		t.Fatalf("the API says %v", v["status"])
	}
	selector := e.do("GET", "/v1/domains/"+id, e.key, nil).json(t)["dkim_selector"].(string)

	// The grader's verdict; a viewer may ask too.
	g := vic.post(page, page+"/grade", url.Values{})
	wantStatus(t, "grading", g, 200)
	if !strings.Contains(g.body, "The grader's verdict") || !strings.Contains(g.body, "Grade <strong>") ||
		!strings.Contains(g.body, selector+"._domainkey.mail.acme.test") {
		t.Errorf("no verdict naming the domain's DKIM key: %s", g.body)
	}

	// DKIM rotation: a second DKIM record appears.
	wantStatus(t, "a viewer rotates", vic.post(page, page+"/rotate-dkim", url.Values{}), 403)
	wantStatus(t, "a bad algorithm", ann.post(page, page+"/rotate-dkim", url.Values{"dkim_algorithm": {"dsa"}}), 400)
	wantRedirect(t, "rotation", ann.post(page, page+"/rotate-dkim", url.Values{"dkim_algorithm": {"ed25519"}}), page)
	if p := ann.get(page); strings.Count(p.body, "dkim (required)")+strings.Count(p.body, ">dkim<br>") != 2 || !strings.Contains(p.body, "k=ed25519") {
		t.Errorf("no second DKIM record after the rotation: %s", p.body)
	}

	// Another account's member finds nothing.
	other, _ := e.account("other", "enterprise", 1000)
	e.person(other, "zed@example.com", "owner")
	zed := e.browser()
	wantRedirect(t, "login", zed.login("zed@example.com", goodPassword), "/dashboard/")
	wantStatus(t, "another account's domain", zed.get(page), 404)
	for _, action := range []string{"/verify", "/rotate-dkim", "/delete", "/grade"} {
		wantStatus(t, "another account's domain: "+action, zed.post("/dashboard/domains", page+action, url.Values{}), 404)
	}

	wantStatus(t, "a viewer deletes", vic.post(page, page+"/delete", url.Values{}), 403)
	wantRedirect(t, "delete", ann.post(page, page+"/delete", url.Values{}), "/dashboard/domains")
	e.do("GET", "/v1/domains/"+id, e.key, nil).want(t, 404, "NOT_FOUND")
}
