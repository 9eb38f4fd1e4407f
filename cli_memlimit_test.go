package main

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "128MiB": 128 << 20, "1GiB": 1 << 30,
		"64KiB": 64 << 10, "500MB": 500e6, "2GB": 2e9, " 10 MiB ": 10 << 20, "7B": 7} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "12 parsecs", "-1MiB", "1.5GiB", "99999999999GiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestApplyMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })

	t.Setenv("GOMEMLIMIT", "")
	applyMemoryLimit(memoryLimitFlag{bytes: defaultMemoryLimit})
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimit {
		t.Errorf("default: limit %d, want %d", got, defaultMemoryLimit)
	}
	applyMemoryLimit(memoryLimitFlag{bytes: 300 << 20, set: true})
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Errorf("--memory-limit 300MiB: limit %d", got)
	}
	applyMemoryLimit(memoryLimitFlag{set: true})
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("--memory-limit 0: limit %d, want none", got)
	}
	// GOMEMLIMIT, read by the runtime at start, wins over the default.
	debug.SetMemoryLimit(1 << 30)
	t.Setenv("GOMEMLIMIT", "1GiB")
	applyMemoryLimit(memoryLimitFlag{bytes: defaultMemoryLimit})
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("with GOMEMLIMIT: limit %d, want it left at 1GiB", got)
	}
}

func TestMemoryLimitFlag(t *testing.T) {
	f := newServeCommand().Flags().Lookup("memory-limit")
	if f == nil || f.DefValue != "128MiB" {
		t.Fatalf("--memory-limit: %+v", f)
	}
	out, err := run(t, "serve", "--data-dir", t.TempDir(), "--memory-limit", "lots", "--http-addr", "127.0.0.1:0",
		"--smtp-addr", "127.0.0.1:0", "--metrics-addr=")
	if err == nil || !strings.Contains(err.Error(), "memory-limit") {
		t.Errorf("--memory-limit lots: %v\n%s", err, out)
	}
	var m memoryLimitFlag
	if err := m.Set("1GiB"); err != nil || m.String() != "1GiB" || !m.set {
		t.Errorf("Set(1GiB): %v, %q", err, m.String())
	}
}
