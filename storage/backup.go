package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Backup writes a consistent copy of the live database to dest while
// writers keep going: one read transaction streams every page into a
// temporary file beside dest, which is fsynced, renamed into place, and then
// opened and checked page by page. It returns the size of the copy. A dest
// that is the live database or the secret key file (or a key a rotation
// keeps beside it) is refused before anything is written: a
// ProtectedFileError, matching ErrBackupOverLive or ErrOverSecretKey.
func (db *DB) Backup(dest string) (int64, error) {
	dest, err := filepath.Abs(dest)
	if err != nil {
		return 0, err
	}
	if db.bolt == nil {
		return 0, ErrSharedEngine
	}
	if err := CheckOutFile(dest, db.path, db.keyFile); err != nil {
		return 0, err
	}
	size, err := writeSnapshot(db.bolt, dest)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := Check(dest); err != nil {
		return 0, fmt.Errorf("backup written but failed its check: %w", asBackup(err))
	}
	return size, nil
}

// Check opens the database file at path read-only and verifies every page.
func Check(path string) error {
	if exists, err := statFile(path); err != nil {
		return err
	} else if !exists {
		return fmt.Errorf("%w: %s", ErrNoDatabase, path)
	}
	if err := verify(path, time.Second); err != nil {
		return err
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer b.Close()
	return b.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if tx.Bucket(bucketMeta) == nil {
			errs = append(errs, errors.New("not a mailbolt database: no meta bucket"))
		}
		return errors.Join(errs...)
	})
}

// Restore replaces the database in dataDir with the backup at src. The
// server must be stopped: a database still locked by a running process gives
// ErrLocked. The backup is checked before anything is touched, and the
// database it replaces is kept beside it as mailbolt.db.pre-restore-<time>
// (-2, -3, … appended when a copy of that second exists: none is replaced).
// A backup whose sealed secrets the key in keyFile does not open is refused
// (ErrSecretKey); keyFile "" is secret.key in dataDir. It returns the path
// of the kept database ("" when there was none).
func Restore(src, dataDir, keyFile string, now time.Time) (string, error) {
	if err := Check(src); err != nil {
		return "", fmt.Errorf("restore: backup is not usable: %w", asBackup(err))
	}
	if keyFile == "" {
		keyFile = filepath.Join(dataDir, SecretKeyFileName)
	}
	if err := CheckSecretKey(src, keyFile); err != nil {
		return "", fmt.Errorf("restore: refused, the backup's secrets cannot be opened: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", err
	}
	live := filepath.Join(dataDir, FileName)
	if _, err := os.Stat(live); err == nil {
		// Take the lock for the length of the swap so no server starts on it.
		// A file that holds the lock past the timeout is in use; any other
		// failure is a damaged database, which bbolt read only after it had
		// the lock: replacing it is what restore is for.
		held, err := bolt.Open(live, 0o600, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
		if errors.Is(err, bolterrors.ErrTimeout) {
			return "", ErrLocked
		}
		if err == nil {
			defer held.Close()
		}
	}
	tmp, err := os.CreateTemp(dataDir, "."+FileName+".restore-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	in, err := os.Open(src)
	if err != nil {
		tmp.Close()
		return "", err
	}
	_, err = io.Copy(tmp, in)
	in.Close()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("restore: copy: %w", err)
	}
	var kept string
	if _, err := os.Stat(live); err == nil {
		// Never over an earlier copy: a second restore in the same second
		// gets the next free name.
		kept, err = keptName(live+".pre-restore", now, func(name string) error { return renameNoReplace(live, name) })
		if err != nil {
			return "", fmt.Errorf("restore: keep old database: %w", err)
		}
	}
	if err := os.Rename(tmp.Name(), live); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	return kept, syncDir(dataDir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
