package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"mailbolt/mta/dns/dnstest"
)

// doctorZone is a zone where everything doctor checks is right for
// mta.example.test sending from 192.0.2.10, and from 192.0.2.20 as
// out1.example.test once that is registered with `ips add`.
func doctorZone(t *testing.T) *dnstest.Server {
	z := dnstest.Start(t)
	z.A("mta.example.test", "192.0.2.10")
	z.PTR("192.0.2.10", "mta.example.test")
	z.TXT("mta.example.test", "v=spf1 a ip4:192.0.2.20 -all")
	z.A("out1.example.test", "192.0.2.20")
	z.PTR("192.0.2.20", "out1.example.test")
	z.TXT("spf.example.test", "v=spf1 ip4:192.0.2.0/24 -all")
	return z
}

// smtpProbe is an SMTP server that greets and hangs up: what outbound
// port 25 reaches. It returns its address.
func smtpProbe(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("220 probe.example.test ESMTP\r\n"))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// doctorArgs are the flags of a doctor run against zone on dataDir.
// Nothing answers on its --http-addr (unless extra gives another).
func doctorArgs(z *dnstest.Server, dataDir, probe string, extra ...string) []string {
	return append([]string{"doctor", "--data-dir", dataDir, "--hostname", "mta.example.test", "--dns-server", z.Addr,
		"--dns-timeout", "2s", "--probe-host", probe, "--probe-timeout", "3s", "--min-free-disk-mib", "1",
		"--http-addr", nothingAnswers}, extra...)
}

// nothingAnswers is an address no server in these tests listens on.
const nothingAnswers = "127.0.0.1:9"

// marked returns the lines of out that start with mark.
func marked(out, mark string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, mark+" ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// wantOneFailure checks that doctor failed with exactly one ✗ line, which
// starts with want, followed by a fix.
func wantOneFailure(t *testing.T, out string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "1 of ") {
		t.Fatalf("doctor: err = %v, want one failed check\n%s", err, out)
	}
	fails := marked(out, "✗")
	if len(fails) != 1 || !strings.HasPrefix(fails[0], "✗ "+want) {
		t.Fatalf("failed lines = %q, want one starting %q\n%s", fails, "✗ "+want, out)
	}
	if !strings.Contains(out, fails[0]+"\n    fix: ") {
		t.Fatalf("no fix under %q\n%s", fails[0], out)
	}
}

func TestDoctorAllGoodWhileServing(t *testing.T) {
	z := doctorZone(t)
	dir := t.TempDir()
	flags := []string{"--hostname", "mta.example.test", "--dns-server", z.Addr, "--spf-include", "spf.example.test"}
	base, _, _ := startServe(t, dir, flags...)
	mustRun(t, "ips", "add", "192.0.2.20", "--hostname", "out1.example.test", "--data-dir", dir)

	probeHost, probePort, _ := net.SplitHostPort(smtpProbe(t))
	httpAddr := strings.TrimPrefix(base, "http://")
	// --probe-host without a port is dialled on --mx-port, as MX hosts are.
	out, err := run(t, doctorArgs(z, dir, probeHost, "--mx-port", probePort, "--spf-include", "spf.example.test",
		"--http-addr", httpAddr, "--public-url", base)...)
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	if bad := append(marked(out, "✗"), append(marked(out, "!"), marked(out, "-")...)...); len(bad) > 0 {
		t.Fatalf("lines not ✓: %q\n%s", bad, out)
	}
	for _, want := range []string{
		"✓ configuration: the serve flags are valid",
		"✓ database: serve runs on " + dir,
		"✓ free disk: ",
		"✓ hostname mta.example.test: 192.0.2.10",
		"✓ reverse DNS of 192.0.2.10: PTR mta.example.test, which resolves back to it",
		"✓ reverse DNS of 192.0.2.20: PTR out1.example.test, which resolves back to it",
		"✓ SPF of --spf-include spf.example.test: authorizes 192.0.2.20",
		"✓ return-path SPF of mta.example.test: authorizes 192.0.2.20",
		"✓ outbound SMTP to --probe-host " + net.JoinHostPort(probeHost, probePort) + `: answered "220 probe.example.test ESMTP"`,
		"✓ public URL: " + base + "/healthz answers",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestDoctorBrokenZones(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(z *dnstest.Server)
		probe func(t *testing.T) string
		want  string
	}{
		{"missing PTR", func(z *dnstest.Server) { z.Remove("10.2.0.192.in-addr.arpa") }, smtpProbe,
			"reverse DNS of 192.0.2.10: no PTR record"},
		{"PTR mismatch", func(z *dnstest.Server) {
			z.Remove("10.2.0.192.in-addr.arpa")
			z.PTR("192.0.2.10", "vps-1234.provider.test")
		}, smtpProbe, "reverse DNS of 192.0.2.10: PTR names vps-1234.provider.test, not mta.example.test"},
		{"no SPF", func(z *dnstest.Server) {
			z.Remove("mta.example.test")
			z.A("mta.example.test", "192.0.2.10")
		}, smtpProbe, "return-path SPF of mta.example.test: no SPF record"},
		{"SPF without the address", func(z *dnstest.Server) {
			z.Remove("mta.example.test")
			z.A("mta.example.test", "192.0.2.10")
			z.TXT("mta.example.test", "v=spf1 ip4:198.51.100.1 -all")
		}, smtpProbe, "return-path SPF of mta.example.test: does not authorize 192.0.2.10 (result fail)"},
		{"unreachable probe host", func(*dnstest.Server) {}, closedPort,
			"outbound SMTP to --probe-host 127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := doctorZone(t)
			tc.spoil(z)
			dir := t.TempDir()
			out, err := run(t, doctorArgs(z, dir, tc.probe(t))...)
			wantOneFailure(t, out, err, tc.want)
			// Without a server there is nothing to check yet: said, not failed.
			for _, want := range []string{"- database: there is none in " + dir, "- public URL: nothing answers at http://" + nothingAnswers + "/healthz"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q\n%s", want, out)
				}
			}
		})
	}
}

func TestDoctorNoAddressForHostname(t *testing.T) {
	z := dnstest.Start(t)
	dir := filepath.Join(t.TempDir(), "data")
	out, err := run(t, doctorArgs(z, dir, smtpProbe(t))...)
	if err == nil || !strings.Contains(out, "✗ hostname mta.example.test: no A or AAAA record\n    fix: publish an A record") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("doctor created the data dir (stat: %v)", err)
	}
	if !strings.Contains(out, "- return-path SPF of mta.example.test: no sending address is known") {
		t.Fatalf("return-path check not skipped\n%s", out)
	}
}

// An offline database is checked read-only, and its registered IPs are
// checked like the hostname's addresses.
func TestDoctorRegisteredIPsOffline(t *testing.T) {
	z := doctorZone(t)
	dir := t.TempDir()
	mustRun(t, "accounts", "create", "--name", "x", "--data-dir", dir)
	mustRun(t, "ips", "add", "192.0.2.20", "--hostname", "out1.example.test", "--data-dir", dir)
	probe := smtpProbe(t)

	out, err := run(t, doctorArgs(z, dir, probe)...)
	wantOneFailure(t, out, err, "domain SPF: sending domains publish a:mta.example.test, which does not cover the registered IPs 192.0.2.20")
	for _, want := range []string{"✓ database: " + dir, "is whole (every page checked, read-only)",
		"✓ reverse DNS of 192.0.2.20: PTR out1.example.test"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}

	out, err = run(t, doctorArgs(z, dir, probe, "--sending-ips", "192.0.2.10")...)
	wantOneFailure(t, out, err, "domain SPF: registered IPs 192.0.2.20 are not in --sending-ips")

	out, err = run(t, doctorArgs(z, dir, probe, "--sending-ips", "192.0.2.10,192.0.2.20")...)
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	if !strings.Contains(out, "✓ domain SPF: sending domains publish ip4:/ip6: terms for --sending-ips 192.0.2.10, 192.0.2.20") {
		t.Fatalf("sending IPs not reported\n%s", out)
	}

	// The PTR's name must resolve back to the address.
	z.Remove("out1.example.test")
	out, err = run(t, doctorArgs(z, dir, probe, "--sending-ips", "192.0.2.10,192.0.2.20")...)
	wantOneFailure(t, out, err, "reverse DNS of 192.0.2.20: PTR names out1.example.test, but out1.example.test does not resolve to 192.0.2.20")
}

func TestDoctorConfiguration(t *testing.T) {
	z := doctorZone(t)
	probe := smtpProbe(t)
	// A --hostname that is no FQDN fails doctor even where serve only warns.
	out, err := run(t, doctorArgs(z, t.TempDir(), probe, "--hostname", "vm", "--dev")...)
	if err == nil || !strings.Contains(out, "✗ configuration: --hostname: \"vm\" is not a fully qualified domain name") ||
		!strings.Contains(out, "    fix: set --hostname (or MAILBOLT_HOSTNAME)") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	// What serve refuses fails; what it only warns about warns.
	out, err = run(t, doctorArgs(z, t.TempDir(), probe, "--http-addr", "0.0.0.0:8080")...)
	if err == nil || !strings.Contains(out, "✗ configuration: --public-url is needed") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	out, _ = run(t, doctorArgs(z, t.TempDir(), probe, "--public-url", "http://mail.example.test")...)
	if !strings.Contains(out, "! configuration: --public-url http://mail.example.test is plain http") {
		t.Fatalf("no warning\n%s", out)
	}
	// An invalid flag stops doctor there.
	out, err = run(t, doctorArgs(z, t.TempDir(), probe, "--smtp-addr", "nowhere")...)
	if err == nil || !strings.Contains(out, "✗ configuration: --smtp-addr: \"nowhere\" is not host:port") ||
		strings.Contains(out, "hostname mta.example.test") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	// The environment is read as serve reads it.
	t.Setenv("MAILBOLT_HOSTNAME", "vm")
	out, _ = run(t, "doctor", "--data-dir", t.TempDir(), "--dns-server", z.Addr, "--probe-host", probe,
		"--http-addr", nothingAnswers)
	if !strings.Contains(out, "✗ configuration: --hostname: \"vm\"") {
		t.Fatalf("MAILBOLT_HOSTNAME not read\n%s", out)
	}
}

func TestDoctorDiskThreshold(t *testing.T) {
	z := doctorZone(t)
	out, err := run(t, doctorArgs(z, t.TempDir(), smtpProbe(t), "--min-free-disk-mib", "1099511627776")...)
	if err != nil {
		t.Fatalf("a warning failed doctor: %v\n%s", err, out)
	}
	if !strings.Contains(out, "! free disk: ") || !strings.Contains(out, "(below --min-free-disk-mib 1099511627776)") {
		t.Fatalf("no disk warning\n%s", out)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 30: "5.0 GiB", 3 << 40: "3.0 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDoctorDamagedDatabase(t *testing.T) {
	z := doctorZone(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mailbolt.db"), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, doctorArgs(z, dir, smtpProbe(t))...)
	wantOneFailure(t, out, err, "database: the database file "+filepath.Join(dir, "mailbolt.db")+" is damaged")
	if !strings.Contains(out, "fix: restore it from a backup (mailbolt restore --from BACKUP_FILE --data-dir "+dir+")") {
		t.Fatalf("no restore fix\n%s", out)
	}
}

// doctor takes every serve flag, with serve's default, from one list.
func TestDoctorTakesServeFlags(t *testing.T) {
	serveFlags, doctorFlags := newServeCommand().Flags(), newDoctorCommand().Flags()
	n := 0
	serveFlags.VisitAll(func(f *pflag.Flag) {
		n++
		d := doctorFlags.Lookup(f.Name)
		if d == nil || d.DefValue != f.DefValue || d.Usage != f.Usage {
			t.Errorf("doctor's --%s = %+v, serve's %+v", f.Name, d, f)
		}
	})
	if n < 40 {
		t.Fatalf("serve has %d flags", n)
	}
}
