package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

var keyProbe = []byte("probe")

// Probe proves the database takes writes: it commits the time now under
// meta/probe through the committer, fsync included, as every write does.
// Readiness checks call it; a full disk or a closed database fails it. On
// the shared engine it also fails, with ErrSecretKey, on a node whose
// secret key a rotation has replaced (Tx.keyCurrent): such a node can
// neither open the re-sealed secrets (DKIM keys, webhook secrets) nor seal
// new ones, so it should take no traffic.
//
// Its error is a probe's answer, which anyone may read: the stale key's is
// a fixed text, and the whole error (which names the key file) goes to the
// log, once.
func (db *DB) Probe(now time.Time) error {
	err := db.Update(func(tx *Tx) error {
		if _, shared := tx.btx.(*pgTx); shared {
			if err := tx.keyCurrent(); err != nil {
				return err
			}
		}
		return tx.bucket(bucketMeta).Put(keyProbe, putU64(uint64(now.UnixNano())))
	})
	if !errors.Is(err, ErrSecretKey) {
		return err
	}
	if db.probeKeyLogged.CompareAndSwap(false, true) {
		log := db.opts.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Error("readiness: this node's secret key is no longer the database's; it answers /readyz 503", "err", err)
	}
	return fmt.Errorf("%w: the database's secret key was rotated after this node read its key file: restart it with the new key file", ErrSecretKey)
}
