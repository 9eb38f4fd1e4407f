package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/app"
	"mailbolt/mta/dkim"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/storage"
)

// syncBuffer is an io.Writer safe to read while a command writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// run executes one CLI command in-process and returns its output.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("mailbolt %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

var (
	listenRe  = regexp.MustCompile(`listening on (http://\S+)`)
	liveKeyRe = regexp.MustCompile(`live key: (svc_live_\w+)`)
	testKeyRe = regexp.MustCompile(`test key: (svc_test_\w+)`)
)

// startServe runs `mailbolt serve` in-process until the test ends and
// returns the base URL and the printed output.
func startServe(t *testing.T, dataDir string, extra ...string) (string, *syncBuffer, func()) {
	t.Helper()
	url, out, _, stop := startServeLogged(t, dataDir, extra...)
	return url, out, stop
}

// serveProcess is one `mailbolt serve` run as a process of its own, so
// that a test can SIGKILL it.
type serveProcess struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:port
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{} // closed once the process is reaped
	err    error         // what Wait said; read after exited
}

// startServeProcess runs the binary bin's serve on dataDir and waits for
// its "listening on" line. The process is sent SIGTERM when the test ends
// (and the tail of its log shown if the test failed).
func startServeProcess(t *testing.T, bin, dataDir string, args ...string) *serveProcess {
	t.Helper()
	s := &serveProcess{stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, append([]string{"serve", "--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0"}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		<-s.exited
		if t.Failed() {
			t.Logf("serve %s stderr (tail):\n%s", s.base, tail(s.stderr.String(), 3000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listenRe.FindStringSubmatch(s.stdout.String()); m != nil {
			s.base = m[1]
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("serve exited: %v\nstdout:\n%s\nstderr:\n%s", s.err, s.stdout, s.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start\nstdout:\n%s\nstderr:\n%s", s.stdout, s.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (s *serveProcess) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// destZone starts a DNS server in which dest.test's mail goes to
// mx.dest.test, on loopback (where a test's sink listens).
func destZone(t *testing.T) *dnstest.Server {
	zone := dnstest.Start(t)
	zone.MX("dest.test", 10, "mx.dest.test")
	zone.A("mx.dest.test", "127.0.0.1")
	return zone
}

// publishRecords puts the DNS records of dom (an API domain answer) in
// zone, as its owner would: CNAMEs as they are, TXT values split into
// strings.
func publishRecords(zone *dnstest.Server, dom map[string]any) {
	for _, r := range dom["records"].([]any) {
		rec := r.(map[string]any)
		if rec["type"] == "CNAME" {
			zone.CNAME(rec["name"].(string), rec["value"].(string))
		} else {
			zone.LongTXT(rec["name"].(string), dkim.JoinTXT(rec["value"].(string)))
		}
	}
}

// startServeLogged is startServe that also returns serve's log (stderr).
func startServeLogged(t *testing.T, dataDir string, extra ...string) (string, *syncBuffer, *syncBuffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, log := &syncBuffer{}, &syncBuffer{}
	cmd := newRootCommand()
	cmd.SetOut(out)
	cmd.SetErr(log)
	// No metrics endpoint unless extra asks for one: tests run side by side.
	cmd.SetArgs(append([]string{"serve", "--data-dir", dataDir, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
		"--metrics-addr="}, extra...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !listenRe.MatchString(out.String()) {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(stop)
	return listenRe.FindStringSubmatch(out.String())[1], out, log, stop
}

func get(t *testing.T, url, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestFirstStartPrintsKeysOnce(t *testing.T) {
	dir := t.TempDir()
	base, out, stop := startServe(t, dir)
	live := liveKeyRe.FindStringSubmatch(out.String())
	test := testKeyRe.FindStringSubmatch(out.String())
	if live == nil || test == nil {
		t.Fatalf("no keys printed:\n%s", out)
	}
	status, acct := get(t, base+"/v1/account", live[1])
	if status != 200 || acct["name"] != "default" {
		t.Fatalf("default account: %d %v", status, acct)
	}
	if status, _ := get(t, base+"/v1/account", test[1]); status != 200 {
		t.Fatalf("test key: %d", status)
	}
	stop()
	_, out2, _ := startServe(t, dir)
	if strings.Contains(out2.String(), "svc_") {
		t.Fatalf("second start printed keys again:\n%s", out2)
	}
}

// A first start that cannot bind its port creates no account, so the next
// start still prints the keys.
func TestFirstStartThatCannotBindKeepsNoKeys(t *testing.T) {
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	out, err := run(t, "serve", "--data-dir", dir, "--http-addr", taken.Addr().String(), "--smtp-addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "--http-addr") {
		t.Fatalf("serve on a taken port: %v\n%s", err, out)
	}
	if strings.Contains(out, "svc_") {
		t.Fatalf("a start that failed printed keys:\n%s", out)
	}
	_, out2, _ := startServe(t, dir)
	if liveKeyRe.FindStringSubmatch(out2.String()) == nil {
		t.Fatalf("the first start that bound printed no keys:\n%s", out2)
	}
}

func TestManagementWhileServingAndStopped(t *testing.T) {
	dir := t.TempDir()
	base, _, stop := startServe(t, dir)

	// While serving: the CLI goes through the management socket.
	info, err := os.Stat(filepath.Join(dir, "mailbolt.sock"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", info, err)
	}
	acctID := lastLine(mustRun(t, "accounts", "create", "--name", "Acme", "--plan", "pro", "--data-dir", dir))
	if _, err := uuid.Parse(acctID); err != nil {
		t.Fatalf("last line %q is not an account id", acctID)
	}
	key := lastLine(mustRun(t, "keys", "create", "--account", acctID, "--name", "ci", "--scopes", "account:read,suppressions:write", "--data-dir", dir))
	if !strings.HasPrefix(key, "svc_live_") {
		t.Fatalf("last line %q is not a key", key)
	}
	status, acct := get(t, base+"/v1/account", key)
	if status != 200 || acct["id"] != acctID || acct["plan"] != "pro" {
		t.Fatalf("new key: %d %v", status, acct)
	}
	testKey := lastLine(mustRun(t, "keys", "create", "--account", acctID, "--name", "sandbox", "--test", "--expires-in", "30d", "--data-dir", dir))
	if !strings.HasPrefix(testKey, "svc_test_") {
		t.Fatalf("test key %q", testKey)
	}
	list := mustRun(t, "keys", "list", "--account", acctID, "--data-dir", dir)
	if !strings.Contains(list, "ci") || !strings.Contains(list, "sandbox") || strings.Contains(list, key) {
		t.Fatalf("keys list:\n%s", list)
	}
	if out := mustRun(t, "accounts", "list", "--data-dir", dir); !strings.Contains(out, acctID) || !strings.Contains(out, "default") {
		t.Fatalf("accounts list:\n%s", out)
	}
	var keyID string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " ci ") {
			keyID = strings.Fields(line)[0]
		}
	}
	mustRun(t, "keys", "revoke", keyID, "--data-dir", dir)
	if status, body := get(t, base+"/v1/account", key); status != 401 {
		t.Fatalf("revoked key still works: %d %v", status, body)
	}
	if _, err := run(t, "keys", "revoke", "no-such-key", "--data-dir", dir); err == nil {
		t.Error("revoking an unknown key succeeded")
	}
	if _, err := run(t, "accounts", "create", "--name", "x", "--plan", "platinum", "--data-dir", dir); err == nil {
		t.Error("unknown plan accepted")
	}

	// Backup while serving, and restore refused while serving.
	backup := filepath.Join(t.TempDir(), "snap.db")
	if out := mustRun(t, "backup", "--out", backup, "--data-dir", dir); !strings.Contains(out, "consistency check passed") {
		t.Fatalf("backup: %s", out)
	}
	if _, err := run(t, "restore", "--from", backup, "--data-dir", dir); err == nil {
		t.Fatal("restore ran while the server was up")
	}
	stop()

	// Stopped: the CLI opens the database itself.
	other := lastLine(mustRun(t, "accounts", "create", "--name", "Offline", "--data-dir", dir))
	if _, err := uuid.Parse(other); err != nil {
		t.Fatalf("offline create: %q", other)
	}
	offlineBackup := filepath.Join(t.TempDir(), "offline.db")
	mustRun(t, "backup", "--out", offlineBackup, "--data-dir", dir)

	// Restore the backup taken while serving into a fresh data dir and read it back.
	// Without the key file kept with the backup, restore is refused.
	restored := t.TempDir()
	if out, err := run(t, "restore", "--from", backup, "--data-dir", restored); err == nil || !strings.Contains(err.Error(), "secret key file") {
		t.Fatalf("restore without the key file: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(restored, "secret.key"), mustRead(t, filepath.Join(dir, "secret.key")), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "restore", "--from", backup, "--data-dir", restored)
	out := mustRun(t, "accounts", "list", "--data-dir", restored)
	if !strings.Contains(out, acctID) || strings.Contains(out, other) {
		t.Fatalf("restored accounts:\n%s", out)
	}
	// Restoring over an existing database keeps the old one.
	out = mustRun(t, "restore", "--from", offlineBackup, "--data-dir", restored)
	if !strings.Contains(out, "pre-restore") {
		t.Fatalf("restore over existing: %s", out)
	}
	if out := mustRun(t, "accounts", "list", "--data-dir", restored); !strings.Contains(out, other) {
		t.Fatalf("second restore not applied:\n%s", out)
	}
	base2, _, _ := startServe(t, restored)
	if status, _ := get(t, base2+"/v1/account", testKey); status != 200 {
		t.Fatalf("key from the backup does not work after restore: %d", status)
	}
}

func TestEnvironmentVariables(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("MAILBOLT_DATA_DIR", dir)
	id := lastLine(mustRun(t, "accounts", "create", "--name", "FromEnv"))
	if _, err := os.Stat(filepath.Join(dir, "mailbolt.db")); err != nil {
		t.Fatal("MAILBOLT_DATA_DIR ignored")
	}
	// A flag beats its environment variable.
	other := t.TempDir()
	mustRun(t, "accounts", "create", "--name", "FromFlag", "--data-dir", other)
	if out := mustRun(t, "accounts", "list"); !strings.Contains(out, id) || strings.Contains(out, "FromFlag") {
		t.Fatalf("accounts list:\n%s", out)
	}
	t.Setenv("MAILBOLT_PLAN", "growth")
	mustRun(t, "accounts", "create", "--name", "Grower")
	if out := mustRun(t, "accounts", "list"); !strings.Contains(out, "growth") {
		t.Fatalf("MAILBOLT_PLAN ignored:\n%s", out)
	}
	t.Setenv("MAILBOLT_HTTP_ADDR", "not an address")
	if _, err := run(t, "serve", "--data-dir", t.TempDir()); err == nil {
		t.Fatal("MAILBOLT_HTTP_ADDR ignored")
	}
}

func TestServeFlagsValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--deprecate", "v9"},
		{"--sunset", "2027-06-30"},
		{"--deprecate", "v1", "--sunset", "June"},
		{"--log-level", "loud"},
		{"--max-message-size", "0"},
		{"--delivery-lease", "0s"},
	} {
		if _, err := run(t, append([]string{"serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0"}, args...)...); err == nil {
			t.Errorf("serve %v accepted", args)
		}
	}
}

// --max-message-size defaults to the App's limit and reaches it.
func TestMaxMessageSizeFlag(t *testing.T) {
	cfg := defaultServeConfig()
	if cfg.maxMessage != app.DefaultOptions().MaxMessageSize || cfg.maxMessage != 10<<20 {
		t.Fatalf("default %d", cfg.maxMessage)
	}
	cfg.maxMessage = 12345
	if o := cfg.appOptions(slog.New(slog.DiscardHandler), &dns.Resolver{}, nil, nil, graderSettings{}); o.MaxMessageSize != 12345 {
		t.Fatalf("app gets %d", o.MaxMessageSize)
	}
}

func TestDeprecateFlags(t *testing.T) {
	base, out, _ := startServe(t, t.TempDir(), "--deprecate", "v1", "--sunset", "2099-06-30")
	key := liveKeyRe.FindStringSubmatch(out.String())[1]
	req, _ := http.NewRequest("GET", base+"/v1/account", nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Deprecation") != "true" || resp.Header.Get("Sunset") != "Tue, 30 Jun 2099 00:00:00 GMT" {
		t.Fatalf("headers: %v", resp.Header)
	}
	// A sunset already past was never announced six months ahead on a new
	// database: only --dev starts with it (TestServeRefusesAShortSunset).
	base2, _, _ := startServe(t, t.TempDir(), "--dev", "--deprecate", "v1", "--sunset", "2020-01-01")
	status, body := get(t, base2+"/v1/account", key)
	if status != 410 || fmt.Sprint(body["error"].(map[string]any)["code"]) != "VERSION_SUNSET" {
		t.Fatalf("after sunset: %d %v", status, body)
	}
}

func TestSecondServerOnSameDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	startServe(t, dir)
	if _, err := run(t, "serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0"); err == nil {
		t.Fatal("second server started on a locked data dir")
	}
}

func TestReadCommandsNeedAnExistingDatabase(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{
		{"accounts", "list"}, {"keys", "list", "--account", "x"}, {"keys", "revoke", "x"},
		{"backup", "--out", filepath.Join(t.TempDir(), "b.db")},
		{"keys", "create", "--account", "x", "--name", "k"},
	} {
		out, err := run(t, append(args, "--data-dir", missing)...)
		if err == nil || !strings.Contains(err.Error(), "no database") {
			t.Errorf("%v: %v %s", args, err, out)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Error("a read command created the data dir")
	}
}

func TestServeWithADataDirTooDeepForASocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	base, out, _ := startServe(t, dir)
	key := liveKeyRe.FindStringSubmatch(out.String())[1]
	if status, _ := get(t, base+"/v1/account", key); status != 200 {
		t.Fatalf("serve without a socket: %d", status)
	}
	if _, err := run(t, "accounts", "list", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("management command: %v", err)
	}
}

func TestVersion(t *testing.T) {
	out := mustRun(t, "version")
	want := fmt.Sprintf("schema version: %d\n", storage.LatestSchemaVersion())
	if !strings.HasPrefix(out, "mailbolt ") || !strings.Contains(out, "\nrevision: ") ||
		!strings.Contains(out, "\ngo: "+runtime.Version()+"\n") || !strings.HasSuffix(out, want) {
		t.Fatalf("version:\n%s", out)
	}
}

// accounts update changes only what its flags name, through the socket
// while serving and on the file while stopped; the first-start account is
// the operator's own, on plan enterprise.
func TestAccountsUpdateWhileServingAndStopped(t *testing.T) {
	dir := t.TempDir()
	base, out, stop := startServe(t, dir)
	live := liveKeyRe.FindStringSubmatch(out.String())[1]
	if status, acct := get(t, base+"/v1/account", live); status != 200 || acct["plan"] != "enterprise" || acct["email"] != nil {
		t.Fatalf("first-start account: %d %v", status, acct)
	}
	id := lastLine(mustRun(t, "accounts", "create", "--name", "Acme", "--email", "Ops@Acme.example", "--data-dir", dir))
	key := lastLine(mustRun(t, "keys", "create", "--account", id, "--name", "ci", "--data-dir", dir))
	if _, acct := get(t, base+"/v1/account", key); acct["email"] != "ops@acme.example" || acct["plan"] != "free" {
		t.Fatalf("created account: %v", acct)
	}
	mustRun(t, "accounts", "update", id, "--plan", "pro", "--track-opens", "--data-dir", dir)
	if _, acct := get(t, base+"/v1/account", key); acct["plan"] != "pro" || acct["name"] != "Acme" || acct["email"] != "ops@acme.example" {
		t.Fatalf("after the update through the socket: %v", acct)
	}
	for _, bad := range [][]string{
		{"accounts", "update", id, "--plan", "platinum"},
		{"accounts", "update", id, "--email", "not an address"},
		{"accounts", "update", "no-such-account", "--plan", "pro"},
		{"accounts", "update", id},
	} {
		if out, err := run(t, append(bad, "--data-dir", dir)...); err == nil {
			t.Errorf("%v succeeded:\n%s", bad, out)
		}
	}
	if _, acct := get(t, base+"/v1/account", key); acct["plan"] != "pro" {
		t.Fatalf("a refused update changed the account: %v", acct)
	}
	// An enterprise account's own limits change after its creation too, and
	// 0 goes back to the plan's.
	if out := mustRun(t, "accounts", "update", id, "--plan", "enterprise", "--rate-limit", "5000", "--batch-size", "7000", "--data-dir", dir); !strings.Contains(out, "plan enterprise (5000 requests/s per key, 7000 messages per batch)") {
		t.Errorf("accounts update --rate-limit --batch-size printed:\n%s", out)
	}
	if out := mustRun(t, "accounts", "update", id, "--batch-size", "0", "--data-dir", dir); !strings.Contains(out, "(5000 requests/s per key, 5000 messages per batch)") {
		t.Errorf("accounts update --batch-size 0 printed:\n%s", out)
	}
	if out, err := run(t, "accounts", "update", id, "--rate-limit", "-1", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "rate_limit") {
		t.Errorf("a negative rate limit: %v\n%s", err, out)
	}
	mustRun(t, "accounts", "update", id, "--plan", "pro", "--rate-limit", "0", "--data-dir", dir)
	stop()

	mustRun(t, "accounts", "update", id, "--name", "Acme Inc", "--email", "", "--data-dir", dir)
	base, _, _ = startServe(t, dir)
	if _, acct := get(t, base+"/v1/account", key); acct["name"] != "Acme Inc" || acct["email"] != nil || acct["plan"] != "pro" {
		t.Fatalf("after the offline update: %v", acct)
	}
}

// healthcheck exits 0 while the server is ready and fails once it is gone.
func TestHealthcheckCommand(t *testing.T) {
	base, _, stop := startServe(t, t.TempDir())
	addr := strings.TrimPrefix(base, "http://")
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := run(t, "healthcheck", "--http-addr", addr)
		if err == nil && strings.TrimSpace(out) == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthcheck on a running server: %v\n%s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A timeout that is not positive is refused, not reported as the
	// ready server's deadline passing.
	for _, timeout := range []string{"0", "-1s"} {
		out, err := run(t, "healthcheck", "--http-addr", addr, "--timeout", timeout)
		if err == nil || !strings.Contains(err.Error(), "--timeout must be positive") {
			t.Errorf("healthcheck --timeout %s: %v, want a refusal naming --timeout\n%s", timeout, err, out)
		}
	}
	stop()
	if out, err := run(t, "healthcheck", "--http-addr", addr); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("healthcheck on a stopped server: %v\n%s", err, out)
	}
}

// Settings that would send broken mail are refused before anything is
// written (--dev only warns); a machine name that is no FQDN only warns.
func TestStartupChecks(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hostname", "vm"}, "--hostname"},
		{[]string{"--hostname", "mta.example.123"}, "--hostname"},
		{[]string{"--http-addr", "0.0.0.0:0", "--hostname", "mta.example.net"}, "--public-url"},
		{[]string{"--http-addr", "[::]:0", "--hostname", "mta.example.net"}, "--public-url"},
	} {
		dir := t.TempDir()
		args := append([]string{"serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0"}, c.args...)
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a refusal naming %s\n%s", c.args, err, c.want, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "mailbolt.db")); err == nil {
			t.Errorf("%v: a refused start wrote a database", c.args)
		}
	}
	// --dev warns instead, and the machine's own name only warns.
	_, out, _ := startServe(t, t.TempDir(), "--dev", "--hostname", "vm")
	if liveKeyRe.FindStringSubmatch(out.String()) == nil {
		t.Fatalf("--dev start:\n%s", out)
	}
	for _, name := range []string{"mta.example.net", "MX1.Example.COM."} {
		if !isFQDN(name) {
			t.Errorf("isFQDN(%q) = false", name)
		}
	}
	for _, name := range []string{"vm", "localhost", "-a.example", "a..b", "1.2.3.4", ""} {
		if isFQDN(name) {
			t.Errorf("isFQDN(%q) = true", name)
		}
	}
}
