package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShouldPrefetch(t *testing.T) {
	const gb = 1 << 30
	for _, c := range []struct {
		name            string
		size, avail     int64
		resident, pages int
		want            bool
	}{
		{"large, cold, fits", 8 * gb, 20 * gb, 0, 2_000_000, true},
		{"large, a third cached", 8 * gb, 20 * gb, 600_000, 2_000_000, true},
		{"large, mostly cached", 8 * gb, 20 * gb, 1_500_000, 2_000_000, false},
		{"over half of what is available", 8 * gb, 12 * gb, 0, 2_000_000, false},
		{"memory unknown", 8 * gb, 0, 0, 2_000_000, false},
		{"residency unknown", 8 * gb, 20 * gb, 0, 0, false},
		{"small", 100 << 20, 20 * gb, 0, 25_600, false},
	} {
		if got := shouldPrefetch(c.size, c.avail, c.resident, c.pages); got != c.want {
			t.Errorf("%s: shouldPrefetch = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParseMemAvailable(t *testing.T) {
	in := "MemTotal:       24684132 kB\nMemFree:        20540220 kB\nMemAvailable:   24047932 kB\nBuffers:           1234 kB\n"
	if got, want := parseMemAvailable(strings.NewReader(in)), int64(24047932)<<10; got != want {
		t.Errorf("MemAvailable = %d, want %d", got, want)
	}
	if got := parseMemAvailable(strings.NewReader("MemTotal: 1 kB\n")); got != 0 {
		t.Errorf("without the line: %d, want 0", got)
	}
	if memAvailable() <= 0 {
		t.Error("this Linux machine's /proc/meminfo gave no MemAvailable")
	}
}

// residentPages sees a file just written (its pages are in the cache).
func TestResidentPagesOfAFreshFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resident, pages := residentPages(f, 64<<10)
	if want := (64 << 10) / os.Getpagesize(); pages != want || resident != pages {
		t.Errorf("resident %d of %d pages, want all %d", resident, pages, want)
	}
	prefetch(path) // small: returns at once, and never fails the open
}
