package web

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"mailbolt/app"
	"mailbolt/storage"
)

// The socket's bodies must be text, as the API's: a value with a byte that
// is not UTF-8, or a lone surrogate escape, is refused in the socket's
// error envelope naming the field, and nothing is stored (encoding/json
// would have stored U+FFFD in its place).
func TestAdminSocketRefusesBodiesThatAreNotText(t *testing.T) {
	a, c := adminOverSocket(t)
	acct, err := c.CreateAccount(app.AccountInput{Name: "Acme", Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, body, field, reason string }{
		{"/accounts", "{\"name\":\"ab\xffc\",\"plan\":\"free\"}", "name", "must be valid UTF-8"},
		{"/accounts", `{"name":"ab\ud800c","plan":"free"}`, "name", `must not contain a lone UTF-16 surrogate (\ud800)`},
		{"/keys", `{"account_id":"` + acct.ID + "\",\"name\":\"ci\",\"scopes\":[\"account:read\",\"x\xc3\"]}", "scopes[1]", "must be valid UTF-8"},
		{"/team/add", `{"account_id":"` + acct.ID + `","email":"ann@exa\udc00mple.com","role":"admin"}`, "email", `must not contain a lone UTF-16 surrogate (\udc00)`},
		{"/suppressions/import", `{"account_id":"` + acct.ID + "\",\"rows\":[{\"recipient\":\"a@example.com\"},{\"recipient\":\"b@example.com\",\"reason\":\"\xe2\x82\"}]}",
			"rows[1].reason", "must be valid UTF-8"},
	} {
		status, env := postSocket(t, c, tc.path, tc.body)
		if status != http.StatusBadRequest || env.Error.Code != app.CodeValidation || env.Error.Details["field"] != tc.field ||
			!strings.Contains(env.Error.Message, tc.field+": "+tc.reason) {
			t.Errorf("POST %s %q: %d %+v, want 400 naming %s", tc.path, tc.body, status, env.Error, tc.field)
		}
	}
	if list, err := c.ListAccounts(); err != nil || len(list) != 1 {
		t.Errorf("accounts after the refusals: %+v, %v", list, err)
	}
	if keys, err := c.ListKeys(acct.ID); err != nil || len(keys) != 0 {
		t.Errorf("keys after the refusal: %+v, %v", keys, err)
	}
	n := 0
	err = a.DB().View(func(tx *storage.Tx) error { n = tx.SuppressionCount(acct.ID); return nil })
	if err != nil || n != 0 {
		t.Errorf("suppressions after the refused import: %d, %v", n, err)
	}
	// What is text still goes through: a real U+FFFD, and an escaped
	// backslash before "ud800".
	for _, body := range []string{`{"name":"ab` + "\uFFFD" + `c","plan":"free"}`, `{"name":"ab\\ud800c","plan":"free"}`} {
		if status, env := postSocket(t, c, "/accounts", body); status != http.StatusOK {
			t.Errorf("POST /accounts %s: %d %+v", body, status, env.Error)
		}
	}
}

// The client refuses a value the socket's JSON cannot carry, one with a
// byte that is not UTF-8, as the server does, naming the field: sent, it
// would arrive with U+FFFD in its place (a name stored changed, a backup
// written to another file).
func TestAdminClientRefusesWhatTheSocketCannotCarry(t *testing.T) {
	_, c := adminOverSocket(t)
	_, err := c.CreateAccount(app.AccountInput{Name: "ab\xffc", Plan: "free"})
	if !app.HasCode(err, app.CodeValidation) || !strings.Contains(err.Error(), "name: must be valid UTF-8") {
		t.Errorf("an account name that is not UTF-8: %v", err)
	}
	if _, err := c.Backup(filepath.Join(t.TempDir(), "back\xfe.db")); !app.HasCode(err, app.CodeValidation) || !strings.Contains(err.Error(), "out: must be valid UTF-8") {
		t.Errorf("a backup path that is not UTF-8: %v", err)
	}
	if list, err := c.ListAccounts(); err != nil || len(list) != 0 {
		t.Fatalf("accounts after the refusal: %+v, %v", list, err)
	}
	acct, err := c.CreateAccount(app.AccountInput{Name: "Acme", Plan: "free"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ImportSuppressions(acct.ID, []app.SuppressionInput{{Recipient: "a@example.com"}, {Recipient: "b\x80@example.com"}})
	if !app.HasCode(err, app.CodeValidation) || !strings.Contains(err.Error(), "rows[1].recipient: must be valid UTF-8") {
		t.Errorf("an import row that is not UTF-8: %v", err)
	}
	// A real U+FFFD, and the text \ufffd, are text.
	for _, name := range []string{"ab\uFFFDc", `ab\ufffd`} {
		got, err := c.CreateAccount(app.AccountInput{Name: name, Plan: "free"})
		if err != nil || got.Name != name {
			t.Errorf("account name %q: %q, %v", name, got.Name, err)
		}
	}
}

// postSocket posts body over the socket as it is, and decodes the answer's
// error envelope (empty on success).
func postSocket(t *testing.T, c *AdminClient, path, body string) (int, envelope) {
	t.Helper()
	resp, err := c.http.Post("http://mailbolt"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var env envelope
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, env
}

// app.TextAdmin, which every management command calls through, refuses a
// value that is not UTF-8 in the words of the socket's client, whether it
// stands before that client (a server runs) or before LocalAdmin on a
// database the command opened itself (none does), where the value was
// stored with U+FFFD: the same field, reason and message on both paths,
// and nothing stored or written.
func TestTextAdminRefusesAsTheSocketsClientDoes(t *testing.T) {
	a, c := adminOverSocket(t)
	acct, err := c.CreateAccount(app.AccountInput{Name: "Acme", Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	bad := "x\xffy"
	dir := t.TempDir()
	for _, tc := range []struct {
		field string
		call  func(app.Admin) error
	}{
		{"name", func(x app.Admin) error { _, err := x.CreateAccount(app.AccountInput{Name: "ab\xffc"}); return err }},
		{"email", func(x app.Admin) error {
			_, err := x.CreateAccount(app.AccountInput{Name: "Beta", Email: "ops@exa\xffmple.com"})
			return err
		}},
		{"plan", func(x app.Admin) error { _, err := x.UpdateAccount(acct.ID, app.AccountUpdate{Plan: &bad}); return err }},
		{"name", func(x app.Admin) error { _, err := x.UpdateAccount(acct.ID, app.AccountUpdate{Name: &bad}); return err }},
		{"account_id", func(x app.Admin) error { _, err := x.CreateKey(acct.ID+"\xff", app.KeyInput{Name: "ci"}); return err }},
		{"name", func(x app.Admin) error { _, err := x.CreateKey(acct.ID, app.KeyInput{Name: "c\xc3i"}); return err }},
		{"scopes[1]", func(x app.Admin) error {
			_, err := x.CreateKey(acct.ID, app.KeyInput{Name: "ci", Scopes: []string{"account:read", "x\xc3"}})
			return err
		}},
		{"out", func(x app.Admin) error { _, err := x.Backup(filepath.Join(dir, "back\xfe.db")); return err }},
		{"address", func(x app.Admin) error { _, err := x.AddIP("192.0.2.\xff", "mx.example.com", "", ""); return err }},
		{"hostname", func(x app.Admin) error { _, err := x.AddIP("192.0.2.1", "mx.exa\xffmple.com", "", ""); return err }},
		{"warmup", func(x app.Admin) error { _, err := x.AddIP("192.0.2.1", "mx.example.com", "", "50,\xff"); return err }},
		{"account_id", func(x app.Admin) error { _, err := x.AssignIP("192.0.2.1", bad); return err }},
		{"address", func(x app.Admin) error { return x.RemoveIP(bad) }},
		{"rows[1].stream", func(x app.Admin) error {
			_, err := x.ImportSuppressions(acct.ID, []app.SuppressionInput{{Recipient: "a@example.com"}, {Recipient: "b@example.com", Stream: bad}})
			return err
		}},
		{"email", func(x app.Admin) error { _, err := x.AddMember(acct.ID, "ann@exa\xffmple.com", "viewer"); return err }},
		{"role", func(x app.Admin) error { _, err := x.AddMember(acct.ID, "ann@example.com", "view\xe2\x82"); return err }},
		{"email", func(x app.Admin) error { _, err := x.ResetPassword(acct.ID, "ann@exa\xffmple.com"); return err }},
		{"account_id", func(x app.Admin) error { _, err := x.RemoveMember(bad, "ann@example.com", false); return err }},
	} {
		want := app.AsError(tc.call(c))
		if want.Code != app.CodeValidation || want.Message != tc.field+": must be valid UTF-8" || want.Details["field"] != tc.field {
			t.Errorf("the socket's client, %s: %v %v", tc.field, want, want.Details)
			continue
		}
		for path, x := range map[string]app.Admin{
			"while a server runs": app.TextAdmin{Admin: c},
			"without a server":    app.TextAdmin{Admin: app.LocalAdmin{App: a}},
		} {
			if got := app.AsError(tc.call(x)); got.Error() != want.Error() || !reflect.DeepEqual(got.Details, want.Details) {
				t.Errorf("%s, %s: %v %v, want %v %v", tc.field, path, got, got.Details, want, want.Details)
			}
		}
	}
	if list, err := c.ListAccounts(); err != nil || len(list) != 1 || list[0].Name != "Acme" || list[0].Plan != "pro" {
		t.Errorf("accounts after the refusals: %+v, %v", list, err)
	}
	if keys, err := c.ListKeys(acct.ID); err != nil || len(keys) != 0 {
		t.Errorf("keys after the refusals: %+v, %v", keys, err)
	}
	if ips, err := c.ListIPs(); err != nil || len(ips) != 0 {
		t.Errorf("IPs after the refusals: %+v, %v", ips, err)
	}
	n := 0
	err = a.DB().View(func(tx *storage.Tx) error { n = tx.SuppressionCount(acct.ID); return nil })
	if err != nil || n != 0 {
		t.Errorf("suppressions after the refusals: %d, %v", n, err)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("a refused backup wrote %v", files)
	}
}
