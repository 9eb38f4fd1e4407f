package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mailbolt/storage"
)

// benchCmd runs `mailbolt bench` in-process and returns its stdout.
func benchCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"bench"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

func benchJSON(t *testing.T, args ...string) benchReport {
	t.Helper()
	out, err := benchCmd(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("bench %s: %v", strings.Join(args, " "), err)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	return rep
}

func TestBenchDeliversEveryMessage(t *testing.T) {
	for _, tc := range []struct {
		name, dkim, tag string
		extra           []string
	}{
		{"rsa concurrent", "rsa", "rsa-sha256", nil},
		{"ed25519 phased", "ed25519", "ed25519-sha256", []string{"--phased"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n, size = 200, 2048
			rep := benchJSON(t, append([]string{"--messages", "200", "--size", "2048", "--concurrency", "16",
				"--delivery-workers", "16", "--dkim", tc.dkim, "--timeout", "2m"}, tc.extra...)...)
			if !rep.Complete || rep.TimedOut || rep.Accepted != n || rep.Failed != 0 || rep.Delivered != n || rep.Duplicates != 0 {
				t.Fatalf("incomplete run: %+v", rep)
			}
			if rep.AcceptedPerSec <= 0 || rep.DeliveredPerSec <= 0 || rep.AcceptSeconds <= 0 || rep.DeliverSeconds <= 0 {
				t.Errorf("rates: accepted %.0f/s in %.2f s, delivered %.0f/s in %.2f s",
					rep.AcceptedPerSec, rep.AcceptSeconds, rep.DeliveredPerSec, rep.DeliverSeconds)
			}
			if !(0 < rep.AcceptP50 && rep.AcceptP50 <= rep.AcceptP99 && rep.AcceptP99 <= rep.AcceptMax) {
				t.Errorf("accept latency p50 %.2f, p99 %.2f, max %.2f ms", rep.AcceptP50, rep.AcceptP99, rep.AcceptMax)
			}
			if !(0 < rep.DeliveredP50 && rep.DeliveredP50 <= rep.DeliveredP99) {
				t.Errorf("accept→delivered p50 %.2f, p99 %.2f ms", rep.DeliveredP50, rep.DeliveredP99)
			}
			if rep.DKIMSigned != n || rep.DKIMTag != tc.tag || !rep.DKIMVerified {
				t.Errorf("DKIM: %d signed, a=%s, verified %v (%s)", rep.DKIMSigned, rep.DKIMTag, rep.DKIMVerified, rep.DKIMError)
			}
			if rep.WireBytes < size*3/4 || rep.WireBytes > size*5/4 {
				t.Errorf("messages arrive with %d bytes, asked for about %d", rep.WireBytes, size)
			}
			if rep.PeakRSSMB <= 0 || rep.PeakAnonMB <= 0 || rep.PeakAnonMB > rep.PeakRSSMB || rep.RSSMB <= 0 || rep.Commits <= 0 || rep.AcceptCPU <= 0 {
				t.Errorf("peak RSS %.1f MB, RSS %.1f MB, %d commits, %.2f s CPU", rep.PeakRSSMB, rep.RSSMB, rep.Commits, rep.AcceptCPU)
			}
			if !rep.DataDirRemoved {
				t.Errorf("temporary data dir %s not removed", rep.DataDir)
			}
			if _, err := os.Stat(rep.DataDir); !os.IsNotExist(err) {
				t.Errorf("data dir %s still there: %v", rep.DataDir, err)
			}
		})
	}
}

func TestBenchQueueOnlyKeepsAnExplicitDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	out, err := benchCmd(t, "--messages", "100", "--queue-only", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"accepted        100", "queued          100", "peak RSS", dir + " (kept)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "delivered") {
		t.Errorf("queue-only run reports deliveries:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, storage.FileName)); err != nil {
		t.Errorf("database not kept: %v", err)
	}
	// A data dir that holds a database is refused: bench never writes
	// into a real one.
	if _, err := benchCmd(t, "--messages", "1", "--data-dir", dir); err == nil || !strings.Contains(err.Error(), "already holds a database") {
		t.Errorf("second run on the same data dir: %v", err)
	}
}

func TestBenchTimeoutReportsWhatWasDone(t *testing.T) {
	out, err := benchCmd(t, "--messages", "1000000", "--timeout", "500ms", "--json")
	if err == nil {
		t.Fatal("a run that timed out exits without an error")
	}
	var rep benchReport
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("no report after the timeout: %v\n%s", jerr, out)
	}
	if !rep.TimedOut || rep.Complete || rep.Accepted == 0 || rep.NotSent == 0 ||
		rep.Accepted+rep.Failed+rep.NotSent != rep.Messages || rep.Delivered > rep.Accepted+rep.Failed {
		t.Errorf("after a timeout: %+v", rep)
	}
}

// TestBenchFailedOpenIsAnError: a run whose database cannot be opened
// (here, no server on the port) ends with that error, not a panic, and
// leaves no temporary data dir behind.
func TestBenchFailedOpenIsAnError(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, err := benchCmd(t, "--messages", "1", "--database", "postgres://nobody@"+closedPort(t)+"/none?connect_timeout=2")
	if err == nil {
		t.Fatal("a run over a database that is not there exits without an error")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the temporary data dir was left behind: %v", left)
	}
}

func TestBenchFlagsValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--messages", "0"},
		{"--dkim", "dsa"},
		{"--queue-only", "--phased"},
		{"--size", "0"},
	} {
		if _, err := benchCmd(t, args...); err == nil {
			t.Errorf("bench %s: no error", strings.Join(args, " "))
		}
	}
}

// TestBenchViaSMTP: --via smtp submits through the submission listener
// (with --starttls over TLS) and every message is accepted and delivered
// once, signed.
func TestBenchViaSMTP(t *testing.T) {
	for _, extra := range [][]string{nil, {"--starttls"}} {
		rep := benchJSON(t, append([]string{"--via", "smtp", "--messages", "200", "--concurrency", "8", "--dkim", "ed25519", "--timeout", "2m"}, extra...)...)
		if !rep.Complete || rep.Via != "smtp" || rep.TLS != (extra != nil) || rep.Accepted != 200 || rep.Delivered != 200 || !rep.DKIMVerified {
			t.Fatalf("%v: %+v", extra, rep)
		}
	}
	if _, err := benchCmd(t, "--starttls"); err == nil || !strings.Contains(err.Error(), "--via smtp") {
		t.Errorf("--starttls without --via smtp: %v", err)
	}
}
