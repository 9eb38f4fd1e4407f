package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"mailbolt/storage/pgtest"
)

// populatedFile is an embedded database in a new data dir holding, beside
// what Open creates (meta with its sealed secrets, the base buckets), a
// bucket large enough for several copy batches, empty values, binary keys
// and an advanced bucket sequence.
func populatedFile(t *testing.T) (dir string, secret []byte) {
	t.Helper()
	dir = t.TempDir()
	db, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *Tx) error {
		secret, err = tx.ServerSecret()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err = db.kv.Update(func(tx kvTx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("zz_copy_test"))
		if err != nil {
			return err
		}
		for i := range 2*copyBatchKeys + 7 {
			if err := b.Put(fmt.Appendf(nil, "k%06d", i), bytes.Repeat([]byte{byte(i)}, i%50)); err != nil {
				return err
			}
		}
		if err := b.Put([]byte{0, 0xff, 0x80}, []byte{0}); err != nil {
			return err
		}
		for range 5 {
			if _, err := b.NextSequence(); err != nil {
				return err
			}
		}
		_, err = tx.CreateBucketIfNotExists([]byte("zz_empty"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, secret
}

func targetEmpty(t *testing.T, url string) bool {
	t.Helper()
	cfg, err := PostgresConfig(url, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openPGStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM mailbolt_buckets) + (SELECT count(*) FROM mailbolt_kv)").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 0
}

// Every bucket, key, value and sequence of the file is in the target, the
// node that opens it reads the sealed secrets with the same key file, and
// a second copy into it is refused.
func TestMigrateToPostgresCopiesEverything(t *testing.T) {
	dir, secret := populatedFile(t)
	url := pgtest.Shared(t).NewDatabase(t)
	opts := Options{Database: url}
	var phases = map[string]int{}
	rep, err := MigrateToPostgres(context.Background(), dir, opts, func(phase, _ string, _, _ int) { phases[phase]++ })
	if err != nil {
		t.Fatal(err)
	}
	if rep.SchemaVersion != LatestSchemaVersion() || rep.SecretKeyFile != filepath.Join(dir, SecretKeyFileName) || phases["copy"] == 0 || phases["verify"] == 0 {
		t.Fatalf("report %+v, progress %v", rep, phases)
	}
	for _, b := range rep.Buckets {
		if !b.Verified {
			t.Errorf("bucket %s not verified", b.Name)
		}
	}

	src, err := OpenFile(filepath.Join(dir, FileName), Options{ReadOnly: true, LockTimeout: 1e9, MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dstOpts := DefaultOptions()
	dstOpts.Database, dstOpts.SecretKeyFile = url, filepath.Join(dir, SecretKeyFileName)
	dst, err := Open(t.TempDir(), dstOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()

	keys, buckets := 0, 0
	err = src.bolt.View(func(stx *bolt.Tx) error {
		return dst.kv.View(func(dtx kvTx) error {
			return stx.ForEach(func(name []byte, sb *bolt.Bucket) error {
				buckets++
				db := dtx.Bucket(name)
				if db == nil {
					return fmt.Errorf("bucket %s missing", name)
				}
				if n := db.KeyN(); n != sb.Stats().KeyN {
					return fmt.Errorf("bucket %s: %d keys, want %d", name, n, sb.Stats().KeyN)
				}
				dc := db.Cursor()
				dk, dv := dc.First()
				sc := sb.Cursor()
				for k, v := sc.First(); k != nil; k, v = sc.Next() {
					if !bytes.Equal(k, dk) || !bytes.Equal(v, dv) {
						return fmt.Errorf("bucket %s: key %q = %q in the target, %q = %q in the source", name, dk, dv, k, v)
					}
					keys++
					dk, dv = dc.Next()
				}
				if dk != nil {
					return fmt.Errorf("bucket %s: extra key %q in the target", name, dk)
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys != rep.Keys || buckets != len(rep.Buckets) || keys < 2*copyBatchKeys {
		t.Fatalf("compared %d keys in %d buckets; report %d in %d", keys, buckets, rep.Keys, len(rep.Buckets))
	}
	err = dst.Update(func(tx *Tx) error {
		got, err := tx.ServerSecret()
		if err == nil && !bytes.Equal(got, secret) {
			err = errors.New("the server secret differs")
		}
		if err != nil {
			return err
		}
		seq, err := tx.btx.Bucket([]byte("zz_copy_test")).NextSequence()
		if err == nil && seq != 6 {
			err = fmt.Errorf("the sequence went on at %d, want 6", seq)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dst.Close()

	if _, err := MigrateToPostgres(context.Background(), dir, opts, nil); !errors.Is(err, ErrTargetNotEmpty) {
		t.Fatalf("second migrate: %v", err)
	}
}

// A copy that fails part way commits nothing: the target is still empty,
// and the next run copies everything.
func TestMigrateToPostgresFailureLeavesTargetEmpty(t *testing.T) {
	dir, _ := populatedFile(t)
	url := pgtest.Shared(t).NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := MigrateToPostgres(ctx, dir, Options{Database: url}, func(phase, bucket string, done, _ int) {
		if phase == "copy" && bucket == "zz_copy_test" && done > 0 {
			cancel() // after the first batch of several
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted copy: %v", err)
	}
	if !targetEmpty(t, url) {
		t.Fatal("the interrupted copy left records in the target")
	}
	if _, err := MigrateToPostgres(context.Background(), dir, Options{Database: url}, nil); err != nil {
		t.Fatalf("the next run: %v", err)
	}
}

// The source must not be in use, and the key its secrets are sealed with
// must be given; neither refusal writes to the target.
func TestMigrateToPostgresRefusals(t *testing.T) {
	dir, _ := populatedFile(t)
	url := pgtest.Shared(t).NewDatabase(t)

	_, err := MigrateToPostgres(context.Background(), dir, Options{Database: url, SecretKeyFile: filepath.Join(t.TempDir(), "none.key")}, nil)
	if !errors.Is(err, ErrSecretKey) {
		t.Fatalf("missing key file: %v", err)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	if err := WriteNewSecretKey(other); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToPostgres(context.Background(), dir, Options{Database: url, SecretKeyFile: other}, nil); !errors.Is(err, ErrSecretKey) {
		t.Fatalf("another key file: %v", err)
	}

	running, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, err = MigrateToPostgres(context.Background(), dir, Options{Database: url, LockTimeout: 100e6}, nil)
	running.Close()
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("source in use: %v", err)
	}
	if _, err := MigrateToPostgres(context.Background(), t.TempDir(), Options{Database: url}, nil); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("no source: %v", err)
	}
	if !targetEmpty(t, url) {
		t.Fatal("a refused migrate wrote to the target")
	}
}
