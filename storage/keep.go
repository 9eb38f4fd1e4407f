package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// Files kept beside the database (mailbolt.db.pre-restore-<time>,
// secret.key.old-<time>) are named by the second they were made in. Two in
// the same second must not share a name: the second would take the first's
// place, and a kept copy is what an operator goes back to. keptName picks
// the first free name of base-<time>, base-<time>-2, base-<time>-3, …

// maxKeptNames bounds the search for a free name: more copies than this
// in one second is a loop gone wrong, not a use.
const maxKeptNames = 1000

// keptName calls create with base+"-<UTC time>", then with "-2", "-3", …
// appended, until create succeeds or fails with anything but fs.ErrExist,
// and returns the name it succeeded with. create must refuse (fs.ErrExist)
// a name that is taken, never replace it.
func keptName(base string, now time.Time, create func(name string) error) (string, error) {
	stem := base + "-" + now.UTC().Format("20060102T150405Z")
	for n := 1; n <= maxKeptNames; n++ {
		name := stem
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		err := create(name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s and %d more names after it are all taken", stem, maxKeptNames-1)
}

// renameNoReplace renames from to to, failing with fs.ErrExist when to
// exists: os.Rename would replace it. A hard link is made first (link(2)
// refuses an existing name atomically) and from removed after it. On a
// file system without hard links it falls back to a rename after a check
// that to does not exist; only a process creating that very name at the
// same instant could slip between the two.
func renameNoReplace(from, to string) error {
	err := os.Link(from, to)
	if err == nil {
		return os.Remove(from)
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, serr := os.Lstat(to); serr == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	} else if !errors.Is(serr, fs.ErrNotExist) {
		return serr
	}
	return os.Rename(from, to)
}
