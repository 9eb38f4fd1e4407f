package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Periodic work that several nodes sharing one database must not all do
// (the retention sweep, domain re-checks, TLS reports, MTA-STS refresh)
// runs under a job lease: a record in the meta bucket, under "job\x00"
// and the job's name, holding the unix-nanos end of the lease and the
// holder's token. Write transactions run one at a time across every node,
// so taking a lease (read it, then write it) is atomic.

// jobLeasePrefix starts the meta key of every job lease.
var jobLeasePrefix = []byte("job\x00")

func jobLeaseKey(name string) []byte { return append(append([]byte(nil), jobLeasePrefix...), name...) }

// jobLease reads the lease of job name: its holder and end; ok is false
// when there is none.
func jobLease(b kvBucket, name string) (holder string, until int64, ok bool) {
	v := b.Get(jobLeaseKey(name))
	if len(v) < 8 {
		return "", 0, false
	}
	return string(v[8:]), int64(getU64(v[:8])), true
}

// LeaseJob takes or extends the lease on periodic job name for holder,
// until until. It fails (false) while another holder's lease runs: the
// caller skips this round, which that holder does.
func (tx *Tx) LeaseJob(name, holder string, now, until time.Time) bool {
	b := tx.bucket(bucketMeta)
	if h, end, ok := jobLease(b, name); ok && h != holder && end > now.UnixNano() {
		return false
	}
	return b.Put(jobLeaseKey(name), append(putU64(uint64(until.UnixNano())), holder...)) == nil
}

// ReleaseJob ends holder's lease on job name, if it still holds it, so
// that another node takes the job over at its next round rather than when
// the lease would have ended.
func (tx *Tx) ReleaseJob(name, holder string) error {
	b := tx.bucket(bucketMeta)
	if h, _, ok := jobLease(b, name); ok && h == holder {
		return b.Delete(jobLeaseKey(name))
	}
	return nil
}

// JobHolder is who holds the lease on job name at now ("" when nobody
// does), for tests and diagnostics.
func (tx *Tx) JobHolder(name string, now time.Time) string {
	if h, end, ok := jobLease(tx.bucket(bucketMeta), name); ok && end > now.UnixNano() {
		return h
	}
	return ""
}

// LeaseJob takes the lease on periodic job name for this node (Node) for
// lease from now, in its own write transaction: true means run this
// round. On the embedded engine it always succeeds (one process holds the
// file) and costs one small write per round.
func (db *DB) LeaseJob(name string, now time.Time, lease time.Duration) (bool, error) {
	var ok bool
	err := db.Update(func(tx *Tx) error {
		ok = tx.LeaseJob(name, db.Node(), now, now.Add(lease))
		return nil
	})
	return ok && err == nil, err
}

// ReleaseJob gives up this node's lease on job name (at shutdown).
func (db *DB) ReleaseJob(name string) error {
	return db.Update(func(tx *Tx) error { return tx.ReleaseJob(name, db.Node()) })
}

// Node is this handle's random token: the holder of the leases it takes
// (job leases, delivery leases). Each open of the database is a new node,
// so a restarted process never mistakes an earlier process's lease for
// its own.
func (db *DB) Node() string {
	db.nodeOnce.Do(func() {
		var b [8]byte
		rand.Read(b[:])
		db.node = hex.EncodeToString(b[:])
	})
	return db.node
}

// voidJobLeases drops every job lease at open of the embedded file: the
// file lock lets one process at a time use it, so a lease found now was
// left by a process that has ended. Finding none costs no commit.
func voidJobLeases(db kvStore) error {
	var found bool
	err := db.View(func(btx kvTx) error {
		if b := btx.Bucket(bucketMeta); b != nil {
			k, _ := b.Cursor().Seek(jobLeasePrefix)
			found = k != nil && bytes.HasPrefix(k, jobLeasePrefix)
		}
		return nil
	})
	if err != nil || !found {
		return err
	}
	return db.Update(func(btx kvTx) error {
		c := btx.Bucket(bucketMeta).Cursor()
		for k, _ := c.Seek(jobLeasePrefix); k != nil && bytes.HasPrefix(k, jobLeasePrefix); k, _ = c.Seek(jobLeasePrefix) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}
