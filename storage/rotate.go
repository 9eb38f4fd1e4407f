package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RotateSecretKey seals every secret of the database in dataDir under a
// new random key, in one transaction, and makes the new key the key file's
// content. The old key file is kept beside it as
// <key file>.old-<UTC time> (-2, -3, … appended when a rotation of the same
// second kept one), whose path is returned: it still opens backups taken
// before the rotation. The secrets themselves do not change — the
// server secret that link and bounce address keys derive from stays the
// same, so links and bounce addresses already sent keep verifying.
//
// It opens the database itself, so it works only while no server holds
// the file (ErrLocked otherwise). On a shared database it works only while
// no node uses it (ErrNodesLive otherwise, naming them): a node holds the
// key in memory, and could neither open the re-sealed secrets nor seal
// new ones (Tx.keyCurrent refuses to seal under a replaced key). Its
// transaction takes the node lock that every node holds from its start
// (nodes_pg.go), so a node that starts meanwhile waits for the commit and
// then refuses the old key.
//
// Order of writes: the new key goes to <key file>.new, the old key to its
// kept copy, then the transaction commits, then <key file>.new is renamed
// over the key file. A crash before the commit leaves the old key in use;
// a crash after it is finished by the next Open (loadSealer).
func RotateSecretKey(dataDir string, opts Options, now time.Time) (kept string, err error) {
	opts.MustExist = true
	opts.CreateSecretKey = false
	opts.rotating = true
	db, err := Open(dataDir, opts)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	oldKey, err := readKeyFile(db.keyFile)
	if err != nil {
		return "", err
	}
	key := newKey()
	to, err := newSealer(key, db.keyFile)
	if err != nil {
		return "", err
	}
	next := db.keyFile + ".new"
	if err := os.Remove(next); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := writeKeyFile(next, key); err != nil {
		return "", err
	}
	// A rotation in the same second as the last one keeps its old key
	// under the next free name (-2, -3, …): both keys open backups.
	kept, err = keptName(db.keyFile+".old", now, func(name string) error { return writeKeyFile(name, oldKey) })
	if err != nil {
		os.Remove(next)
		return "", err
	}
	err = db.kv.Update(func(tx kvTx) error {
		if db.pg != nil {
			if err := lockOutNodes(tx, now); err != nil {
				return err
			}
			if rotateLocked != nil {
				rotateLocked()
			}
		}
		return resealAll(tx, db.seal, to)
	})
	if err != nil {
		os.Remove(next)
		os.Remove(kept)
		return "", fmt.Errorf("rotate the secret key: %w", err)
	}
	if err := os.Rename(next, db.keyFile); err != nil {
		return kept, fmt.Errorf("rotate the secret key: the secrets are sealed under the key in %s, "+
			"but it could not take the place of %s: %w", next, db.keyFile, err)
	}
	return kept, syncDir(filepath.Dir(db.keyFile))
}

// rotateLocked, when set, is called in a rotation's transaction on a
// shared database once it holds the node lock: tests start a node there.
var rotateLocked func()

// CheckSecretKey reports whether the key in keyFile opens every secret
// sealed in the database file at path (a backup, before it is restored).
// A file from before secrets were sealed (schema 8 or older) needs no key:
// its secrets are sealed under the key file at its first start.
func CheckSecretKey(path, keyFile string) error {
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer b.Close()
	return boltStore{b}.View(func(tx kvTx) error {
		if schemaVersion(tx) < sealedSince {
			return nil
		}
		check := tx.Bucket(bucketMeta).Get(keySecretKeyCheck)
		if check == nil {
			return fmt.Errorf("%w: %s has no secret key check value", ErrSecretKey, path)
		}
		key, err := readKeyFile(keyFile)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: the secrets in %s are sealed, and the secret key file %s does not exist: "+
				"put the key file kept with this backup there, or give --secret-key-file", ErrSecretKey, path, keyFile)
		}
		if err != nil {
			return err
		}
		s, err := newSealer(key, keyFile)
		if err != nil {
			return err
		}
		if err := s.verify(check, path); err != nil {
			return err
		}
		return openAll(tx, s)
	})
}

// sealedSince is the schema version from which secrets are sealed.
const sealedSince = 9
