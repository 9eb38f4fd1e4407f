package storage

import "time"

var keyProbe = []byte("probe")

// Probe proves the database takes writes: it commits the time now under
// meta/probe through the committer, fsync included, as every write does.
// Readiness checks call it; a full disk or a closed database fails it. On
// the shared engine it also fails, with ErrSecretKey, on a node whose
// secret key a rotation has replaced (Tx.keyCurrent): such a node can
// neither open the re-sealed secrets (DKIM keys, webhook secrets) nor seal
// new ones, so it should take no traffic.
func (db *DB) Probe(now time.Time) error {
	return db.Update(func(tx *Tx) error {
		if _, shared := tx.btx.(*pgTx); shared {
			if err := tx.keyCurrent(); err != nil {
				return err
			}
		}
		return tx.bucket(bucketMeta).Put(keyProbe, putU64(uint64(now.UnixNano())))
	})
}
