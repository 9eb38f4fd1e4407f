package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailbolt/storage/pgtest"
)

// pgRotation is a fresh PostgreSQL database holding one secret of each
// class, sealed under the key in key; no node is left open on it.
type pgRotation struct {
	opts   Options // the database and key
	f      secretFixture
	server []byte // the server secret
}

func newPGRotation(t *testing.T) pgRotation {
	t.Helper()
	r := pgRotation{opts: DefaultOptions(), f: newSecretFixture()}
	r.opts.Database = pgtest.Shared(t).NewDatabase(t)
	r.opts.SecretKeyFile = filepath.Join(t.TempDir(), "secret.key")
	if err := WriteNewSecretKey(r.opts.SecretKeyFile); err != nil {
		t.Fatal(err)
	}
	db := r.open(t, r.opts.SecretKeyFile)
	err := db.Update(func(tx *Tx) error {
		if err := tx.InsertDomain(r.f.domain()); err != nil {
			return err
		}
		if err := tx.PutPerson(r.f.person()); err != nil {
			return err
		}
		return tx.PutWebhook(r.f.webhook())
	})
	if err != nil {
		t.Fatal(err)
	}
	r.server = serverSecret(t, db)
	db.Close()
	return r
}

// open opens one node with the key in keyFile; it is closed when t ends.
func (r pgRotation) open(t *testing.T, keyFile string) *DB {
	t.Helper()
	db, err := r.openErr(t, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func (r pgRotation) openErr(t *testing.T, keyFile string) (*DB, error) {
	o := r.opts
	o.SecretKeyFile = keyFile
	db, err := Open(t.TempDir(), o)
	if err == nil {
		t.Cleanup(func() { db.Close() })
	}
	return db, err
}

// copyKey copies the key file as it is now, as another machine's node
// holds it.
func (r pgRotation) copyKey(t *testing.T) string {
	t.Helper()
	c := filepath.Join(t.TempDir(), "secret.key")
	if err := os.WriteFile(c, mustReadFile(t, r.opts.SecretKeyFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// readsEverything checks that db, opened with some key, opens every
// sealed secret and reads each back as it was stored.
func (r pgRotation) readsEverything(t *testing.T, db *DB) {
	t.Helper()
	if err := db.kv.View(func(tx kvTx) error { return openAll(tx, db.seal) }); err != nil {
		t.Error(err)
	}
	r.f.check(t, db)
	r.f.checkPerson(t, db)
	if !bytes.Equal(serverSecret(t, db), r.server) {
		t.Error("the server secret changed")
	}
}

// refused checks that a rotation failed with ErrNodesLive naming want,
// and left the key file and every secret as they were.
func (r pgRotation) refused(t *testing.T, err error, oldKey []byte, want string) {
	t.Helper()
	if !errors.Is(err, ErrNodesLive) || !strings.Contains(err.Error(), want) {
		t.Fatalf("rotate with a node live: %v, want ErrNodesLive naming %q", err, want)
	}
	if !bytes.Equal(mustReadFile(t, r.opts.SecretKeyFile), oldKey) {
		t.Fatal("a refused rotation changed the key file")
	}
	if left, _ := filepath.Glob(r.opts.SecretKeyFile + ".*"); len(left) != 0 {
		t.Errorf("a refused rotation left %v", left)
	}
	// Nothing was re-sealed: a node with the old key opens and reads
	// every secret.
	db := r.open(t, r.opts.SecretKeyFile)
	r.readsEverything(t, db)
	db.Close()
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A rotation of a shared database's key is refused while a node has it
// open (naming the node), or while a webhook dispatcher's heartbeat runs
// (a node of an earlier version, or one whose lock connection was lost),
// and nothing is re-sealed. With no node left it re-seals every secret:
// a node given the new key reads them all, one with the old key is
// refused.
func TestRotateOnPostgresRefusedWhileNodesLive(t *testing.T) {
	r := newPGRotation(t)
	oldKey := mustReadFile(t, r.opts.SecretKeyFile)

	node := r.open(t, r.opts.SecretKeyFile)
	_, err := RotateSecretKey(t.TempDir(), r.opts, time.Now())
	r.refused(t, err, oldKey, "mailbolt node ")
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("the refusal does not name the node's process: %v", err)
	}
	r.readsEverything(t, node) // the live node still reads what it holds
	node.Close()

	// A dispatcher's heartbeat outlives a node killed without Close.
	now := time.Now()
	hb := r.open(t, r.opts.SecretKeyFile)
	err = hb.Update(func(tx *Tx) error {
		_, err := tx.LeaseOutboxShards("dispatcher-1", now, now.Add(time.Minute), 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	hb.Close()
	_, err = RotateSecretKey(t.TempDir(), r.opts, now)
	r.refused(t, err, oldKey, "heartbeat has not ended")
	if !strings.Contains(err.Error(), "dispatcher-1 (until ") {
		t.Errorf("the refusal does not name the dispatcher: %v", err)
	}

	// Once the heartbeat has ended, and no node holds the lock.
	kept, err := RotateSecretKey(t.TempDir(), r.opts, now.Add(2*time.Minute))
	if err != nil {
		t.Fatalf("rotate with no node live: %v", err)
	}
	if !bytes.Equal(mustReadFile(t, kept), oldKey) {
		t.Error("the kept file is not the old key")
	}
	if bytes.Equal(mustReadFile(t, r.opts.SecretKeyFile), oldKey) {
		t.Fatal("the key file still holds the old key")
	}
	r.readsEverything(t, r.open(t, r.copyKey(t)))
	if _, err := r.openErr(t, kept); !errors.Is(err, ErrSecretKey) {
		t.Errorf("a node with the old key after the rotation: %v", err)
	}
}

// A node that starts while a rotation runs cannot end up with the old key:
// one whose key has passed the key check holds the node lock already, and
// the rotation is refused; one that starts once the rotation holds the
// lock waits for its commit, then refuses the old key.
func TestRotateOnPostgresRacesWithAStartingNode(t *testing.T) {
	r := newPGRotation(t)
	oldKey := mustReadFile(t, r.opts.SecretKeyFile)
	t.Cleanup(func() { keyChecked, rotateLocked = nil, nil })

	// The node first: parked once its key has passed the key check.
	locked, resume := make(chan struct{}), make(chan struct{})
	keyChecked = func() {
		close(locked)
		<-resume
	}
	parked := make(chan *DB, 1)
	go func() {
		db, err := r.openErr(t, r.opts.SecretKeyFile)
		if err != nil {
			t.Errorf("the node parked at the lock: %v", err)
		}
		parked <- db
	}()
	<-locked
	keyChecked = nil
	_, err := RotateSecretKey(t.TempDir(), r.opts, time.Now())
	close(resume)
	if db := <-parked; db != nil {
		r.readsEverything(t, db)
		db.Close()
	}
	r.refused(t, err, oldKey, "mailbolt node ")

	// The rotation first: a node with a copy of the old key (as on
	// another machine) starts while it holds the lock.
	stale := r.copyKey(t)
	started := make(chan error, 1)
	rotateLocked = func() {
		go func() { _, err := r.openErr(t, stale); started <- err }()
		select {
		case err := <-started:
			t.Errorf("a node started while the rotation held the lock: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
	}
	if _, err := RotateSecretKey(t.TempDir(), r.opts, time.Now()); err != nil {
		t.Fatal(err)
	}
	rotateLocked = nil
	select {
	case err := <-started:
		if !errors.Is(err, ErrSecretKey) {
			t.Errorf("a node with the old key that waited for the rotation: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the node that waited for the rotation did not finish opening")
	}
}
