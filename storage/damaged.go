package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// minFileSize is the smallest file that can hold bbolt's two meta pages:
// bbolt's pages are the OS page size, at least 4 KiB everywhere Mailbolt
// runs. A database it wrote has at least two more pages.
const minFileSize = 2 * 4096

// damagedError is ErrDamaged with the file and what is wrong with it.
type damagedError struct {
	path, why string
	// backup is set for a file checked as a backup (to restore, or just
	// written): restoring it from a backup is no remedy for that file.
	backup bool
}

func (e *damagedError) Error() string {
	if e.backup {
		return fmt.Sprintf("the backup file %s is damaged or not a Mailbolt backup (%s)", e.path, e.why)
	}
	return fmt.Sprintf("the database file %s is damaged (%s): restore it from a backup", e.path, e.why)
}

func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

func damaged(path, why string) error {
	return &damagedError{path: path, why: strings.Join(strings.Fields(why), " ")}
}

// asBackup words err, from Check of a backup file, for that file: a
// damaged one is named as a backup, not as a database to restore from one.
// Other errors are returned as they are.
func asBackup(err error) error {
	var d *damagedError
	if !errors.As(err, &d) {
		return err
	}
	b := *d
	b.backup = true
	return &b
}

// recoverDamaged turns a panic of bbolt's on a damaged file into
// ErrDamaged, the error of the function it is deferred in. bbolt asserts
// instead of returning errors when the pages it reads make no sense, and
// faults when they point outside the file; the caller's goroutine must
// have SetPanicOnFault on for a fault to arrive here as a panic.
func recoverDamaged(path string, err *error) {
	if r := recover(); r != nil {
		*err = damaged(path, fmt.Sprint(r))
	}
}

// statFile says whether the database file exists, refusing an existing file
// too short to be a database: only a missing file means a first start.
func statFile(path string) (bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open database: %w", err)
	}
	switch {
	case fi.Size() == 0:
		return true, damaged(path, "the file is empty")
	case fi.Size() < minFileSize:
		return true, damaged(path, fmt.Sprintf("the file is %d bytes, too short for a database", fi.Size()))
	}
	return true, nil
}

// verify reads the whole page tree of the database at path, read-only and
// on this goroutine, before bbolt is allowed to open it for writing: that
// open rebuilds the free list by walking every page on a goroutine of its
// own, where an assertion or a fault on a damaged page cannot be recovered
// and ends the process with a Go trace. Here the same damage is ErrDamaged.
// A database held by another process gives ErrLocked.
func verify(path string, timeout time.Duration) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamaged(path, &err)
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return openError(path, err)
	}
	defer b.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	return b.View(func(tx *bolt.Tx) error {
		if tx.Size() > fi.Size() {
			return damaged(path, fmt.Sprintf("truncated: %d bytes of %d", fi.Size(), tx.Size()))
		}
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			return walkBucket(path, string(name), bk)
		})
	})
}

// walkBucket visits every key of bk and of the buckets inside it, checking
// that the keys come in order.
func walkBucket(path, name string, bk *bolt.Bucket) error {
	c := bk.Cursor()
	var prev []byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return damaged(path, "keys out of order in bucket "+name)
		}
		prev = k
		if v == nil {
			if child := bk.Bucket(k); child != nil {
				if err := walkBucket(path, name+"/"+string(k), child); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// openError is the error of a failed bolt.Open.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return ErrLocked
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch),
		errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrInvalidMapping):
		return damaged(path, err.Error())
	}
	return fmt.Errorf("open database: %w", err)
}
