package storage

import "time"

var keyProbe = []byte("probe")

// Probe proves the database takes writes: it commits the time now under
// meta/probe through the committer, fsync included, as every write does.
// Readiness checks call it; a full disk or a closed database fails it.
func (db *DB) Probe(now time.Time) error {
	return db.Update(func(tx *Tx) error {
		return tx.bucket(bucketMeta).Put(keyProbe, putU64(uint64(now.UnixNano())))
	})
}
