package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tableRows splits a tabwriter table into the fields of each row, keyed by
// the first column; the header row is dropped.
func tableRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	rows := map[string][]string{}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	return rows
}

func wantRow(t *testing.T, rows map[string][]string, want ...string) {
	t.Helper()
	if got := rows[want[0]]; !slices.Equal(got, want) {
		t.Errorf("row %s = %v, want %v", want[0], got, want)
	}
}

func runFails(t *testing.T, wantInErr string, args ...string) {
	t.Helper()
	out, err := run(t, args...)
	if err == nil || !strings.Contains(err.Error(), wantInErr) {
		t.Errorf("mailbolt %s: err %v (want it to mention %q)\n%s", strings.Join(args, " "), err, wantInErr, out)
	}
}

func TestIPsCommandsOfflineAndThroughTheServer(t *testing.T) {
	dir := t.TempDir()
	d := []string{"--data-dir", dir}
	args := func(a ...string) []string { return append(a, d...) }

	// Server stopped: the CLI opens the database itself.
	grower := lastLine(mustRun(t, args("accounts", "create", "--name", "Grower", "--plan", "growth")...))
	free := lastLine(mustRun(t, args("accounts", "create", "--name", "Free")...))
	out := mustRun(t, args("ips", "add", "192.0.2.1", "--hostname", "MTA1.example.com", "--pool", "txn", "--warmup", "10,20")...)
	if !strings.Contains(out, "added 192.0.2.1 to pool txn (EHLO mta1.example.com, warm-up 10,20: 10 messages today)") {
		t.Errorf("ips add: %s", out)
	}
	mustRun(t, args("ips", "add", "::ffff:192.0.2.2", "--hostname", "mta2.example.com")...)
	runFails(t, "already exists", args("ips", "add", "192.0.2.1", "--hostname", "x.example.com")...)
	runFails(t, "not an IP address", args("ips", "add", "192.0.2.300", "--hostname", "x.example.com")...)
	runFails(t, "warm-up", args("ips", "add", "192.0.2.3", "--hostname", "x.example.com", "--warmup", "20,10")...)
	runFails(t, "hostname", args("ips", "add", "192.0.2.3")...)

	if out := mustRun(t, args("ips", "assign", "192.0.2.1", "--account", grower)...); !strings.Contains(out, "assigned 192.0.2.1 (pool txn) to account "+grower) {
		t.Errorf("ips assign: %s", out)
	}
	runFails(t, "dedicated-IP entitlement (plan growth: 1; assigned: 1)", args("ips", "assign", "192.0.2.2", "--account", grower)...)
	runFails(t, "entitlement (plan free: 0; assigned: 0)", args("ips", "assign", "192.0.2.2", "--account", free)...)
	runFails(t, "account not found", args("ips", "assign", "192.0.2.2", "--account", "no-such-account")...)
	runFails(t, "not found", args("ips", "assign", "192.0.2.9", "--account", grower)...)
	runFails(t, "account", args("ips", "assign", "192.0.2.2")...)
	runFails(t, "none of the others", args("ips", "assign", "192.0.2.2", "--account", grower, "--unassign")...)

	rows := tableRows(t, mustRun(t, args("ips", "list")...))
	wantRow(t, rows, "192.0.2.1", "mta1.example.com", "txn", grower, "10,20", "1", "10", "0")
	wantRow(t, rows, "192.0.2.2", "mta2.example.com", "default", "shared", "standard", "1", "50", "0")
	rows = tableRows(t, mustRun(t, args("pools", "list")...))
	wantRow(t, rows, "default", "192.0.2.2", "-", "1")
	wantRow(t, rows, "txn", "192.0.2.1", grower, "0")

	// Serving: the same commands go through the management socket, and
	// the API shows the account its IPs.
	base, _, stop := startServe(t, dir)
	key := lastLine(mustRun(t, args("keys", "create", "--account", grower, "--name", "ips", "--scopes", "ips:read")...))
	mustRun(t, args("ips", "add", "127.0.0.2", "--hostname", "mx2.mailbolt.test", "--pool", "txn", "--warmup", "none")...)
	if out := mustRun(t, args("ips", "assign", "192.0.2.1", "--unassign")...); !strings.Contains(out, "192.0.2.1 is shared") {
		t.Errorf("ips assign --unassign: %s", out)
	}
	mustRun(t, args("ips", "assign", "127.0.0.2", "--account", grower)...)
	runFails(t, "entitlement (plan growth: 1", args("ips", "assign", "192.0.2.1", "--account", grower)...)
	mustRun(t, args("ips", "remove", "192.0.2.2")...)
	runFails(t, "not found", args("ips", "remove", "192.0.2.2")...)

	rows = tableRows(t, mustRun(t, args("ips", "list")...))
	wantRow(t, rows, "127.0.0.2", "mx2.mailbolt.test", "txn", grower, "none", "1", "unlimited", "0")
	wantRow(t, rows, "192.0.2.1", "mta1.example.com", "txn", "shared", "10,20", "1", "10", "0")
	if len(rows) != 2 {
		t.Errorf("ips list has %d rows, want 2: %v", len(rows), rows)
	}
	rows = tableRows(t, mustRun(t, args("pools", "list")...))
	wantRow(t, rows, "txn", "127.0.0.2,192.0.2.1", grower, "1")
	if len(rows) != 1 {
		t.Errorf("pools list: %v", rows)
	}
	status, body := get(t, base+"/v1/ips", key)
	data, _ := body["data"].([]any)
	if status != 200 || len(data) != 1 || data[0].(map[string]any)["address"] != "127.0.0.2" {
		t.Fatalf("GET /v1/ips: %d %v", status, body)
	}
	stop()

	// What the server changed is in the database.
	rows = tableRows(t, mustRun(t, args("ips", "list")...))
	wantRow(t, rows, "127.0.0.2", "mx2.mailbolt.test", "txn", grower, "none", "1", "unlimited", "0")

	// Flags come from MAILBOLT_<FLAG> too.
	t.Setenv("MAILBOLT_POOL", "from-env")
	t.Setenv("MAILBOLT_WARMUP", "5,10")
	mustRun(t, args("ips", "add", "2001:db8::7", "--hostname", "mta7.example.com")...)
	rows = tableRows(t, mustRun(t, args("ips", "list")...))
	wantRow(t, rows, "2001:db8::7", "mta7.example.com", "from-env", "shared", "5,10", "1", "5", "0")
}

func TestIPsReadCommandsNeedAnExistingDatabase(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	for _, a := range [][]string{
		{"ips", "list"}, {"pools", "list"}, {"ips", "add", "192.0.2.1", "--hostname", "mta.example.com"}, {"ips", "assign", "192.0.2.1", "--account", "x"}, {"ips", "remove", "192.0.2.1"},
	} {
		runFails(t, "no database", append(a, "--data-dir", missing)...)
	}
}
