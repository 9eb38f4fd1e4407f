package storage

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefetch reads the database file at path from front to back when most
// of it is not in the page cache and all of it fits there with room to
// spare. Opening walks every page (the damage check, then bbolt's free list
// rebuild) in the tree's order, which on a cold cache is a random read of
// the whole file: 3.5 minutes for an 8.4 GB store on a 2-core VM's disk,
// against 25 s read in order. Reading it in order first makes the walks
// run from memory. A failure only means the walks read the disk themselves.
func prefetch(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	avail := memAvailable()
	if !worthReading(fi.Size(), avail) {
		return // small, or too large for memory: the page cache is not asked
	}
	if resident, pages := residentPages(f, fi.Size()); !shouldPrefetch(fi.Size(), avail, resident, pages) {
		return
	}
	buf := make([]byte, 4<<20)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
	}
}

// prefetchMin is the smallest file worth reading ahead: below it the walks
// at open take well under a second anyway.
const prefetchMin = 256 << 20

// shouldPrefetch decides for a file of size bytes, with avail bytes of
// memory available (0: unknown) and resident of its pages in the page
// cache: only a large file, less than half cached, that takes at most half
// of the available memory.
func shouldPrefetch(size, avail int64, resident, pages int) bool {
	return worthReading(size, avail) && pages > 0 && resident*2 < pages
}

// worthReading is shouldPrefetch's part that needs no look at the cache:
// a large file taking at most half of the available memory (0: unknown).
func worthReading(size, avail int64) bool {
	return size >= prefetchMin && avail > 0 && size <= avail/2
}

// residentPages counts the pages of f in the page cache (mincore over a
// read-only mapping); pages is 0 when that cannot be told.
func residentPages(f *os.File, size int64) (resident, pages int) {
	if size <= 0 || int64(int(size)) != size {
		return 0, 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	// x/sys has no mincore wrapper on Linux: the system call itself.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, 0
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec)
}

// memAvailable is MemAvailable from /proc/meminfo in bytes, 0 when unknown.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	return parseMemAvailable(f)
}

func parseMemAvailable(r io.Reader) int64 {
	s := bufio.NewScanner(r)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
