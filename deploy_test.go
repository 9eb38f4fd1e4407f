package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The systemd unit of the deploy kit passes systemd-analyze verify (where
// it is installed), and waits for serve's shutdown grace plus 5 s before
// it kills.
func TestSystemdUnitVerifies(t *testing.T) {
	unit, err := os.ReadFile("docs/deploy/mailbolt.service")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("TimeoutStopSec=%d\n", int(defaultServeConfig().shutdownGrace.Seconds())+5)
	if !strings.Contains(string(unit), want) {
		t.Errorf("the unit does not say %q", strings.TrimSpace(want))
	}
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	// verify wants ExecStart to exist: point it at this test binary.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mailbolt.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/mailbolt", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "verify", path).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The container image runs serve as a non-root user on a /data volume,
// checks itself with `mailbolt healthcheck`, and stops with SIGTERM.
func TestDockerfileKeepsItsPromises(t *testing.T) {
	b, err := os.ReadFile("docs/deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FROM scratch", "USER 65532:65532", "VOLUME /data", `CMD ["/mailbolt", "healthcheck"]`,
		"STOPSIGNAL SIGTERM", "MAILBOLT_DATA_DIR=/data", `CMD ["serve"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("docs/deploy/Dockerfile lacks %q", want)
		}
	}
}

// While serve runs, the server process writes a backup, inside the unit's
// sandbox: every `mailbolt backup --out /…` of docs/deploy.md writes into
// a directory the unit's ReadWritePaths cover (the rest of the system is
// read-only to it), not into /tmp (PrivateTmp gives it its own), and one
// that step 3 creates before the server first starts (the unit sees a
// directory only if it existed then).
func TestBackupTimerWritesWhereTheServerMay(t *testing.T) {
	unit, err := os.ReadFile("docs/deploy/mailbolt.service")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	var writable []string
	for _, m := range regexp.MustCompile(`(?m)^ReadWritePaths=(.*)$`).FindAllStringSubmatch(string(unit), -1) {
		for _, p := range strings.Fields(m[1]) {
			writable = append(writable, strings.TrimPrefix(p, "-"))
		}
	}
	start := strings.Index(string(doc), "systemctl enable --now mailbolt\n")
	outs := regexp.MustCompile(`mailbolt backup --out (/[^\s'$]+)`).FindAllStringSubmatch(string(doc), -1)
	if len(outs) == 0 || start < 0 {
		t.Fatal("docs/deploy.md has no `mailbolt backup --out /…` or no `systemctl enable --now mailbolt`")
	}
	for _, m := range outs {
		dir := filepath.Dir(m[1])
		covered := false
		for _, p := range writable {
			covered = covered || dir == p || strings.HasPrefix(dir, p+"/")
		}
		if !covered || dir == "/tmp" || strings.HasPrefix(dir, "/tmp/") {
			t.Errorf("docs/deploy.md backs up to %s, which the unit's ReadWritePaths %v do not let the server write", m[1], writable)
		}
		if i := strings.Index(string(doc), "install -d -o mailbolt -g mailbolt -m 0700 "+dir); i < 0 || i > start {
			t.Errorf("docs/deploy.md does not create %s before the server's first start", dir)
		}
	}
}

// `mailbolt healthcheck` asks --http-addr (default 127.0.0.1:8080), but the
// unit's server listens where MAILBOLT_HTTP_ADDR in /etc/mailbolt.env says:
// every healthcheck in docs/deploy.md loads that file earlier in its block,
// or names --http-addr.
func TestDeployHealthchecksAskTheServersAddress(t *testing.T) {
	doc, err := os.ReadFile("docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range shellBlocks(string(doc)) {
		loaded := false
		for _, line := range strings.Split(b.script, "\n") {
			cmd, _, _ := strings.Cut(line, "#")
			if strings.Contains(cmd, ". /etc/mailbolt.env") {
				loaded = true
			}
			if strings.Contains(cmd, "mailbolt healthcheck") {
				n++
				if !loaded && !strings.Contains(cmd, "--http-addr") {
					t.Errorf("docs/deploy.md:%d: %q runs before /etc/mailbolt.env is loaded: it asks 127.0.0.1:8080", b.line, strings.TrimSpace(line))
				}
			}
		}
	}
	if n == 0 {
		t.Error("docs/deploy.md runs no `mailbolt healthcheck`")
	}
}
