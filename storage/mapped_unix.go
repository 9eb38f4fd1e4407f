//go:build linux || darwin || freebsd

package storage

import (
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// ReleaseMapped tells the kernel that the process no longer needs the
// database file's pages it has touched through bbolt's read-only memory
// map (MADV_DONTNEED). They stay in the page cache; the next read of one
// maps it again. Without this, every page a transaction ever read counts
// in the process's resident set, so RSS grows with the file rather than
// with what is in use. It runs inside a read transaction, which keeps
// bbolt from remapping the file meanwhile.
func (db *DB) ReleaseMapped() error {
	if db.bolt == nil {
		return nil // nothing is mapped
	}
	return db.bolt.View(func(btx *bolt.Tx) error {
		info := db.bolt.Info()
		fi, err := os.Stat(db.path)
		if err != nil || info.Data == 0 {
			return err
		}
		size := min(fi.Size(), btx.Size())
		if size <= 0 {
			return nil
		}
		// The address is bbolt's mapping, alive while this transaction is
		// open; passed to the system call as the number it is.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(size), unix.MADV_DONTNEED); errno != 0 {
			return errno
		}
		return nil
	})
}
