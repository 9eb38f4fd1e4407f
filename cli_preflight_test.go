package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"mailbolt/web"
)

// runCanceled runs the command with a context that has already ended: a
// serve that gets past its start-up stops again at once instead of running
// until the test's end.
func runCanceled(args ...string) (string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// testRelay is a --relay for settings refused before anything connects.
const testRelay = "smtp.example.net:587"

// refusedSettings are settings serve refuses, each with what its error
// must name: the ones an audit found doctor passing and serve refusing
// only after it had written the database, and every numeric flag of serve
// below zero.
func refusedSettings() []struct {
	args []string
	env  map[string]string
	want string
} {
	type c = struct {
		args []string
		env  map[string]string
		want string
	}
	out := []c{
		{args: []string{"--log-level", "bogus"}, want: "--log-level"},
		{args: []string{"--log-format", "xml"}, want: "--log-format"},
		{args: []string{"--geoip-db", "/nonexistent"}, want: "--geoip-db"},
		{args: []string{"--tls-cert", "/nx", "--tls-key", "/nx"}, want: "--tls-cert"},
		{env: map[string]string{"GRADER_RATE_LIMIT": "abc"}, want: "GRADER_RATE_LIMIT"},
		{env: map[string]string{"GRADER_DISABLED": "maybe"}, want: "GRADER_DISABLED"},
		// hooks refuses a base delay above its longest wait (1h), which it
		// learns only once the database is open.
		{args: []string{"--webhook-base-delay", "2h"}, want: "--webhook-base-delay"},
		{args: []string{"--tls-report-retry-base", "1h", "--tls-report-retry-max", "1m"}, want: "--tls-report-retry-max"},
		{args: []string{"--tls-report-retry-pending", "0"}, want: "--tls-report-retry-pending"},
		{args: []string{"--tls-report-retry-base", "1h", "--tls-report-retry-max", "2h", "--tls-report-retry-lifetime", "30m"}, want: "--tls-report-retry-lifetime"},
		// An empty --http-addr listened on every address on a random port
		// when --public-url was given, exposing the whole plain-HTTP API.
		{args: []string{"--http-addr", "", "--public-url", "https://mail.example.net"}, want: `--http-addr: "" is not host:port`},
		{args: []string{"--http-addr", "nope"}, want: `--http-addr: "nope" is not host:port`},
		// Given empty, not unknown: the machine's name was not even asked.
		{args: []string{"--hostname", ""}, want: "--hostname was given empty"},
		// Options of the relay did nothing without one.
		{args: []string{"--relay-username", "u"}, want: "--relay-username needs --relay"},
		{args: []string{"--relay-password", "p"}, want: "--relay-password needs --relay"},
		{args: []string{"--relay-implicit-tls"}, want: "--relay-implicit-tls needs --relay"},
		// AUTH PLAIN is sent only with a user name, and with a password of
		// one character at least.
		{args: []string{"--relay", testRelay, "--relay-password", "p"}, want: "--relay-password needs --relay-username"},
		{args: []string{"--relay", testRelay, "--relay-username", "u"}, want: "--relay-username needs --relay-password"},
		{args: []string{"--relay", testRelay, "--relay-username", "u"}, env: map[string]string{"MAILBOLT_RELAY_PASSWORD": ""},
			want: "--relay-username needs --relay-password"},
		// The flags of MX delivery did nothing with a relay; given at their
		// default, or by their variable, they are given all the same.
		{args: []string{"--relay", testRelay, "--mx-port", "25"}, want: "--mx-port (or MAILBOLT_MX_PORT) does nothing with --relay"},
		{args: []string{"--relay", testRelay}, env: map[string]string{"MAILBOLT_DNSSEC": "true"},
			want: "--dnssec (or MAILBOLT_DNSSEC) does nothing with --relay"},
		{args: []string{"--relay", testRelay}, env: map[string]string{"MAILBOLT_TLS_REPORT_RETRY_PENDING": "10"},
			want: "--tls-report-retry-pending (or MAILBOLT_TLS_REPORT_RETRY_PENDING) does nothing with --relay"},
		// Sending domains were told to publish these as given.
		{args: []string{"--tracking-host", "bad host!"}, want: `--tracking-host: "bad host!"`},
		{args: []string{"--tracking-host", "https://t.example.com"}, want: `--tracking-host: "https://t.example.com"`},
		{args: []string{"--spf-include", "bad..name"}, want: `--spf-include: "bad..name"`},
		{args: []string{"--spf-include", "spf"}, want: `--spf-include: "spf"`},
	}
	for _, f := range mxOnlyFlags {
		// A value the flag takes, so that the refusal is --relay's.
		v := map[string]string{"mx-port": "2525", "mx-allow-cidrs": "10.0.0.0/8", "mta-sts-port": "8443", "dnssec": "true",
			"tls-report-retry-base": "1m", "tls-report-retry-max": "1h", "tls-report-retry-lifetime": "12h",
			"tls-report-retry-pending": "10"}[f.flag]
		out = append(out, c{args: []string{"--relay", testRelay, "--" + f.flag + "=" + v},
			want: "--" + f.flag + " (or " + envVarOf(f.flag) + ") does nothing with --relay"})
	}
	newServeCommand().Flags().VisitAll(func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "int", "int64":
			out = append(out, c{args: []string{"--" + f.Name, "-1"}, want: "--" + f.Name})
		case "duration":
			out = append(out, c{args: []string{"--" + f.Name, "-1s"}, want: "--" + f.Name})
		}
	})
	return out
}

// What serve refuses stops it before it writes anything (no data dir, no
// key file, no database), with an error that names the flag or variable;
// doctor fails each on its configuration line, as it runs the same checks.
func TestRefusedSettingsWriteNothingAndFailDoctor(t *testing.T) {
	for _, c := range refusedSettings() {
		name := strings.Join(c.args, " ")
		for k, v := range c.env {
			name += k + "=" + v
		}
		t.Run(name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			dir := filepath.Join(t.TempDir(), "data")
			base := []string{"--data-dir", dir, "--hostname", "mta.example.net", "--http-addr", "127.0.0.1:0",
				"--smtp-addr", "127.0.0.1:0", "--metrics-addr", ""}
			out, err := runCanceled(append(append([]string{"serve"}, base...), c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("serve: %v, want a refusal naming %s\n%s", err, c.want, out)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a refused start wrote the data dir (%v)", err)
			}
			out, err = runCanceled(append(append([]string{"doctor", "--dns-server", "127.0.0.1:1", "--probe-timeout", "1s"},
				base...), c.args...)...)
			if err == nil || !strings.Contains(out, "✗ configuration: ") || !strings.Contains(out, c.want) {
				t.Errorf("doctor: %v, want a failed configuration line naming %s\n%s", err, c.want, out)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("doctor wrote the data dir (%v)", err)
			}
		})
	}
}

// An --http-addr that is not host:port is refused as that, not as an
// address that listens everywhere (which would ask for --public-url).
func TestStartupFindingsLeaveAMalformedAddressToValidate(t *testing.T) {
	for _, addr := range []string{"", "nope"} {
		cfg := defaultServeConfig()
		cfg.hostname, cfg.httpAddr = "mta.example.net", addr
		if f := cfg.startupFindings(); len(f) != 0 {
			t.Errorf("--http-addr %q: findings %v, want none (validate refuses it)", addr, f)
		}
	}
	cfg := defaultServeConfig()
	cfg.hostname, cfg.httpAddr = "mta.example.net", "0.0.0.0:8080"
	if f := cfg.startupFindings(); len(f) != 1 || f[0].flag != "--public-url" || !f[0].refuse {
		t.Errorf("--http-addr 0.0.0.0:8080 without --public-url: findings %v, want the --public-url refusal", f)
	}
}

// --spf-include and --tracking-host take the host names sending domains
// are told to publish (refusedSettings has what they refuse).
func TestHostNameFlagsTakeHostNames(t *testing.T) {
	cfg := defaultServeConfig()
	cfg.hostname, cfg.spfInclude, cfg.trackingHost = "mta.example.net", "_spf.example.net", "Track.Example.NET."
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	// A CNAME target is a host: no underscore there.
	cfg.trackingHost = "_track.example.net"
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "--tracking-host") {
		t.Fatalf("--tracking-host _track.example.net: %v", err)
	}
}

// A port serve cannot bind stops it before the database is opened: nothing
// is written, not even on a first start. A port held by a server on the
// same data dir is said to be that.
func TestUnbindablePortWritesNothing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, flag := range []string{"--http-addr", "--smtp-addr", "--metrics-addr"} {
		dir := filepath.Join(t.TempDir(), "data")
		args := []string{"serve", "--data-dir", dir, "--hostname", "mta.example.net", "--http-addr", "127.0.0.1:0",
			"--smtp-addr", "127.0.0.1:0", "--metrics-addr", "", flag, taken.Addr().String()}
		out, err := runCanceled(args...)
		if err == nil || !strings.Contains(err.Error(), flag+": listen on") {
			t.Errorf("%s taken: %v\n%s", flag, err, out)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s taken: the data dir was written (%v)", flag, err)
		}
	}

	dir := t.TempDir()
	base, _, _ := startServe(t, dir)
	_, err = runCanceled("serve", "--data-dir", dir, "--http-addr", strings.TrimPrefix(base, "http://"),
		"--smtp-addr", "127.0.0.1:0", "--metrics-addr", "")
	if err == nil || !strings.Contains(err.Error(), "another mailbolt is already running on "+dir) {
		t.Errorf("a second server on the first one's port: %v", err)
	}
}

// --max-body-size 0 and --ip-rate-limit 0 mean the defaults, as
// configuration.md says, rather than a limit of nothing.
func TestZeroLimitsMeanTheDefaults(t *testing.T) {
	cfg := defaultServeConfig()
	cfg.maxBodySize, cfg.ipRateLimit = 0, 0
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	wc, err := cfg.webConfig(nil)
	def := web.DefaultConfig()
	if err != nil || wc.MaxBodyBytes != def.MaxBodyBytes || wc.IPRateLimit != def.IPRateLimit {
		t.Fatalf("body %d, rate %d, %v", wc.MaxBodyBytes, wc.IPRateLimit, err)
	}
	_, out, _ := startServe(t, t.TempDir(), "--max-body-size", "0", "--ip-rate-limit", "0")
	if !strings.Contains(out.String(), "listening on") {
		t.Fatalf("serve with zero limits:\n%s", out)
	}
}

// GRADER_* booleans take what strconv.ParseBool takes, as configuration.md
// lists, and nothing else.
func TestGraderBooleans(t *testing.T) {
	only := func(v string) func(string) (string, bool) {
		return func(name string) (string, bool) {
			if name == "GRADER_DISABLED" {
				return v, true
			}
			return "", false
		}
	}
	for v, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "t": true, "false": false, "0": false, "False": false} {
		gs, err := readGraderSettings(only(v))
		if err != nil || gs.disabled != want {
			t.Errorf("GRADER_DISABLED=%s: %v, %v", v, gs.disabled, err)
		}
	}
	for _, v := range []string{"yes", "on", "2"} {
		_, err := readGraderSettings(only(v))
		if err == nil || !strings.Contains(err.Error(), "GRADER_DISABLED") {
			t.Errorf("GRADER_DISABLED=%s: %v", v, err)
		}
	}
}

// With --relay, the flags that shape the connection to it, and those
// that serve more than MX delivery (--dns-server, --tls-roots, the SMTP
// timeouts and connection cap), are taken; so is a user name with its
// password from the environment. A configuration built in code (bench)
// counts no flag as given.
func TestRelayTakesItsOwnFlags(t *testing.T) {
	t.Setenv("MAILBOLT_RELAY_PASSWORD", "secret")
	ca := newTLSTestCA(t)
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCanceled("serve", "--data-dir", t.TempDir(), "--hostname", "mta.example.net", "--http-addr", "127.0.0.1:0",
		"--smtp-addr", "127.0.0.1:0", "--metrics-addr", "", "--relay", testRelay, "--relay-username", "u", "--relay-implicit-tls",
		"--dns-server", "127.0.0.1:53", "--dns-timeout", "2s", "--tls-roots", roots, "--smtp-host-connections", "3",
		"--smtp-connect-timeout", "5s", "--smtp-command-timeout", "1m")
	if err != nil || !strings.Contains(out, "listening on") {
		t.Fatalf("serve with --relay and its own flags: %v\n%s", err, out)
	}

	cfg := defaultServeConfig()
	cfg.hostname, cfg.relay, cfg.mxPort = "mta.example.net", testRelay, 2525
	if err := cfg.validate(); err != nil {
		t.Fatalf("--relay in a configuration built in code: %v", err)
	}
}
