package web

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestPageFarPastTheEnd: on every list route that pages (every GET of the
// OpenAPI document that takes the Page parameter), a page whose offset
// overflows an int is past the end like any other: 200 with no items, the
// page asked for, the list's total, and a Link header whose last and prev
// are the last page. It used to wrap around, answering page 1's items
// (or, on /v1/webhooks, panicking into a 500).
func TestPageFarPastTheEnd(t *testing.T) {
	e := newEnv(t, configWith(func(c *Config) { c.IPRateLimit = 100000 }))
	e.runWorkers() // the webhook's delivery
	hookSrv := newHookReceiver(t, 200)

	// One item, at least, in every list.
	e.verifiedDomain("acme.test")
	hook := e.do("POST", "/v1/webhooks", e.key, map[string]any{"url": hookSrv.URL, "events": []string{"message.sent"}}).want(t, 201).json(t)
	msg := e.do("POST", "/v1/messages", e.key, `{"from":"a@acme.test","to":["b@example.com"],"subject":"hi","text":"hello"}`).want(t, 202).json(t)
	sent := e.do("GET", "/v1/events?type=message.sent", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(sent) != 1 || sent[0].(map[string]any)["data"].(map[string]any)["messageId"] != msg["id"] {
		t.Fatalf("message.sent events: %v", sent)
	}
	e.waitDelivery(e.key, hook["id"].(string), sent[0].(map[string]any)["id"].(string), "delivered")
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"gone@example.com"}`).want(t, 201)
	tpl := e.do("POST", "/v1/templates", e.key, `{"name":"Welcome","subject":"Hi","text":"Hello"}`).want(t, 201).json(t)
	e.do("POST", "/v1/team/invite", e.key, `{"email":"ann@example.com","role":"admin"}`).want(t, 201)
	in := e.inboundDomain(e.key, "in.acme.test")
	e.do("POST", "/v1/inbound/routes", e.key, map[string]any{"domain_id": in["id"], "pattern": "support", "webhook_id": hook["id"]}).want(t, 201)
	ids := map[string]string{
		"/v1/templates/{id}/": tpl["id"].(string),
		"/v1/webhooks/{id}/":  hook["id"].(string),
	}

	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Ref string `json:"$ref"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var lists []string
	for path, ops := range doc.Paths {
		for _, p := range ops["get"].Parameters {
			if p.Ref == "#/components/parameters/Page" {
				lists = append(lists, path)
			}
		}
	}
	if len(lists) < 13 {
		t.Fatalf("found %d list routes in the OpenAPI document: %v", len(lists), lists)
	}

	for _, list := range lists {
		path := list
		if i := strings.Index(path, "{id}"); i >= 0 {
			id, ok := ids[path[:i+len("{id}/")]]
			if !ok {
				t.Errorf("%s: no id to list with: add one to the test", list)
				continue
			}
			path = strings.Replace(path, "{id}", id, 1)
		}
		sep := "?"
		if list == "/v1/webhooks/{id}/deliveries" {
			path += "?status=delivered" // a query parameter of its own, kept in the links
			sep = "&"
		}
		first := e.do("GET", path+sep+"page=1&limit=2", e.key, nil).want(t, 200).json(t)
		total := first["total"].(float64)
		if len(first["data"].([]any)) == 0 {
			t.Errorf("%s: page 1 is empty, so the test proves nothing", list)
			continue
		}
		for _, c := range []struct{ page, limit int }{
			{math.MaxInt/2 + 2, 2}, // (page-1)*limit is exactly 2^63: wrapped to math.MinInt
			{math.MaxInt, 200},
			{math.MaxInt / 200 * 2, 200},
		} {
			q := fmt.Sprintf("page=%d&limit=%d", c.page, c.limit)
			r := e.do("GET", path+sep+q, e.key, nil).want(t, 200)
			body := r.json(t)
			if n := len(body["data"].([]any)); n != 0 || body["total"] != total || body["limit"] != float64(c.limit) {
				t.Errorf("%s?%s: %d items, total %v (want 0 and %v), limit %v", list, q, n, body["total"], total, body["limit"])
			}
			// page as sent, not as float64 rounds it
			if !strings.Contains(string(r.body), `"page":`+strconv.Itoa(c.page)+`,`) {
				t.Errorf("%s?%s: answer does not echo the page: %s", list, q, r.body)
			}
			last := strconv.Itoa(max(1, (int(total)+c.limit-1)/c.limit))
			if links := linkPages(t, r.Header.Get("Link")); links["next"] != "" || links["prev"] != last || links["last"] != last {
				t.Errorf("%s?%s: Link pages %v, want prev and last %s, no next", list, q, links, last)
			}
		}
	}
}

// linkPages maps each rel of a Link header to the page its URL asks for.
func linkPages(t *testing.T, header string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(header, ", ") {
		target, rel, ok := strings.Cut(l, ">; rel=")
		u, err := url.Parse(strings.TrimPrefix(target, "<"))
		if !ok || err != nil {
			t.Fatalf("Link %q: cannot read %q", header, l)
		}
		out[strings.Trim(rel, `"`)] = u.Query().Get("page")
	}
	return out
}
