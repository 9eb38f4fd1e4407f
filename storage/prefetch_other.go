//go:build !linux

package storage

// prefetch does nothing where the page cache cannot be asked (mincore,
// /proc/meminfo): opening reads the file as the walks need it.
func prefetch(string) {}
