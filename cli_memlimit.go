package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultMemoryLimit is serve's soft memory limit unless --memory-limit or
// GOMEMLIMIT says otherwise. The server runs with GOGC=400 and a heap
// floor (tuneGC): with a live heap of tens of MB the heap may grow to five
// times that between collections, which saves CPU but shows as resident
// memory. The limit
// makes the collector run earlier only when the Go runtime's memory
// (heap, stacks, its own) nears it, so a small heap keeps its headroom and
// a large queue does not take RSS past about 200 MB. The database file's
// mapped pages are not Go memory and are not counted (see
// storage.DB.ReleaseMapped for those).
const defaultMemoryLimit = 128 << 20

// memoryLimitFlag is --memory-limit: a size in bytes, with an optional
// unit (KiB, MiB, GiB, or KB, MB, GB as powers of 1000), or 0 for none.
type memoryLimitFlag struct {
	bytes int64
	set   bool // given by flag or environment
}

func (m *memoryLimitFlag) String() string {
	if m.bytes == 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if m.bytes%u.size == 0 {
			return strconv.FormatInt(m.bytes/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(m.bytes, 10)
}

func (m *memoryLimitFlag) Type() string { return "size" }

func (m *memoryLimitFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	m.bytes, m.set = n, true
	return nil
}

// parseSize reads "128MiB", "1GiB", "500MB", "1048576" or "0".
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.TrimSpace(s[len(num):])
	mult := map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
		"KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || mult == 0 || n < 0 {
		return 0, fmt.Errorf("%q is not a size such as 128MiB, 1GiB or 0", s)
	}
	if n > math.MaxInt64/mult {
		return 0, errors.New("size too large")
	}
	return n * mult, nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit: --memory-limit
// when given (0 turns it off), else GOMEMLIMIT when set (the runtime has
// read it already), else defaultMemoryLimit. The collector then runs
// more often as the process nears the limit; it is soft: the process
// may pass it rather than spend all its time collecting.
func applyMemoryLimit(m memoryLimitFlag) {
	switch {
	case m.set && m.bytes == 0:
		debug.SetMemoryLimit(math.MaxInt64)
	case m.set:
		debug.SetMemoryLimit(m.bytes)
	case os.Getenv("GOMEMLIMIT") == "":
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}
