package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
