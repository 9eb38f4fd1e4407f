package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/mta/smtptest"
	"mailbolt/storage"
	"mailbolt/storage/pgtest"
)

// listAnswers GETs every list route of the API (and the detail route of
// every item they list) with key, and returns each answer's status and
// body by path.
func listAnswers(t *testing.T, base, key string) map[string]string {
	t.Helper()
	answers := map[string]string{}
	fetch := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		answers[path] = strconv.Itoa(resp.StatusCode) + " " + string(body)
		return body
	}
	ids := func(body []byte) []string {
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		var out []string
		for _, d := range list.Data {
			out = append(out, d.ID)
		}
		return out
	}
	// Lists whose items have a detail route (and, for templates, webhooks
	// and messages, one more list or view under each).
	for _, l := range []struct {
		path string
		subs []string
	}{
		{"/v1/api-keys", nil},
		{"/v1/domains", nil},
		{"/v1/templates", []string{"/versions"}},
		{"/v1/webhooks", []string{"/deliveries"}},
		{"/v1/messages?per_page=100", []string{"/raw"}},
		{"/v1/inbound/domains", nil},
		{"/v1/inbound/routes", nil},
	} {
		body := fetch(l.path)
		list := strings.TrimSuffix(l.path, "?per_page=100")
		for _, id := range ids(body) {
			fetch(list + "/" + id)
			for _, sub := range l.subs {
				fetch(list + "/" + id + sub)
			}
		}
	}
	grader := fetch("/v1/grader/history")
	for _, id := range ids(grader) {
		fetch("/v1/grader/results/" + id)
	}
	for _, p := range []string{"/v1/account", "/v1/events?per_page=100", "/v1/suppressions", "/v1/suppressions/export",
		"/v1/audit-log", "/v1/team", "/v1/analytics/summary", "/v1/ips", "/v1/ips/pools"} {
		fetch(p)
	}
	return answers
}

var lastUsedRe = regexp.MustCompile(`"last_used_at":"([^"]+)"`)

// keyUseAfter is after, an answer from the migrated database, with the
// keys' last_used_at times as before had them, provided they are the same
// or later: using a key (as the test's own calls do) moves its
// last_used_at, on any database.
func keyUseAfter(t *testing.T, after, before string) string {
	t.Helper()
	a, b := lastUsedRe.FindAllStringSubmatch(after, -1), lastUsedRe.FindAllStringSubmatch(before, -1)
	if len(a) != len(b) {
		return after
	}
	i := 0
	return lastUsedRe.ReplaceAllStringFunc(after, func(m string) string {
		at, _ := time.Parse(time.RFC3339Nano, a[i][1])
		bt, _ := time.Parse(time.RFC3339Nano, b[i][1])
		i++
		if at.Before(bt) {
			t.Errorf("a key's last_used_at went back from %s to %s", b[i-1][1], a[i-1][1])
			return m
		}
		return b[i-1][0]
	})
}

// `mailbolt migrate` from a populated embedded database: every list the
// API answers (and every item's own view) is the same, byte for byte,
// from serve on the PostgreSQL copy, with the same key file.
func TestMigrateKeepsEveryAPIAnswer(t *testing.T) {
	target := pgtest.Shared(t).NewDatabase(t)
	var hooks atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hooks.Add(1)
	}))
	defer receiver.Close()
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	zone := destZone(t)
	flags := []string{"--dns-server", zone.Addr, "--mx-port", strconv.Itoa(sink.Port), "--mx-allow-cidrs", "127.0.0.0/8",
		"--webhook-allow-cidrs", "127.0.0.0/8", "--hostname", "mx.mailbolt.test", "--dev"}

	dir := t.TempDir()
	base, out, stop := startServe(t, dir, flags...)
	live := liveKeyRe.FindStringSubmatch(out.String())[1]
	test := testKeyRe.FindStringSubmatch(out.String())[1]
	call, tcall := apiCaller(t, base, live), apiCaller(t, base, test)

	dom := call("POST", "/v1/domains", `{"name":"acme.test"}`, 201)
	publishRecords(zone, dom)
	call("POST", "/v1/domains/"+dom["id"].(string)+"/verify", "", 200)
	call("POST", "/v1/domains", `{"name":"unverified.test"}`, 201)
	tpl := call("POST", "/v1/templates", `{"name":"welcome","subject":"Hi {{name}}","text":"Hello {{name}}","alias":"welcome"}`, 201)
	call("PUT", "/v1/templates/"+tpl["id"].(string), `{"subject":"Hello {{name}}","html":"<p>Hello {{name}}</p>"}`, 200)
	hook := call("POST", "/v1/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.delivered","message.bounced"],"description":"main"}`, receiver.URL), 201)
	tcall("POST", "/v1/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.delivered"]}`, receiver.URL+"/test"), 201)
	call("POST", "/v1/suppressions", `{"email":"blocked@dest.test","reason":"manual"}`, 201)
	call("POST", "/v1/api-keys", `{"name":"ci","scopes":["messages:read"]}`, 201)
	call("POST", "/v1/team/invite", `{"email":"dev@acme.test","role":"developer"}`, 201)
	in := call("POST", "/v1/inbound/domains", `{"name":"in.acme.test"}`, 201)
	call("POST", "/v1/inbound/routes", fmt.Sprintf(`{"domain_id":%q,"pattern":"support","webhook_id":%q}`, in["id"], hook["id"]), 201)
	call("POST", "/v1/grader/submit", `{"from":"a@acme.test","to":"ann@dest.test","subject":"s","body_text":"hello there"}`, 201)
	mustRun(t, "ips", "add", "192.0.2.1", "--hostname", "mta1.example.com", "--pool", "txn", "--warmup", "10,20", "--data-dir", dir)

	var sent []string
	for i := range 3 {
		sent = append(sent, call("POST", "/v1/messages", fmt.Sprintf(`{"from":"a@acme.test","to":["ann%d@dest.test"],"subject":"s%d","text":"t","tags":["t%d"]}`, i, i, i), 202)["id"].(string))
	}
	sent = append(sent, call("POST", "/v1/messages", `{"from":"a@acme.test","to":["ann@dest.test"],"template_id":"welcome","template_data":{"name":"Ann"}}`, 202)["id"].(string))
	call("POST", "/v1/messages", `{"from":"a@acme.test","to":["later@dest.test"],"subject":"later","text":"t","send_at":"`+
		time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339)+`"}`, 202)
	tcall("POST", "/v1/messages", `{"from":"a@acme.test","to":["ok@dest.test"],"subject":"s","text":"t"}`, 202)
	tcall("POST", "/v1/messages", `{"from":"a@acme.test","to":["bounce@dest.test"],"subject":"s","text":"t"}`, 202)
	// Everything settles: the live messages delivered, each delivery's
	// webhook delivered (and the test one's).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		done := hooks.Load() >= int64(len(sent))+1
		for _, id := range sent {
			if call("GET", "/v1/messages/"+id, "", 200)["status"] != "delivered" {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %d webhook deliveries", hooks.Load())
		}
	}
	time.Sleep(200 * time.Millisecond) // no more webhook retries in flight
	before := map[string]map[string]string{"live": listAnswers(t, base, live), "test": listAnswers(t, base, test)}
	stop()

	keyFile := filepath.Join(dir, "secret.key")
	start := time.Now()
	out1 := mustRun(t, "migrate", "--from-data-dir", dir, "--to", target)
	t.Logf("migrate took %s:\n%s", time.Since(start), out1)
	for _, want := range []string{"verified: ", "next: start serve on every node with --database " + target + " --secret-key-file " + keyFile,
		"the secrets stay sealed under the key in " + keyFile} {
		if !strings.Contains(out1, want) {
			t.Errorf("migrate output lacks %q:\n%s", want, out1)
		}
	}
	rows := tableRows(t, out1[strings.Index(out1, "\n")+1:strings.Index(out1, "verified: ")])
	for _, b := range []string{"accounts", "api_keys", "domains", "templates", "template_versions", "messages", "message_queue", "events",
		"webhooks", "deliveries", "suppressions", "ips", "grader_results", "inbound_domains", "team", "meta"} {
		if r := rows[b]; r == nil || r[len(r)-1] != "yes" || r[1] == "0" {
			t.Errorf("bucket %s: %v", b, r)
		}
	}

	base2, _, stop2 := startServe(t, t.TempDir(), append(flags, "--database", target, "--secret-key-file", keyFile)...)
	after := map[string]map[string]string{"live": listAnswers(t, base2, live), "test": listAnswers(t, base2, test)}
	for mode := range before {
		paths := slices.Sorted(maps.Keys(before[mode]))
		if len(paths) < 20 {
			t.Errorf("%s: only %d answers compared", mode, len(paths))
		}
		for _, p := range paths {
			if !strings.HasPrefix(before[mode][p], "200 ") {
				t.Errorf("%s %s before: %.300s", mode, p, before[mode][p])
			}
			if a, b := keyUseAfter(t, after[mode][p], before[mode][p]), before[mode][p]; a != b {
				t.Errorf("%s GET %s differs after migrate:\nbefore %s\nafter  %s", mode, p, b, a)
			}
		}
		if len(after[mode]) != len(before[mode]) {
			t.Errorf("%s: %d answers after, %d before", mode, len(after[mode]), len(before[mode]))
		}
	}
	// The copy still sends: the new node delivers a new message.
	id := apiCaller(t, base2, live)("POST", "/v1/messages", `{"from":"a@acme.test","to":["new@dest.test"],"subject":"s","text":"t"}`, 202)["id"].(string)
	for deadline := time.Now().Add(30 * time.Second); apiCaller(t, base2, live)("GET", "/v1/messages/"+id, "", 200)["status"] != "delivered"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a message sent after the migration was not delivered")
		}
	}
	stop2()

	// A second run finds the target in use and writes nothing.
	runFails(t, "already holds", "migrate", "--from-data-dir", dir, "--to", target)
}

// migrate refuses a missing key file, a data dir a server runs on, and a
// data dir without a database; none of them writes to the target.
func TestMigrateRefusals(t *testing.T) {
	target := pgtest.Shared(t).NewDatabase(t)
	dir := t.TempDir()
	_, _, stop := startServe(t, dir)
	runFails(t, "a server is running on "+dir, "migrate", "--from-data-dir", dir, "--to", target)
	stop()
	runFails(t, "secret key file "+filepath.Join(dir, "elsewhere.key")+" does not exist", "migrate", "--from-data-dir", dir, "--to", target,
		"--secret-key-file", filepath.Join(dir, "elsewhere.key"))
	os.Rename(filepath.Join(dir, "secret.key"), filepath.Join(dir, "moved.key"))
	runFails(t, "secret key file "+filepath.Join(dir, "secret.key")+" does not exist", "migrate", "--from-data-dir", dir, "--to", target)
	runFails(t, "no database in", "migrate", "--from-data-dir", t.TempDir(), "--to", target)
	runFails(t, "--to", "migrate", "--from-data-dir", dir)
	runFails(t, "name different databases", "migrate", "--from-data-dir", dir, "--to", target, "--database", target+"x")
	other := filepath.Join(t.TempDir(), "other.key")
	if err := storage.WriteNewSecretKey(other); err != nil {
		t.Fatal(err)
	}
	runFails(t, "is not the key the secrets in", "migrate", "--from-data-dir", dir, "--to", target, "--secret-key-file", other)
	runFails(t, "not a postgres:// URL", "migrate", "--from-data-dir", dir, "--to", "mysql://x")
	runFails(t, "sslmode=verify-full", "migrate", "--from-data-dir", dir, "--to", "postgres://db.example.com/mailbolt")

	// With the key file, the same target takes the copy: nothing was written.
	out := mustRun(t, "migrate", "--from-data-dir", dir, "--to", target, "--secret-key-file", filepath.Join(dir, "moved.key"))
	if !bytes.Contains([]byte(out), []byte("verified: ")) {
		t.Fatalf("migrate after the refusals:\n%s", out)
	}
}
