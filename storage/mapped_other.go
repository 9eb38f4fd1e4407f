//go:build !(linux || darwin || freebsd)

package storage

// ReleaseMapped does nothing where madvise is not available.
func (db *DB) ReleaseMapped() error { return nil }
