package web

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"mailbolt/app"
	"mailbolt/storage/storagetest"
)

// csvRows builds a CSV import of n rows: u0@x.test … with the header given.
func csvRows(header string, n int, row func(i int) string) string {
	var b strings.Builder
	b.WriteString(header + "\n")
	for i := range n {
		b.WriteString(row(i) + "\n")
	}
	return b.String()
}

// listAll reads an account's whole suppression list through the API.
func (e *env) listAll(key string) []map[string]any {
	e.t.Helper()
	var all []map[string]any
	path := "/v1/suppressions?limit=200"
	for {
		m := e.do("GET", path, key, nil).want(e.t, 200).json(e.t)
		for _, d := range m["data"].([]any) {
			all = append(all, d.(map[string]any))
		}
		c, _ := m["cursor"].(string)
		if c == "" {
			return all
		}
		path = "/v1/suppressions?limit=200&cursor=" + c
	}
}

func importResult(t *testing.T, r reply) (added, present int) {
	t.Helper()
	m := r.json(t)
	return int(m["added"].(float64)), int(m["already_present"].(float64))
}

// TestImportTenThousandIsOneCommit: the largest import is one storage
// commit (the committer's count moves by one), every row is then listed,
// and the body of 10,000 rows of the longest addresses fits the default
// body cap.
func TestImportTenThousandIsOneCommit(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	body := csvRows("recipient,reason,stream", app.MaxSuppressionImport, func(i int) string {
		return fmt.Sprintf("u%05d@x.test,manual,", i)
	})
	db := e.app.DB()
	before := db.Commits()
	r := e.do("POST", "/v1/suppressions/import", e.key, body, "Content-Type", "text/csv").want(t, 200)
	if n := db.Commits() - before; n != 1 {
		t.Errorf("the import took %d commits, want 1", n)
	}
	if added, present := importResult(t, r); added != app.MaxSuppressionImport || present != 0 {
		t.Errorf("added %d, already present %d", added, present)
	}
	m := e.do("GET", "/v1/suppressions?page=1&limit=1", e.key, nil).want(t, 200).json(t)
	if m["total"].(float64) != app.MaxSuppressionImport {
		t.Errorf("total %v", m["total"])
	}

	// One more row than the limit is refused whole.
	over := csvRows("recipient", app.MaxSuppressionImport+1, func(i int) string { return fmt.Sprintf("v%d@x.test", i) })
	r = e.do("POST", "/v1/suppressions/import", e.key, over, "Content-Type", "text/csv").want(t, 400, "VALIDATION_ERROR")
	if d := r.json(t)["error"].(map[string]any)["details"].(map[string]any); d["limit"].(float64) != app.MaxSuppressionImport {
		t.Errorf("details %v", d)
	}
	jsonOver := map[string]any{"suppressions": slices.Repeat([]map[string]string{{"recipient": "w@x.test"}}, app.MaxSuppressionImport+1)}
	e.do("POST", "/v1/suppressions/import", e.key, jsonOver).want(t, 400, "VALIDATION_ERROR")

	// The worst case that must fit: 10,000 JSON rows of 254-character
	// addresses with the longest reason and stream.
	long := strings.Repeat("a", 64) + "@" + strings.Repeat("b", 254-65-5) + ".test"
	item := map[string]string{"recipient": long, "reason": "hard_bounce", "stream": "transactional"}
	worst := fmt.Sprintf(`{"suppressions":[%s]}`, strings.Repeat(mustJSON(t, item)+",", app.MaxSuppressionImport-1)+mustJSON(t, item))
	if int64(len(worst)) > DefaultConfig().MaxBodyBytes {
		t.Errorf("10,000 rows of the longest addresses are %d bytes, over the default body cap %d", len(worst), DefaultConfig().MaxBodyBytes)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImportIsAllOrNothing: a bad row refuses the import naming its CSV
// line or JSON index, and nothing of it is added.
func TestImportIsAllOrNothing(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	db := e.app.DB()
	for _, c := range []struct {
		name, ctype, body string
		want              map[string]any // details that must be there
	}{
		{"bad address at line 4", "text/csv", "recipient,reason\na@x.test,manual\nb@x.test,\nnot-an-address,manual\nc@x.test,manual\n",
			map[string]any{"line": 4.0, "field": "recipient"}},
		{"bad reason at line 3", "text/csv; charset=utf-8", "email,reason,stream\na@x.test,,\nb@x.test,bored,\n",
			map[string]any{"line": 3.0, "field": "reason"}},
		{"bad stream at line 2", "text/csv", "stream,recipient\nmarketing,a@x.test\n", map[string]any{"line": 2.0, "field": "stream"}},
		{"quoted line breaks count", "text/csv", "recipient,reason\n\"a@x.test\",\"manual\"\n\n\"b@x.test\",\"x\ny\"\n",
			map[string]any{"line": 4.0, "field": "reason"}},
		{"row with an extra field", "text/csv", "recipient\na@x.test\nb@x.test,manual\n", map[string]any{"line": 3.0}},
		{"stray quote", "text/csv", "recipient\na@x.test\nb\"@x.test\n", map[string]any{"line": 3.0}},
		{"unknown column", "text/csv", "recipient,colour\na@x.test,red\n", map[string]any{"line": 1.0, "field": "colour"}},
		{"no recipient column", "text/csv", "reason\nmanual\n", map[string]any{"line": 1.0, "field": "recipient"}},
		{"two recipient columns", "text/csv", "recipient,email\na@x.test,a@x.test\n", map[string]any{"line": 1.0, "field": "recipient"}},
		{"empty CSV", "text/csv", "", map[string]any{"line": 1.0}},
		// A file a spreadsheet saved in Latin-1: refused for what it is,
		// not as no address.
		{"Latin-1 address at line 3", "text/csv", "recipient,reason\na@x.test,\nm\xfcller@x.test,manual\n",
			map[string]any{"line": 3.0, "field": "recipient", "reason": "must be valid UTF-8"}},
		{"Latin-1 reason at line 2", "text/csv", "reason,email\nman\xe9,a@x.test\n",
			map[string]any{"line": 2.0, "field": "reason", "reason": "must be valid UTF-8"}},
		{"not UTF-8, its line counted past quoted line breaks", "text/csv", "recipient,stream\n\"a@x.test\",\"broad\ncast\"\n\"b@x.test\",\"\xff\"\n",
			map[string]any{"line": 4.0, "field": "stream", "reason": "must be valid UTF-8"}},
		{"Latin-1 header", "text/csv", "recipient,caf\xe9\na@x.test,b\n", map[string]any{"line": 1.0, "reason": "column 2 of the header row must be valid UTF-8"}},
		{"bad address at index 2", "", `{"suppressions":[{"recipient":"a@x.test"},{"email":"b@x.test"},{"recipient":"Ann <c@x.test>"}]}`,
			map[string]any{"index": 2.0, "field": "suppressions[2].recipient"}},
		{"unknown field at index 1", "", `{"suppressions":[{"recipient":"a@x.test"},{"recipient":"b@x.test","colour":"red"}]}`,
			map[string]any{"index": 1.0, "field": "suppressions[1].colour"}},
		{"email differs at index 0", "", `{"suppressions":[{"recipient":"a@x.test","email":"b@x.test"}]}`,
			map[string]any{"index": 0.0, "field": "suppressions[0].email"}},
		{"no list", "", `{}`, map[string]any{"field": "suppressions"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := db.Commits()
			var hdr []string
			if c.ctype != "" {
				hdr = []string{"Content-Type", c.ctype}
			}
			r := e.do("POST", "/v1/suppressions/import", e.key, c.body, hdr...).want(t, 400, "VALIDATION_ERROR")
			d := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
			for k, v := range c.want {
				if d[k] != v {
					t.Errorf("details.%s = %v, want %v (%s)", k, d[k], v, r.body)
				}
			}
			if line, ok := c.want["line"]; ok {
				msg := r.json(t)["error"].(map[string]any)["message"].(string)
				if !strings.HasPrefix(msg, fmt.Sprintf("line %v:", line)) {
					t.Errorf("message %q does not start with the line", msg)
				}
			}
			if n := db.Commits() - before; n != 0 {
				t.Errorf("a refused import committed %d times", n)
			}
		})
	}
	if got := e.listAll(e.key); len(got) != 0 {
		t.Errorf("refused imports added %v", got)
	}
	e.do("POST", "/v1/suppressions/import", e.key, "recipient\na@x.test\n", "Content-Type", "text/csv; charset=latin1").
		want(t, 400, "VALIDATION_ERROR")
}

// TestImportCountsDuplicatesAndKeepsTenantsApart: rows already present
// (before the import or earlier in it) are counted, not changed; JSON and
// CSV are the same; another account's list is untouched, and an account's
// import does not see the other's entries as present.
func TestImportCountsDuplicatesAndKeepsTenantsApart(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	_, other := e.account("other", "enterprise", 100000)
	e.do("POST", "/v1/suppressions", e.key, map[string]string{"recipient": "old@x.test", "reason": "complaint"}).want(t, 201)
	e.do("POST", "/v1/suppressions", other, map[string]string{"recipient": "ann@x.test"}).want(t, 201)

	r := e.do("POST", "/v1/suppressions/import", e.key, map[string]any{"suppressions": []map[string]string{
		{"recipient": "Ann@X.test"},
		{"email": "ann@x.test"},                              // the same, earlier in the import
		{"recipient": "ann@x.test", "stream": "broadcast"},   // another entry: its own stream
		{"recipient": "old@x.test", "reason": "unsubscribe"}, // already present: kept as complaint
		{"recipient": "bob@x.test", "reason": "hard_bounce"},
	}}).want(t, 200)
	if added, present := importResult(t, r); added != 3 || present != 2 {
		t.Errorf("JSON: added %d, already present %d (%s)", added, present, r.body)
	}
	r = e.do("POST", "/v1/suppressions/import", e.key, "\ufeffEmail,Stream\nbob@x.test,\ncid@x.test,transactional\n",
		"Content-Type", "text/csv").want(t, 200)
	if added, present := importResult(t, r); added != 1 || present != 1 {
		t.Errorf("CSV: added %d, already present %d (%s)", added, present, r.body)
	}

	var got []string
	for _, s := range e.listAll(e.key) {
		stream, _ := s["stream"].(string)
		got = append(got, fmt.Sprintf("%s/%s/%s", s["recipient"], s["reason"], stream))
	}
	want := []string{"ann@x.test/manual/", "ann@x.test/manual/broadcast", "bob@x.test/hard_bounce/",
		"cid@x.test/manual/transactional", "old@x.test/complaint/"}
	if !slices.Equal(got, want) {
		t.Errorf("list %v\nwant %v", got, want)
	}
	if o := e.listAll(other); len(o) != 1 || o[0]["recipient"] != "ann@x.test" {
		t.Errorf("the other account's list: %v", o)
	}

	narrow := e.newKey(e.acct.ID, []string{"suppressions:read"}, false, nil)
	e.do("POST", "/v1/suppressions/import", narrow, `{"suppressions":[{"recipient":"z@x.test"}]}`).want(t, 403, "INSUFFICIENT_SCOPES")
	writeOnly := e.newKey(e.acct.ID, []string{"suppressions:write"}, false, nil)
	e.do("GET", "/v1/suppressions/export", writeOnly, nil).want(t, 403, "INSUFFICIENT_SCOPES")

	// The same import again with an Idempotency-Key is answered from the
	// store the second time.
	body := `{"suppressions":[{"recipient":"dan@x.test"}]}`
	e.do("POST", "/v1/suppressions/import", e.key, body, "Idempotency-Key", "imp-1").want(t, 200)
	r = e.do("POST", "/v1/suppressions/import", e.key, body, "Idempotency-Key", "imp-1").want(t, 200)
	if added, _ := importResult(t, r); added != 1 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %s %v", r.body, r.Header)
	}
}

// TestExportRoundTrips: the export is CSV in the import's columns, in
// address order, with ?stream= filtering; imported into another account
// it gives the same list; each account exports only its own.
func TestExportRoundTrips(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	_, otherKey := e.account("other", "enterprise", 100000)
	e.do("POST", "/v1/suppressions", otherKey, map[string]string{"recipient": "theirs@x.test"}).want(t, 201)

	// More than one export chunk, with both kinds of entry and every reason.
	const n = 1234
	reasons := app.SuppressionReasons
	body := csvRows("recipient,reason,stream", n, func(i int) string {
		stream := []string{"", "broadcast", "transactional"}[i%3]
		return fmt.Sprintf("r%04d@x.test,%s,%s", i, reasons[i%len(reasons)], stream)
	})
	e.do("POST", "/v1/suppressions/import", e.key, body, "Content-Type", "text/csv").want(t, 200)

	r := e.do("GET", "/v1/suppressions/export", e.key, nil).want(t, 200)
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if string(r.body) != body {
		t.Errorf("the export is not what was imported:\n%.300s\nwant\n%.300s", r.body, body)
	}
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil || len(rows) != n+1 || !slices.Equal(rows[0], app.SuppressionCSVColumns) {
		t.Fatalf("%d rows, %v", len(rows), err)
	}

	// Into another account, the export gives back the same list.
	before := e.listAll(e.key)
	r2 := e.do("POST", "/v1/suppressions/import", otherKey, string(r.body), "Content-Type", "text/csv").want(t, 200)
	if added, _ := importResult(t, r2); added != n {
		t.Errorf("round trip added %d", added)
	}
	after := e.do("GET", "/v1/suppressions/export", otherKey, nil).want(t, 200)
	if !strings.Contains(string(after.body), "theirs@x.test,manual,\n") ||
		strings.Replace(string(after.body), "theirs@x.test,manual,\n", "", 1) != body {
		t.Errorf("the other account's export after the round trip:\n%.300s", after.body)
	}
	if got := e.listAll(e.key); len(got) != len(before) {
		t.Errorf("the first account's list changed: %d → %d", len(before), len(got))
	}

	// ?stream= keeps the entries that name that stream.
	r = e.do("GET", "/v1/suppressions/export?stream=broadcast", e.key, nil).want(t, 200)
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if lines[0] != "recipient,reason,stream" || len(lines) != 1+(n+1)/3 { // i%3 == 1 for i < n
		t.Errorf("broadcast export: %d lines", len(lines))
	}
	for _, l := range lines[1:] {
		if !strings.HasSuffix(l, ",broadcast") {
			t.Errorf("broadcast export has %q", l)
		}
	}
	e.do("GET", "/v1/suppressions/export?stream=marketing", e.key, nil).want(t, 400, "VALIDATION_ERROR")

	// An empty list is the header alone.
	_, emptyKey := e.account("empty", "free", 0)
	if r := e.do("GET", "/v1/suppressions/export", emptyKey, nil).want(t, 200); string(r.body) != "recipient,reason,stream\n" {
		t.Errorf("empty export %q", r.body)
	}
	if r := e.do("POST", "/v1/suppressions/import", emptyKey, "recipient,reason,stream\n", "Content-Type", "text/csv").want(t, 200); string(r.body) != `{"added":0,"already_present":0}`+"\n" {
		t.Errorf("empty import %s", r.body)
	}
}

// TestExportBreaksOffWhenReadingFails: a read that fails after the answer
// has begun breaks the connection; the client never sees a short list
// that looks complete.
func TestExportBreaksOffWhenReadingFails(t *testing.T) {
	var armed atomic.Bool
	var reads atomic.Int64
	sopts := storagetest.Options(t)
	sopts.ReadFault = func() error {
		// Armed: the request's authentication and the export's first
		// chunk read; the second chunk fails.
		if armed.Load() && reads.Add(1) >= 3 {
			return errors.New("injected read failure")
		}
		return nil
	}
	e := newEnvOn(t, DefaultConfig(), sopts, nil)
	body := csvRows("recipient", 1200, func(i int) string { return fmt.Sprintf("r%04d@x.test", i) })
	e.do("POST", "/v1/suppressions/import", e.key, body, "Content-Type", "text/csv").want(t, 200)

	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/suppressions/export", nil)
	req.Header.Set("X-API-Key", e.key)
	armed.Store(true)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || err == nil {
		t.Errorf("status %d, read error %v after %d bytes: want 200 and a broken transfer", resp.StatusCode, err, len(data))
	}
	if !strings.HasPrefix(string(data), "recipient,reason,stream\nr0000@x.test,manual,\n") {
		t.Errorf("the first chunk did not arrive: %.100q", data)
	}
}

// TestExportGuardsFormulas: an address a spreadsheet would read as a
// formula ("=", "+", "-" first) is exported after an apostrophe, which
// spreadsheets show as text; an address that begins with real apostrophes
// before such a character gets one more. Imported back, every address is
// what was stored.
func TestExportGuardsFormulas(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	addrs := []string{"=1+1@x.test", "+sum@x.test", "-cmd@x.test", "'=q@x.test", "''+q@x.test", "'plain@x.test", "o'neil@x.test", "plain@x.test"}
	for _, a := range addrs {
		e.do("POST", "/v1/suppressions", e.key, map[string]string{"recipient": a}).want(t, 201)
	}
	r := e.do("GET", "/v1/suppressions/export", e.key, nil).want(t, 200)
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]bool{}
	for _, row := range rows[1:] {
		cells[row[0]] = true
	}
	for _, want := range []string{"'=1+1@x.test", "'+sum@x.test", "'-cmd@x.test", "''=q@x.test", "'''+q@x.test", "'plain@x.test", "o'neil@x.test", "plain@x.test"} {
		if !cells[want] {
			t.Errorf("the export has no cell %q: %s", want, r.body)
		}
	}

	_, otherKey := e.account("other", "enterprise", 100000)
	r2 := e.do("POST", "/v1/suppressions/import", otherKey, string(r.body), "Content-Type", "text/csv").want(t, 200)
	if added, _ := importResult(t, r2); added != len(addrs) {
		t.Errorf("the import added %d, want %d", added, len(addrs))
	}
	got := map[string]bool{}
	for _, s := range e.listAll(otherKey) {
		got[s["recipient"].(string)] = true
	}
	for _, a := range addrs {
		if !got[a] {
			t.Errorf("%q did not come back from the export: %v", a, got)
		}
	}
}
