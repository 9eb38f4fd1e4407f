package web

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"mailbolt/storage"
)

func hashOf(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

func TestAccount(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	_, key := e.account("growing", "growth", 0)
	got := e.do("GET", "/v1/account", key, nil).want(t, 200).json(t)
	limits := got["limits"].(map[string]any)
	if got["name"] != "growing" || got["plan"] != "growth" || limits["requests_per_second"] != 500.0 ||
		limits["batch_size"] != 1000.0 || limits["dedicated_ips"] != 1.0 || got["created_at"] == "" {
		t.Errorf("account = %v", got)
	}
}

func TestAPIKeys(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	r := e.do("POST", "/v1/api-keys", e.key, `{"name":"ci","scopes":["messages:write","events:read"],"expires_at":"2027-01-01T00:00:00Z"}`).want(t, 201)
	k := r.json(t)
	secret := k["key"].(string)
	if !strings.HasPrefix(secret, "svc_live_") || len(secret) != len("svc_live_")+43 || k["mode"] != "live" ||
		!strings.HasPrefix(secret, k["prefix"].(string)) || k["expires_at"] != "2027-01-01T00:00:00Z" {
		t.Fatalf("created = %v", k)
	}
	if r.Header.Get("Location") != "/v1/api-keys/"+k["id"].(string) {
		t.Errorf("Location = %q", r.Header.Get("Location"))
	}
	// The secret is never shown again, and never stored.
	list := e.do("GET", "/v1/api-keys", e.key, nil).want(t, 200)
	if strings.Contains(string(list.body), secret) || strings.Contains(string(list.body), `"key"`) {
		t.Fatal("list shows a secret")
	}
	e.app.DB().View(func(tx *storage.Tx) error {
		stored, _ := tx.APIKey(e.acct.ID, k["id"].(string))
		if string(stored.Hash) != string(hashOf(secret)) {
			t.Error("stored hash is not SHA-256 of the secret")
		}
		return nil
	})
	// Test keys create test keys only.
	testKey := e.newKey(e.acct.ID, nil, true, nil)
	tk := e.do("POST", "/v1/api-keys", testKey, `{"name":"sandbox"}`).want(t, 201).json(t)
	if tk["mode"] != "test" || !strings.HasPrefix(tk["key"].(string), "svc_test_") {
		t.Errorf("test key made %v", tk)
	}
	e.do("POST", "/v1/api-keys", testKey, `{"name":"escape","mode":"live"}`).want(t, 403, "FORBIDDEN")
	e.do("POST", "/v1/api-keys", e.key, `{"name":"x","mode":"prod"}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/api-keys", e.key, `{"name":""}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/api-keys", e.key, `{"name":"old","expires_at":"2020-01-01T00:00:00Z"}`).want(t, 400, "VALIDATION_ERROR")

	// Revoking is bounded like creating: no scope escalation, no test-on-live.
	var allKeyID string
	e.app.DB().View(func(tx *storage.Tx) error {
		keys, _, _ := tx.APIKeys(e.acct.ID, storage.ListOptions{Limit: 1})
		allKeyID = keys[0].ID
		return nil
	})
	narrow := e.newKey(e.acct.ID, []string{"api_keys:write"}, false, nil)
	e.do("DELETE", "/v1/api-keys/"+allKeyID, narrow, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	e.do("DELETE", "/v1/api-keys/"+allKeyID, testKey, nil).want(t, 403, "FORBIDDEN")
	e.do("DELETE", "/v1/api-keys/"+tk["id"].(string), testKey, nil).want(t, 200)

	// Revocation takes effect on the next request.
	e.do("GET", "/v1/account", secret, nil).want(t, 403, "INSUFFICIENT_SCOPES")
	rev := e.do("DELETE", "/v1/api-keys/"+k["id"].(string), e.key, nil).want(t, 200).json(t)
	if rev["revoked_at"] == nil {
		t.Error("revoked_at not set")
	}
	e.do("GET", "/v1/account", secret, nil).want(t, 401, "INVALID_API_KEY")
	e.do("DELETE", "/v1/api-keys/"+k["id"].(string), e.key, nil).want(t, 200)
	e.do("DELETE", "/v1/api-keys/01900000-0000-7000-8000-00000000dead", e.key, nil).want(t, 404, "NOT_FOUND")
}

func TestSuppressions(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	s := e.do("POST", "/v1/suppressions", e.key, `{"recipient":"Bob@Example.COM","reason":"complaint"}`).want(t, 201).json(t)
	if s["recipient"] != "bob@example.com" || s["reason"] != "complaint" {
		t.Errorf("created %v", s)
	}
	// A duplicate is not an error: the stored record comes back unchanged.
	dup := e.do("POST", "/v1/suppressions", e.key, `{"recipient":"bob@example.com","reason":"manual"}`).want(t, 200).json(t)
	if dup["reason"] != "complaint" || dup["created_at"] != s["created_at"] {
		t.Errorf("duplicate changed the record: %v", dup)
	}
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"not an address"}`).want(t, 400, "VALIDATION_ERROR")
	if got := e.do("POST", "/v1/suppressions", e.key, `{"email":"Alias@Example.com"}`).want(t, 201).json(t); got["recipient"] != "alias@example.com" {
		t.Errorf("email alias: %v", got)
	}
	e.do("DELETE", "/v1/suppressions/alias@example.com", e.key, nil).want(t, 204)
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"a@b.test","email":"c@d.test"}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"a@b.test","reason":"because"}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"a@b.test\r\nBcc: x@y.test"}`).want(t, 400, "VALIDATION_ERROR")
	list := e.do("GET", "/v1/suppressions", e.key, nil).want(t, 200).json(t)["data"].([]any)
	if len(list) != 1 {
		t.Fatalf("list = %v", list)
	}
	e.do("DELETE", "/v1/suppressions/"+url.PathEscape("BOB@example.com"), e.key, nil).want(t, 204)
	e.do("DELETE", "/v1/suppressions/bob@example.com", e.key, nil).want(t, 404, "NOT_FOUND")
}

// TestSuppressionEmailAndRecipientIDN: email and recipient given together
// are one address when their normal forms are (any case, either spelling
// of an IDN domain), in one add and in an import; different addresses,
// and an address beside one that is no address, are still refused naming
// email.
func TestSuppressionEmailAndRecipientIDN(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	s := e.do("POST", "/v1/suppressions", e.key, `{"email":"ann@exämple.org","recipient":"Ann@XN--EXMPLE-CUA.org"}`).want(t, 201).json(t)
	if s["recipient"] != "ann@xn--exmple-cua.org" {
		t.Errorf("created %v", s)
	}
	r := e.do("POST", "/v1/suppressions/import", e.key, `{"suppressions":[{"recipient":"bob@exämple.org","email":"bob@xn--exmple-cua.org"}]}`).want(t, 200)
	if added, present := importResult(t, r); added != 1 || present != 0 {
		t.Errorf("import: %s", r.body)
	}
	for _, body := range []string{
		`{"email":"ann@exämple.org","recipient":"ann@example.org"}`,
		`{"email":"ann@exämple.org","recipient":"Ann <ann@exämple.org>"}`,
		`{"email":"ann@-ämple.org","recipient":"ann@xn--exmple-cua.org"}`,
	} {
		d := e.do("POST", "/v1/suppressions", e.key, body).want(t, 400, "VALIDATION_ERROR").json(t)["error"].(map[string]any)["details"].(map[string]any)
		if d["field"] != "email" {
			t.Errorf("%s: details %v", body, d)
		}
	}
	// The same text that is no address is refused for what it is, naming
	// recipient.
	d := e.do("POST", "/v1/suppressions", e.key, `{"email":"ann@-ämple.org","recipient":"ANN@-ÄMPLE.ORG"}`).want(t, 400, "VALIDATION_ERROR").json(t)["error"].(map[string]any)
	if d["details"].(map[string]any)["field"] != "recipient" || !strings.Contains(d["message"].(string), "internationalised") {
		t.Errorf("an invalid IDN given twice: %v", d)
	}
	if got := e.listAll(e.key); len(got) != 2 {
		t.Errorf("list %v", got)
	}
}

func TestTeam(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	m := e.do("POST", "/v1/team/invite", e.key, `{"email":"Ann@Example.com","role":"developer"}`).want(t, 201).json(t)
	if m["status"] != "invited" || m["email"] != "ann@example.com" || m["role"] != "developer" || len(m["accept_token"].(string)) < 40 {
		t.Errorf("invite = %v", m)
	}
	e.do("POST", "/v1/team/invite", e.key, `{"email":"ann@example.com","role":"admin"}`).want(t, 409, "CONFLICT")
	e.do("POST", "/v1/team/invite", e.key, `{"email":"x@example.com","role":"emperor"}`).want(t, 400, "VALIDATION_ERROR")
	e.do("POST", "/v1/team/invite", e.key, `{"role":"viewer"}`).want(t, 400, "VALIDATION_ERROR")
	list := e.do("GET", "/v1/team", e.key, nil).want(t, 200)
	if strings.Contains(string(list.body), "accept_token") {
		t.Error("list shows the accept token")
	}
}

func TestIdempotencyOverHTTP(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	body := `{"name":"once"}`
	first := e.do("POST", "/v1/api-keys", e.key, body, "Idempotency-Key", "abc").want(t, 201)
	again := e.do("POST", "/v1/api-keys", e.key, body, "Idempotency-Key", "abc").want(t, 201)
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) ||
		again.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("replay differs:\n%s\n%s", first.body, again.body)
	}
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Error("first answer marked replayed")
	}
	e.do("POST", "/v1/api-keys", e.key, `{"name":"twice"}`, "Idempotency-Key", "abc").want(t, 409, "IDEMPOTENCY_CONFLICT")
	e.do("DELETE", "/v1/api-keys/x", e.key, nil, "Idempotency-Key", "abc").want(t, 409, "IDEMPOTENCY_CONFLICT")
	if n := e.keyCount(); n != 2 {
		t.Errorf("%d keys, want 2 (the env's and one created)", n)
	}
	// Errors are replayed too (except 401, 403, 429 and 5xx).
	bad := e.do("POST", "/v1/suppressions", e.key, `{"recipient":"nope"}`, "Idempotency-Key", "bad").want(t, 400)
	if e.do("POST", "/v1/suppressions", e.key, `{"recipient":"nope"}`, "Idempotency-Key", "bad").want(t, 400).Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("error not replayed: %s", bad.body)
	}
	// A refusal is not stored: nothing ran.
	testKey := e.newKey(e.acct.ID, nil, true, nil)
	for range 2 {
		r := e.do("POST", "/v1/api-keys", testKey, `{"name":"escape","mode":"live"}`, "Idempotency-Key", "refused").want(t, 403, "FORBIDDEN")
		if r.Header.Get("Idempotent-Replayed") != "" {
			t.Error("a 403 was stored and replayed")
		}
	}
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"a@b.test"}`, "Idempotency-Key", strings.Repeat("k", 256)).want(t, 400, "VALIDATION_ERROR")
}

func (e *env) keyCount() int {
	var n int
	e.app.DB().View(func(tx *storage.Tx) error { n = tx.APIKeyCount(e.acct.ID); return nil })
	return n
}

func TestIdempotentConcurrentDuplicatesRunOnce(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	const n = 24
	var wg sync.WaitGroup
	replies := make([]reply, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = e.do("POST", "/v1/api-keys", e.key, `{"name":"race"}`, "Idempotency-Key", "race-1")
		}()
	}
	wg.Wait()
	replayed := 0
	for _, r := range replies {
		r.want(t, 201)
		if string(r.body) != string(replies[0].body) {
			t.Fatalf("different answers:\n%s\n%s", r.body, replies[0].body)
		}
		if r.Header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Errorf("%d replayed, want %d", replayed, n-1)
	}
	if got := e.keyCount(); got != 2 {
		t.Fatalf("the create ran %d times", got-1)
	}
}

func TestPaginationModes(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	const total = 250
	e.app.DB().Update(func(tx *storage.Tx) error {
		for i := range total {
			tx.PutSuppression(storage.Suppression{AccountID: e.acct.ID, Recipient: fmt.Sprintf("u%03d@x.test", i), Reason: "manual", CreatedAt: e.clock.Now()})
		}
		return nil
	})
	// Cursor mode walks everything once, in order.
	var seen []string
	path := "/v1/suppressions?limit=37"
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("cursor pagination does not end")
		}
		page := e.do("GET", path, e.key, nil).want(t, 200).json(t)
		for _, item := range page["data"].([]any) {
			seen = append(seen, item.(map[string]any)["recipient"].(string))
		}
		if page["limit"] != 37.0 {
			t.Fatalf("limit = %v", page["limit"])
		}
		if page["has_more"] == false {
			if _, ok := page["cursor"]; ok {
				t.Fatal("cursor on the last page")
			}
			break
		}
		path = "/v1/suppressions?limit=37&cursor=" + url.QueryEscape(page["cursor"].(string))
	}
	if len(seen) != total || seen[0] != "u000@x.test" || seen[total-1] != "u249@x.test" {
		t.Fatalf("cursor walk saw %d items", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("order broken at %d", i)
		}
	}
	// Page mode: body fields and the Link header.
	r := e.do("GET", "/v1/suppressions?page=3&limit=50", e.key, nil).want(t, 200)
	p := r.json(t)
	if p["page"] != 3.0 || p["limit"] != 50.0 || p["total"] != 250.0 || len(p["data"].([]any)) != 50 ||
		p["data"].([]any)[0].(map[string]any)["recipient"] != "u100@x.test" {
		t.Fatalf("page 3 = %v %v %v", p["page"], p["total"], len(p["data"].([]any)))
	}
	link := r.Header.Get("Link")
	for _, want := range []string{
		`</v1/suppressions?limit=50&page=4>; rel="next"`,
		`</v1/suppressions?limit=50&page=2>; rel="prev"`,
		`</v1/suppressions?limit=50&page=1>; rel="first"`,
		`</v1/suppressions?limit=50&page=5>; rel="last"`,
	} {
		if !strings.Contains(link, want) {
			t.Errorf("Link %q lacks %s", link, want)
		}
	}
	last := e.do("GET", "/v1/suppressions?page=5&limit=50", e.key, nil).want(t, 200)
	if strings.Contains(last.Header.Get("Link"), `rel="next"`) {
		t.Error("next link on the last page")
	}
	if n := len(e.do("GET", "/v1/suppressions?page=9&limit=50", e.key, nil).want(t, 200).json(t)["data"].([]any)); n != 0 {
		t.Errorf("page past the end has %d items", n)
	}
	if d := e.do("GET", "/v1/suppressions", e.key, nil).want(t, 200).json(t); len(d["data"].([]any)) != 50 || d["limit"] != 50.0 {
		t.Error("default limit is not 50")
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=x", "page=0", "page=-1", "cursor=%%%", "cursor=abc&page=1"} {
		e.do("GET", "/v1/suppressions?"+q, e.key, nil).want(t, 400, "VALIDATION_ERROR")
	}
	e.do("GET", "/v1/suppressions?limit=200", e.key, nil).want(t, 200)

	// Only a cursor this list answered is taken: not a made-up one (even
	// a storage key, base64url-encoded, as cursors once were), not one
	// with a byte changed, not one another list answered.
	genuine := e.do("GET", "/v1/suppressions?limit=1", e.key, nil).want(t, 200).json(t)["cursor"].(string)
	e.do("GET", "/v1/suppressions?limit=1&cursor="+genuine, e.key, nil).want(t, 200)
	tampered := []byte(genuine)
	tampered[len(tampered)/2] ^= 1
	e.do("POST", "/v1/api-keys", e.key, `{"name":"a second key"}`).want(t, 201)
	keysCursor := e.do("GET", "/v1/api-keys?limit=1", e.key, nil).want(t, 200).json(t)["cursor"].(string)
	for _, c := range []string{"garbage", "AAAAAAAAAAAAAAAAAAAAAA", base64.RawURLEncoding.EncodeToString([]byte("u100@x.test")), string(tampered), keysCursor} {
		r := e.do("GET", "/v1/suppressions?cursor="+url.QueryEscape(c), e.key, nil).want(t, 400, "VALIDATION_ERROR")
		if f := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"]; f != "cursor" {
			t.Errorf("cursor %q: refused naming %v", c, f)
		}
	}
}

// DELETE /v1/suppressions/{recipient} removes every entry of the address,
// or with ?stream= only that stream's.
func TestDeleteSuppressionByStreamOverHTTP(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"ann@example.com","reason":"manual"}`).want(t, 201)
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"ann@example.com","reason":"unsubscribe","stream":"broadcast"}`).want(t, 201)
	count := func() int {
		t.Helper()
		list := e.do("GET", "/v1/suppressions?limit=50", e.key, nil).want(t, 200).json(t)["data"].([]any)
		n := 0
		for _, s := range list {
			if s.(map[string]any)["recipient"] == "ann@example.com" {
				n++
			}
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("%d entries for ann, want an all-streams one and a broadcast one", n)
	}
	e.do("DELETE", "/v1/suppressions/ann@example.com?stream=broadcast", e.key, nil).want(t, 204)
	if n := count(); n != 1 {
		t.Fatalf("after deleting the broadcast entry: %d entries, want 1", n)
	}
	e.do("DELETE", "/v1/suppressions/ann@example.com?stream=broadcast", e.key, nil).want(t, 404, "NOT_FOUND")
	e.do("POST", "/v1/suppressions", e.key, `{"recipient":"ann@example.com","reason":"unsubscribe","stream":"broadcast"}`).want(t, 201)
	e.do("DELETE", "/v1/suppressions/ann@example.com", e.key, nil).want(t, 204)
	if n := count(); n != 0 {
		t.Fatalf("after deleting every entry: %d entries, want 0", n)
	}
	e.do("DELETE", "/v1/suppressions/ann@example.com?stream=newsletters", e.key, nil).want(t, 400, "VALIDATION_ERROR")
}
