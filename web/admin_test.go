package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"mailbolt/app"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

// adminOverSocket serves app.LocalAdmin on a socket in a fresh data dir
// and dials it, as a management command does while serve runs.
func adminOverSocket(t *testing.T) (*app.App, *AdminClient) {
	t.Helper()
	return adminOverSocketOn(t, storagetest.Options(t))
}

// adminOverSocketOn is adminOverSocket on a database opened with sopts.
func adminOverSocketOn(t *testing.T, sopts storage.Options) (*app.App, *AdminClient) {
	t.Helper()
	dir := t.TempDir()
	db, err := storage.Open(dir, sopts)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(db, app.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ListenAdmin(dir, app.LocalAdmin{App: a, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		db.Close()
	})
	c, err := DialAdmin(dir)
	if err != nil {
		t.Fatal(err)
	}
	return a, c
}

// raw makes one request over the socket and returns the body as sent.
func (c *AdminClient) raw(t *testing.T, method, path, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, "http://mailbolt"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s %v", method, path, resp.StatusCode, b, err)
	}
	return b
}

// The socket's answers are admin views: a key's hash never goes over the
// wire in any form, and a key's secret only in the answer that creates it.
func TestAdminSocketCarriesNoKeyHash(t *testing.T) {
	a, c := adminOverSocket(t)
	acct, err := c.CreateAccount(app.AccountInput{Name: "Acme", Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	if acct.Name != "Acme" || acct.Plan != "pro" || acct.RateLimit != app.Limits(storage.Account{Plan: "pro"}).RateLimit {
		t.Fatalf("account %+v", acct)
	}
	created, err := c.CreateKey(acct.ID, app.KeyInput{Name: "ci", Scopes: []string{"account:read"}})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := a.Authenticate(created.Secret); err != nil || p.KeyID != created.Key.ID {
		t.Fatalf("the secret shown at creation does not authenticate: %v", err)
	}
	newKey := c.raw(t, "POST", "/keys", `{"account_id":"`+acct.ID+`","name":"raw"}`)
	var rawSecret struct {
		Key    struct{ ID string }
		Secret string
	}
	if err := json.Unmarshal(newKey, &rawSecret); err != nil || rawSecret.Secret == "" {
		t.Fatalf("POST /keys: %s (%v)", newKey, err)
	}
	answers := map[string][]byte{
		"POST /keys":    newKey,
		"GET /keys":     c.raw(t, "GET", "/keys?account="+acct.ID, ""),
		"GET /accounts": c.raw(t, "GET", "/accounts", ""),
		"POST revoke":   c.raw(t, "POST", "/keys/"+created.Key.ID+"/revoke", ""),
	}
	for _, id := range []string{created.Key.ID, rawSecret.Key.ID} {
		var hash []byte
		if err := a.DB().View(func(tx *storage.Tx) error {
			k, err := tx.APIKeyByID(id)
			hash = k.Hash
			return err
		}); err != nil || len(hash) == 0 {
			t.Fatalf("stored key %s: hash %x, %v", id, hash, err)
		}
		forms := map[string][]byte{"raw": hash, "hex": []byte(hex.EncodeToString(hash)),
			"base64": []byte(base64.StdEncoding.EncodeToString(hash)), "base64url": []byte(base64.RawURLEncoding.EncodeToString(hash))}
		for name, body := range answers {
			for form, b := range forms {
				if bytes.Contains(body, b) {
					t.Errorf("%s carries key %s's hash (%s): %s", name, id, form, body)
				}
			}
			if bytes.Contains(bytes.ToLower(body), []byte(`"hash"`)) {
				t.Errorf("%s has a hash field: %s", name, body)
			}
		}
	}
	for name, body := range answers {
		if name != "POST /keys" && (bytes.Contains(body, []byte(created.Secret)) || bytes.Contains(body, []byte(rawSecret.Secret))) {
			t.Errorf("%s shows a key's secret again: %s", name, body)
		}
	}

	keys, err := c.ListKeys(acct.ID)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %+v, %v", keys, err)
	}
	for _, k := range keys {
		if k.ID == created.Key.ID && (k.RevokedAt == nil || k.Name != "ci" || k.Prefix == "" || k.Scopes[0] != "account:read") {
			t.Errorf("revoked key as listed: %+v", k)
		}
	}
	if _, err := c.ListKeys("no-such-account"); !app.HasCode(err, app.CodeNotFound) {
		t.Errorf("keys of an unknown account: %v", err)
	}
}

// A backup into a directory that does not exist is the caller's mistake,
// named as such, not an internal error; one into an existing directory
// works. The backup is of the embedded file (PostgreSQL's is pg_dump's),
// so this test stays on it.
func TestAdminSocketBackupNamesAMissingDirectory(t *testing.T) {
	_, c := adminOverSocketOn(t, storage.DefaultOptions())
	missing := filepath.Join(t.TempDir(), "no", "such")
	_, err := c.Backup(filepath.Join(missing, "x.db"))
	if !app.HasCode(err, app.CodeValidation) || !strings.Contains(err.Error(), missing+" does not exist") {
		t.Fatalf("backup into a missing directory: %v", err)
	}
	if n, err := c.Backup(filepath.Join(t.TempDir(), "ok.db")); err != nil || n == 0 {
		t.Fatalf("backup: %d bytes, %v", n, err)
	}
}

// A backup into a directory the server's process cannot write is a
// validation error that says the server writes the file (it was an
// INTERNAL_ERROR naming a temporary file): the user running the command
// may well be able to write there. Skipped where permissions do not bind
// this process (root).
func TestAdminSocketBackupIntoADirectoryTheServerCannotWrite(t *testing.T) {
	_, c := adminOverSocketOn(t, storage.DefaultOptions())
	dir := storagetest.UnwritableDir(t)
	_, err := c.Backup(filepath.Join(dir, "x.db"))
	want := "writes the backup, and it cannot write to the directory " + dir + " (permission denied)"
	if !app.HasCode(err, app.CodeValidation) || !strings.Contains(err.Error(), "out: the server process (") ||
		!strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}
