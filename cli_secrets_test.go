package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"mailbolt/storage/pgtest"
)

// TestSecretKeyFileLifecycle: serve creates the key file and says so,
// backup names it, rotate is refused while serving and works offline,
// the server starts under the new key, a backup from before the rotation
// restores only with the kept old key, and a start with a foreign key is
// refused naming the file.
func TestSecretKeyFileLifecycle(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "secret.key")
	base, out, stop := startServe(t, dir)
	if !strings.Contains(out.String(), "Created the secret key file "+keyFile) {
		t.Fatalf("serve did not name the key file it created:\n%s", out)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	testKey := testKeyRe.FindStringSubmatch(out.String())[1]
	before := filepath.Join(t.TempDir(), "before.db")
	if bo := mustRun(t, "backup", "--out", before, "--data-dir", dir); !strings.Contains(bo, "sealed with the key in "+keyFile) {
		t.Fatalf("backup does not name the key file:\n%s", bo)
	}
	if ro, err := run(t, "secrets", "rotate", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "stop it") {
		t.Fatalf("rotate while serving: %v\n%s", err, ro)
	}
	stop()

	ro := mustRun(t, "secrets", "rotate", "--data-dir", dir)
	kept := regexp.MustCompile(`old key is kept at (\S+):`).FindStringSubmatch(ro)
	if kept == nil || !strings.HasPrefix(kept[1], keyFile+".old-") {
		t.Fatalf("rotate output:\n%s", ro)
	}
	base, _, stop = startServe(t, dir)
	if status, _ := get(t, base+"/v1/account", testKey); status != 200 {
		t.Fatalf("key after rotation: %d", status)
	}
	stop()

	restored := t.TempDir()
	os.WriteFile(filepath.Join(restored, "secret.key"), mustRead(t, keyFile), 0o600)
	if _, err := run(t, "restore", "--from", before, "--data-dir", restored); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("restore of a pre-rotation backup under the new key: %v", err)
	}
	mustRun(t, "restore", "--from", before, "--data-dir", restored, "--secret-key-file", kept[1])

	// A foreign key file: serve refuses, naming it.
	foreign := filepath.Join(t.TempDir(), "foreign.key")
	os.WriteFile(foreign, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	_, err := run(t, "serve", "--data-dir", dir, "--secret-key-file", foreign, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), foreign) {
		t.Fatalf("serve with a foreign key: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSecretsRotateOnPostgres is the audit's case: `secrets rotate
// --database` while a node serves that database is refused, naming the
// node, and changes nothing, so what the node seals meanwhile stays
// readable; with every node stopped it re-seals, and a node started with
// the new key file reads every secret (webhook signing secrets, DKIM keys,
// the server secret), while one with the old key is refused.
func TestSecretsRotateOnPostgres(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	key := filepath.Join(t.TempDir(), "secret.key")
	mustRun(t, "secrets", "new-key", key)
	oldKey := mustRead(t, key)
	db := []string{"--database", url, "--secret-key-file", key}
	rotate := append([]string{"secrets", "rotate", "--data-dir", t.TempDir()}, db...)

	base, out, stop := startServe(t, t.TempDir(), db...)
	live := liveKeyRe.FindStringSubmatch(out.String())[1]
	call := apiCaller(t, base, live)
	dom := call("POST", "/v1/domains", `{"name":"acme.test"}`, 201)
	call("POST", "/v1/webhooks", `{"url":"https://hooks.example.com/a","events":["message.delivered"]}`, 201)

	ro, err := run(t, rotate...)
	if err == nil || !strings.Contains(err.Error(), "mailbolt node ") || !strings.Contains(err.Error(), "Stop every node first") {
		t.Fatalf("rotate while a node serves: %v\n%s", err, ro)
	}
	if !bytes.Equal(mustRead(t, key), oldKey) {
		t.Fatal("a refused rotation changed the key file")
	}
	// The node still seals under the key it holds, which is still the
	// database's.
	call("POST", "/v1/webhooks", `{"url":"https://hooks.example.com/b","events":["message.delivered"]}`, 201)
	stop()

	ro = mustRun(t, rotate...)
	kept := regexp.MustCompile(`old key is kept at (\S+):`).FindStringSubmatch(ro)
	if !strings.Contains(ro, "secrets re-sealed under a new key, written to "+key) || kept == nil {
		t.Fatalf("rotate output:\n%s", ro)
	}
	if bytes.Equal(mustRead(t, key), oldKey) {
		t.Fatal("the key file still holds the old key")
	}
	base, _, stop = startServe(t, t.TempDir(), db...)
	call = apiCaller(t, base, live)
	if hooks := call("GET", "/v1/webhooks", "", 200)["data"].([]any); len(hooks) != 2 {
		t.Errorf("webhooks after the rotation: %v", hooks)
	}
	call("GET", "/v1/domains/"+dom["id"].(string), "", 200)
	stop()

	_, err = run(t, "serve", "--data-dir", t.TempDir(), "--database", url, "--secret-key-file", kept[1],
		"--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0", "--metrics-addr=")
	if err == nil || !strings.Contains(err.Error(), kept[1]) {
		t.Errorf("serve with the old key after the rotation: %v", err)
	}
}
