package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --dnssec trusts the resolver's AD bit, so only a resolver on this host
// will do; --tls-roots must load; --mta-sts-port must be a port.
func TestServeTransportFlagsRefused(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "roots.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dnssec"}, "--dnssec needs --dns-server at a loopback address"},
		{[]string{"--dnssec", "--dns-server", "192.0.2.53:53"}, "--dnssec needs --dns-server at a loopback address"},
		{[]string{"--tls-roots", bad}, "holds no PEM certificate"},
		{[]string{"--tls-roots", bad + ".missing"}, "--tls-roots"},
		{[]string{"--mta-sts-port", "0"}, "--mta-sts-port"},
	} {
		dir := t.TempDir()
		args := append([]string{"serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
			"--metrics-addr=", "--hostname", "mta.example.net"}, c.args...)
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a refusal containing %q\n%s", c.args, err, c.want, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "mailbolt.db")); err == nil {
			t.Errorf("%v: a refused start wrote a database", c.args)
		}
	}
}
