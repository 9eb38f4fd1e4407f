package storage

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// op is one caller's unit of work waiting for the committer.
type op struct {
	fn   func(*Tx) error
	done chan error
}

// errRollback aborts a shared transaction after one unit of work failed.
var errRollback = errors.New("storage: roll back batch")

// Update runs fn in a read-write transaction and returns after the
// transaction that holds fn's writes is committed and synced to disk.
//
// Concurrent callers share one commit (group commit): a single committer
// goroutine runs every pending fn in one bbolt transaction, so N concurrent
// writers pay for one fsync instead of N. fn may therefore run more than once
// (when another fn in its batch fails, the batch is rolled back and re-run
// without it) and must not have effects outside tx. A fn that returns an error
// has none of its writes committed, and Update returns that error.
func (db *DB) Update(fn func(tx *Tx) error) error {
	o := &op{fn: fn, done: make(chan error, 1)}
	db.mu.RLock()
	if db.closed || db.opts.ReadOnly {
		db.mu.RUnlock()
		return ErrClosed
	}
	db.ops <- o
	db.mu.RUnlock()
	return <-o.done
}

func (db *DB) commitLoop() {
	defer close(db.finished)
	for first := range db.ops {
		batch := []*op{first}
		// Let handlers that are about to submit a write run first, so they
		// join this commit. Unlike a timer this costs nothing when no one
		// else is runnable (a lone writer is committed at once).
		runtime.Gosched()
	drain:
		for len(batch) < db.opts.MaxBatch {
			select {
			case o, ok := <-db.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		db.commitBatch(batch)
	}
}

// commitBatch commits batch in one transaction. A unit of work that fails is
// answered with its error and the rest are re-run without it.
func (db *DB) commitBatch(batch []*op) {
	for len(batch) > 0 {
		failed, failErr := -1, error(nil)
		var changed Change
		var gauge gaugeDelta
		start := time.Now()
		err := db.kv.Update(func(btx kvTx) error {
			// The engine may run this more than once (PostgreSQL re-runs it
			// when its node cache was stale): each run starts afresh.
			failed, failErr = -1, nil
			tx := &Tx{btx: btx, seal: db.seal, decoded: db.decoded}
			for i, o := range batch {
				if err := db.runOne(o.fn, tx); err != nil {
					failed, failErr = i, err
					return errRollback
				}
			}
			changed, gauge = tx.changed, tx.gauge
			if n, ok := btx.(interface{ setNotify(Change) }); ok {
				n.setNotify(changed) // other nodes' workers wait for it too
			}
			return nil
		})
		if failed >= 0 && errors.Is(err, errRollback) {
			batch[failed].done <- failErr
			batch = append(batch[:failed:failed], batch[failed+1:]...)
			continue
		}
		if err == nil {
			db.commits.Add(1)
			db.gauges.apply(&gauge)
			if db.opts.CommitObserver != nil {
				db.opts.CommitObserver(time.Since(start))
			}
			// On disk now: wake whoever waits for what the batch filed,
			// before its callers hear that it is done.
			db.runAfterCommit(changed)
		}
		for _, o := range batch {
			o.done <- err
		}
		return
	}
}

func (db *DB) runOne(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("storage: panic in write: %v", r)
		}
	}()
	if db.opts.WriteFault != nil {
		if err := db.opts.WriteFault(); err != nil {
			return err
		}
	}
	return fn(tx)
}
