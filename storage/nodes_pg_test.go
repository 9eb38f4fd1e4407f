package storage

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// nodeLockPIDs lists the backends of db's database that hold the node
// lock shared, and those waiting for it.
func nodeLockPIDs(t *testing.T, db *DB) (held, waiting []int32) {
	t.Helper()
	rows, err := db.pg.pool.Query(context.Background(), `SELECT pid, granted FROM pg_locks
		WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1 AND mode = 'ShareLock'
		ORDER BY pid`, int64(pgNodeLock>>32), int64(pgNodeLock&0xffffffff))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int32
		var granted bool
		if err := rows.Scan(&pid, &granted); err != nil {
			t.Fatal(err)
		}
		if granted {
			held = append(held, pid)
		} else {
			waiting = append(waiting, pid)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return held, waiting
}

// waitUntil polls cond until it holds; a state that does not come within
// 30 s (a bound for a loaded machine, not a timing the test measures)
// fails the test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}

// killNodeLock terminates the backend through which db holds the node
// lock, as a PostgreSQL restart or an operator's pg_terminate_backend
// would, and waits until the server has let go of its lock.
func killNodeLock(t *testing.T, db *DB) int32 {
	t.Helper()
	held, _ := nodeLockPIDs(t, db)
	if len(held) != 1 {
		t.Fatalf("the node lock is held by %v, want the one node", held)
	}
	var ok bool
	if err := db.pg.pool.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", held[0]).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d): %v, %v", held[0], ok, err)
	}
	waitUntil(t, "the terminated backend to let go of the node lock", func() bool {
		now, _ := nodeLockPIDs(t, db)
		return !slices.Contains(now, held[0])
	})
	return held[0]
}

// putSecondWebhook seals a new webhook's secret on db.
func putSecondWebhook(db *DB) error {
	return db.Update(func(tx *Tx) error {
		return tx.PutWebhook(Webhook{ID: "w2", AccountID: "a1", URL: "https://h2.test/", Secret: "whsec_second"})
	})
}

// A rotation that ran while a node's lock was lost (its heartbeat ended)
// leaves the node with the old
// key: it refuses to seal a secret under it, in the write transaction,
// and nothing is stored that the new key does not open.
func TestPostgresNodeRefusesToSealUnderARotatedKey(t *testing.T) {
	r := newPGRotation(t)
	node := r.open(t, r.opts.SecretKeyFile)
	r.readsEverything(t, node) // its cache holds the key check as it was

	killNodeLock(t, node)
	if _, err := RotateSecretKey(t.TempDir(), r.opts, time.Now()); err != nil {
		t.Fatalf("rotate while the node's lock was lost: %v", err)
	}
	staleRefused(t, r, node)
}

// staleRefused checks that node, whose key a rotation replaced, refuses
// to seal a secret, and that every secret still opens with the new key.
func staleRefused(t *testing.T, r pgRotation, node *DB) {
	t.Helper()
	err := putSecondWebhook(node)
	if !errors.Is(err, ErrSecretKey) || !strings.Contains(err.Error(), "rotated") || !strings.Contains(err.Error(), "webhook/w2/secret") {
		t.Fatalf("a node with the rotated-out key sealed a secret: %v, want ErrSecretKey saying the key was rotated", err)
	}
	fresh := r.open(t, r.copyKey(t))
	r.readsEverything(t, fresh)
	err = fresh.View(func(tx *Tx) error { _, err := tx.Webhook("a1", "w2"); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused webhook: %v, want ErrNotFound", err)
	}
}
