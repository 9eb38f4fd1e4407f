package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// On a pipe or a file there is no status line, only the final one.
func TestProgressOnAPipeWritesOneFinalLine(t *testing.T) {
	var buf syncBuffer
	calls := 0
	p := newProgress(&buf, false, time.Millisecond, func(time.Duration) string { calls++; return "status" })
	time.Sleep(20 * time.Millisecond)
	p.Done("done: 3 copied")
	p.Done("") // a second Done (the deferred one) adds nothing
	if got := buf.String(); got != "done: 3 copied\n" || calls != 0 {
		t.Fatalf("output %q after %d status calls, want only the final line", got, calls)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) || isTerminal(&buf) {
		t.Fatal("a pipe or a buffer taken for a terminal")
	}
}

// On a terminal the line is redrawn in place, then cleared before the
// final line.
func TestProgressOnATerminalRedrawsOneLine(t *testing.T) {
	var buf syncBuffer
	n := 0
	p := newProgress(&buf, true, 5*time.Millisecond, func(time.Duration) string { n++; return "copied " + formatCount(int64(n)) })
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(buf.String(), "\r") < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	p.Done("finished")
	got := buf.String()
	if !strings.HasPrefix(got, "\rcopied 1\x1b[K\rcopied 2\x1b[K\rcopied 3\x1b[K") {
		t.Fatalf("updates = %q", got)
	}
	if !strings.HasSuffix(got, "\r\x1b[Kfinished\n") || strings.Count(got, "\n") != 1 {
		t.Fatalf("end = %q, want the line cleared and the final line", got)
	}

	// Work that ends before the first redraw leaves nothing on the terminal.
	buf = syncBuffer{}
	newProgress(&buf, true, time.Hour, func(time.Duration) string { return "x" }).Done("")
	if buf.String() != "" {
		t.Fatalf("quick work wrote %q", buf.String())
	}
}

func TestProgressFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0s", 1400 * time.Millisecond: "1s", 125 * time.Second: "2m05s",
		3723 * time.Second: "1h02m03s"} {
		if got := formatElapsed(d); got != want {
			t.Errorf("formatElapsed(%v) = %q, want %q", d, got, want)
		}
	}
	if got, want := benchStatus(250000, 1200, 1000000, 10*time.Second),
		"bench: 250,000 of 1,000,000 accepted, 1,200 delivered, 10s, 25,000 msgs/s"; got != want {
		t.Errorf("accepting: %q, want %q", got, want)
	}
	// Once every message is accepted, the rate is of deliveries.
	if got, want := benchStatus(1000, 500, 1000, 2*time.Second),
		"bench: 1,000 of 1,000 accepted, 500 delivered, 2s, 250 msgs/s"; got != want {
		t.Errorf("delivering: %q, want %q", got, want)
	}
	if got := benchStatus(0, 0, 10, 0); got != "bench: 0 of 10 accepted, 0 delivered, 0s" {
		t.Errorf("at the start: %q", got)
	}

	f := filepath.Join(t.TempDir(), "mailbolt.db")
	if err := os.WriteFile(f, make([]byte, 3<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := copyStatus("backup: copying", f, "/b/x.db")(65*time.Second),
		"backup: copying "+f+" (3.0 MiB) to /b/x.db, 1m05s"; got != want {
		t.Errorf("copyStatus = %q, want %q", got, want)
	}
}

// bench, backup and restore on a pipe write their summary and no status
// line.
func TestLongCommandsOnAPipe(t *testing.T) {
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"bench", "--messages", "20", "--concurrency", "4", "--delivery-workers", "4", "--timeout", "1m"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("bench: %v\n%s%s", err, out.String(), errOut.String())
	}
	if strings.Contains(errOut.String(), "\r") || !strings.Contains(errOut.String(), "\nbench: 20 accepted, 20 delivered in ") {
		t.Fatalf("bench stderr = %q", errOut.String())
	}

	dir := t.TempDir()
	mustRun(t, "accounts", "create", "--name", "x", "--data-dir", dir)
	backup := filepath.Join(t.TempDir(), "b.db")
	for _, args := range [][]string{{"backup", "--out", backup}, {"restore", "--from", backup}} {
		got := mustRun(t, append(args, "--data-dir", dir)...)
		if strings.Contains(got, "\r") || strings.Count(got, "\n") > 2 {
			t.Fatalf("%s wrote %q", args[0], got)
		}
	}
}
