package storage

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// receive waits for c's next value, failing the test after 30 s.
func receive[T any](t *testing.T, what string, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for %s", what)
	}
	var none T
	return none
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

// logBuffer keeps what a node logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// putSecondWebhook seals a new webhook's secret on db.
func putSecondWebhook(db *DB) error {
	return db.Update(func(tx *Tx) error {
		return tx.PutWebhook(Webhook{ID: "w2", AccountID: "a1", URL: "https://h2.test/", Secret: "whsec_second"})
	})
}

// A node whose lock connection is lost (its backend terminated) takes
// the lock again on a new connection: a rotation is refused again, naming
// it, and the node goes on sealing secrets under the key, which is still
// the database's.
func TestPostgresNodeTakesItsLostLockAgain(t *testing.T) {
	r := newPGRotation(t)
	oldKey := mustReadFile(t, r.opts.SecretKeyFile)
	retaken := make(chan error, 8)
	n := r
	n.opts.NodeLockCheck = 20 * time.Millisecond
	n.opts.nodeLockRetaken = func(err error) { retaken <- err }
	var logs logBuffer
	n.opts.Logger = logs.logger()
	node := n.open(t, r.opts.SecretKeyFile)

	killed := killNodeLock(t, node)
	if err := receive(t, "the node to take its lock again", retaken); err != nil {
		t.Fatalf("the key check after taking the lock again: %v", err)
	}
	held, _ := nodeLockPIDs(t, node)
	if len(held) != 1 || held[0] == killed {
		t.Fatalf("after the node took its lock again it is held by %v (the killed backend was %d)", held, killed)
	}
	if log := logs.String(); !strings.Contains(log, "lock on the database was lost") || !strings.Contains(log, "took this node's lock again") {
		t.Errorf("the node did not log the loss and the new lock:\n%s", log)
	}
	_, err := RotateSecretKey(t.TempDir(), r.opts, time.Now())
	r.refused(t, err, oldKey, "mailbolt node ")

	if err := putSecondWebhook(node); err != nil {
		t.Fatalf("seal a secret after taking the lock again: %v", err)
	}
	other := r.open(t, r.copyKey(t))
	err = other.View(func(tx *Tx) error {
		w, err := tx.Webhook("a1", "w2")
		if err == nil && w.Secret != "whsec_second" {
			t.Errorf("another node reads the new webhook's secret as %q", w.Secret)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A rotation that ran while a node's lock was lost (its heartbeat ended,
// and before the node took the lock again) leaves the node with the old
// key: it refuses to seal a secret under it, in the write transaction,
// and nothing is stored that the new key does not open.
func TestPostgresNodeRefusesToSealUnderARotatedKey(t *testing.T) {
	r := newPGRotation(t)
	n := r
	n.opts.NodeLockCheck = time.Hour // the node does not notice before the rotation
	node := n.open(t, r.opts.SecretKeyFile)
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
	if err := node.Probe(time.Now()); !errors.Is(err, ErrSecretKey) {
		t.Fatalf("readiness probe of a node with the rotated-out key: %v, want ErrSecretKey", err)
	} else if strings.Contains(err.Error(), r.opts.SecretKeyFile) || strings.Contains(err.Error(), filepath.Base(r.opts.SecretKeyFile)) {
		t.Errorf("the probe's answer, which anyone may read, names the key file: %v", err)
	}
	fresh := r.open(t, r.copyKey(t))
	r.readsEverything(t, fresh)
	if err := fresh.Probe(time.Now()); err != nil {
		t.Fatalf("readiness probe of a node with the new key: %v", err)
	}
	err = fresh.View(func(tx *Tx) error { _, err := tx.Webhook("a1", "w2"); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused webhook: %v, want ErrNotFound", err)
	}
}

// A node that takes its lost lock again while a rotation holds it
// exclusively waits for the rotation's commit, then finds its key rotated
// out: it says so (the key check fails), refuses to seal under it, and
// holds the lock again, so that the next rotation is refused.
func TestPostgresNodeRetakingItsLockWaitsForARotation(t *testing.T) {
	r := newPGRotation(t)
	t.Cleanup(func() { rotateLocked = nil })
	locked, release := make(chan struct{}), make(chan struct{})
	rotated, retaken := make(chan error, 1), make(chan error, 8)
	var once sync.Once
	n := r
	n.opts.NodeLockCheck = 20 * time.Millisecond
	n.opts.nodeLockLost = func() {
		// The node found its connection gone: a rotation takes the lock
		// before the node takes it again.
		once.Do(func() {
			rotateLocked = func() {
				close(locked)
				<-release
			}
			go func() { _, err := RotateSecretKey(t.TempDir(), r.opts, time.Now()); rotated <- err }()
			select {
			case <-locked:
			case err := <-rotated:
				rotated <- err
			}
		})
	}
	n.opts.nodeLockRetaken = func(err error) { retaken <- err }
	var logs logBuffer
	n.opts.Logger = logs.logger()
	node := n.open(t, r.opts.SecretKeyFile)

	killNodeLock(t, node)
	select {
	case <-locked:
	case err := <-rotated:
		t.Fatalf("the rotation did not wait in its transaction: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("waited 30 s for the node to find its lock lost")
	}
	waitUntil(t, "the node to wait for the lock the rotation holds", func() bool {
		_, waiting := nodeLockPIDs(t, node)
		return len(waiting) == 1
	})
	select {
	case err := <-retaken:
		t.Fatalf("the node took its lock again while the rotation held it (key check: %v)", err)
	default:
	}
	close(release)
	if err := receive(t, "the rotation", rotated); err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if err := receive(t, "the node to take its lock again", retaken); !errors.Is(err, ErrSecretKey) {
		t.Fatalf("the key check after the rotation: %v, want ErrSecretKey", err)
	}
	if log := logs.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "the secret key was rotated while it was lost") {
		t.Errorf("the node did not log an error saying its key was rotated out:\n%s", log)
	}
	staleRefused(t, r, node)

	newKey := mustReadFile(t, r.opts.SecretKeyFile)
	if _, err := RotateSecretKey(t.TempDir(), r.opts, time.Now()); !errors.Is(err, ErrNodesLive) || !strings.Contains(err.Error(), "mailbolt node ") {
		t.Fatalf("rotate again while the stale node holds its lock: %v, want ErrNodesLive naming it", err)
	}
	if string(mustReadFile(t, r.opts.SecretKeyFile)) != string(newKey) {
		t.Fatal("a refused rotation changed the key file")
	}
}
