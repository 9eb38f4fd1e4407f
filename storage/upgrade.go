package storage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// upgrade brings the schema up to date. Before it migrates a file that
// already holds a schema, it writes a copy of the file beside it
// (mailbolt.db.pre-migration-v<N>-<UTC time>): restoring that copy with
// the older binary is the way back. A failed migration that committed
// nothing removes its copy again. A migration that left secrets in
// clear in freed pages is followed by a compaction, which rewrites the
// file from its live records only.
func (db *DB) upgrade() error {
	current, err := checkSchema(db.kv, migrations)
	if err != nil {
		return err
	}
	if current > 0 && current < LatestSchemaVersion() && db.bolt != nil {
		dest := fmt.Sprintf("%s.pre-migration-v%d-%s", db.path, current, time.Now().UTC().Format("20060102T150405Z"))
		if _, err := writeSnapshot(db.bolt, dest); err != nil {
			return fmt.Errorf("copy the database before migrating it: %w", err)
		}
		db.preMigration = dest
	}
	compact, err := migrate(db.kv, migrations, db.seal, db.opts.Logger)
	if err != nil {
		// A migration that refuses (migration 20 does, until the operator
		// resolves what it names) refuses again at every start: when it
		// committed nothing, the file is still the copy, and keeping one
		// per attempt would fill the disk under a restarting service.
		if after, cerr := checkSchema(db.kv, migrations); cerr == nil && after == current && db.preMigration != "" {
			if rerr := os.Remove(db.preMigration); rerr == nil {
				db.preMigration = ""
			}
		}
		return err
	}
	if compact && db.bolt != nil {
		if err := db.compact(); err != nil {
			return fmt.Errorf("compact the database after sealing its secrets: %w", err)
		}
	}
	return nil
}

// PreMigrationCopy is the copy of the file that Open wrote before it
// migrated the schema, or "" when it migrated nothing of an existing file.
func (db *DB) PreMigrationCopy() string { return db.preMigration }

// writeSnapshot writes a consistent copy of b to dest, whole or not at
// all (WriteOutFile). It returns the size of the copy.
func writeSnapshot(b *bolt.DB, dest string) (size int64, _ error) {
	err := WriteOutFile(dest, func(w io.Writer) error {
		return b.View(func(tx *bolt.Tx) error {
			var err error
			size, err = tx.WriteTo(w)
			return err
		})
	})
	return size, err
}

// compact rewrites the file from its live keys and values only, so pages
// freed by earlier transactions (which bbolt leaves as they were) are
// gone, then opens the new file in its place. Between closing the old file
// and opening the new one the lock is not held; this runs at a start that
// migrates, before anything else uses the data dir.
func (db *DB) compact() error {
	tmp := db.path + ".compact"
	os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		return err
	}
	err = bolt.Compact(dst, db.bolt, 64<<20)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := db.bolt.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, db.path); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(db.path)); err != nil {
		return err
	}
	b, err := bolt.Open(db.path, 0o600, boltOptions(db.opts))
	if err != nil {
		return openError(db.path, err)
	}
	db.bolt, db.kv = b, boltStore{b}
	return nil
}
