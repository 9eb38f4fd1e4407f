package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Files Mailbolt writes where a user asks (a backup, a suppressions export)
// are written beside the name given and renamed over it once complete. A
// rename replaces whatever that name held, so before anything is written
// the name is checked against the files whose loss loses data: the live
// database, and the secret key file with the keys a rotation writes
// beside it (without the key, the database's secrets cannot be opened).

// ProtectedFileError names the file a backup or an export would have
// replaced, and what it is. It matches ErrBackupOverLive (the live
// database) or ErrOverSecretKey (a key file). Nothing was written.
type ProtectedFileError struct {
	Path string // the file as the caller named it
	What string // "the live database", "the secret key file", …
	err  error
}

func (e *ProtectedFileError) Error() string {
	return fmt.Sprintf("%v: %s is %s", e.err, e.Path, e.What)
}

func (e *ProtectedFileError) Is(target error) bool { return target == e.err }

// CheckOutFile refuses dest, a file about to be written by renaming a new
// file over its name, when that would replace the database file dbPath,
// the secret key file keyFile, the <keyFile>.new of a rotation under way
// or an <keyFile>.old-<time> a rotation kept (which opens the backups
// taken before it). "" skips dbPath or keyFile. Names are compared as the
// directory entries they reach, so a relative path or a symbolic link to
// the directory is caught.
func CheckOutFile(dest, dbPath, keyFile string) error {
	refuse := func(what string, err error) error {
		return &ProtectedFileError{Path: dest, What: what, err: err}
	}
	if dbPath != "" && replaces(dest, dbPath) {
		return refuse("the live database", ErrBackupOverLive)
	}
	if keyFile == "" {
		return nil
	}
	switch {
	case replaces(dest, keyFile):
		return refuse("the secret key file", ErrOverSecretKey)
	case replaces(dest, keyFile+".new"):
		return refuse("the new secret key of a rotation", ErrOverSecretKey)
	case sameDir(dest, keyFile) && strings.HasPrefix(filepath.Base(dest), filepath.Base(keyFile)+".old-"):
		return refuse("an old secret key kept by a rotation", ErrOverSecretKey)
	}
	return nil
}

// replaces reports whether renaming a file over the name dest would take
// the place of the file at target: the same name in the same directory
// (through links to directories too), or the same file. A symbolic link
// as dest's last element is not followed: renaming over it replaces only
// the link. A hard link to target is refused as well, though renaming
// over it would leave target whole.
func replaces(dest, target string) bool {
	if filepath.Base(dest) == filepath.Base(target) && sameDir(dest, target) {
		return true
	}
	d, err := os.Lstat(dest)
	if err != nil {
		return false
	}
	t, err := os.Stat(target)
	return err == nil && os.SameFile(d, t)
}

// sameDir reports whether the names a and b are in one directory.
func sameDir(a, b string) bool {
	da, db := filepath.Dir(a), filepath.Dir(b)
	if absPath(da) == absPath(db) {
		return true
	}
	fa, err := os.Stat(da)
	if err != nil {
		return false
	}
	fb, err := os.Stat(db)
	return err == nil && os.SameFile(fa, fb)
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// WriteOutFile writes the file dest whole or not at all: write fills a
// new temporary file beside dest, which is fsynced, given mode 0600 and
// renamed over dest, and then the directory is fsynced. On failure the
// temporary file is removed. An error about the temporary file names
// dest instead: that is the name the user gave, and the temporary one is
// gone by the time they read it. It does not check dest (CheckOutFile).
func WriteOutFile(dest string, write func(w io.Writer) error) error {
	dir := filepath.Dir(dest)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return &fs.PathError{Op: "create", Path: dest, Err: pe.Err}
		}
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op once renamed
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, dest)
	}
	if err != nil {
		return namedAfter(err, tmp, dest)
	}
	return syncDir(dir)
}

// namedAfter is err with dest in the place of tmp, when err is about the
// file tmp (a failed write, sync, close or rename of it).
func namedAfter(err error, tmp, dest string) error {
	switch e := err.(type) {
	case *fs.PathError:
		if e.Path == tmp {
			return &fs.PathError{Op: e.Op, Path: dest, Err: e.Err}
		}
	case *os.LinkError:
		if e.Old == tmp {
			return &fs.PathError{Op: e.Op, Path: dest, Err: e.Err}
		}
	}
	return err
}
