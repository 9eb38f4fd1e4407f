package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"
)

// Moving from the embedded engine to the shared one (`mailbolt migrate`).
// Both engines hold the same buckets of keys and values (kv.go), so the
// move is a copy of every bucket, key, value and bucket sequence, the meta
// bucket included (schema version, server secret, secret key check):
// sealed secrets are copied sealed, and the target opens only with the
// source's secret key file.
//
// The whole copy is ONE PostgreSQL transaction, holding the write lock
// every node takes (kv_pg.go), sent in bounded pieces (copyBatchKeys keys
// or copyBatchBytes bytes each, through COPY): a failure at any point, or
// a verification that does not match, commits nothing and leaves the
// target as empty as it was, so the command can simply be run again; a
// node started on the target meanwhile waits for the lock, then sees the
// whole copy.

// ErrTargetNotEmpty is returned by MigrateToPostgres when the target
// database already holds Mailbolt records.
var ErrTargetNotEmpty = errors.New("storage: the target database is not empty")

const (
	copyBatchKeys  = 5000
	copyBatchBytes = 4 << 20
)

// BucketCopy is one bucket of a migration: what the source holds and
// whether the target holds the same.
type BucketCopy struct {
	Name     string
	Keys     int
	Bytes    int64    // keys and values
	Sequence uint64   // the bucket's NextSequence counter
	Sum      [32]byte // SHA-256 of its keys and values in order (sumRecord)
	Verified bool     // the target's count, sequence and checksum match
}

// MigrateReport is what MigrateToPostgres copied.
type MigrateReport struct {
	Source        string // the database file
	Target        string // the URL, without its password
	SecretKeyFile string // the key the copied secrets are sealed under
	SchemaVersion int
	Buckets       []BucketCopy
	Keys          int
	Bytes         int64
	Elapsed       time.Duration
}

// MigrateProgress hears how the copy is getting on: the bucket being
// copied or verified, and the keys done of its total.
type MigrateProgress func(phase, bucket string, done, total int)

// MigrateToPostgres copies the embedded database in fromDataDir into the
// empty PostgreSQL database opts.Database, then verifies it. The source
// is opened read-only: a server running on it holds the file, and the
// copy fails with ErrLocked. It must be at this build's schema version
// (a start of `mailbolt serve` brings it there). The secret key file
// (opts.SecretKeyFile, default secret.key in fromDataDir) must exist and
// open the source's secrets; the target needs the same file.
//
// "Empty" means the target has no Mailbolt buckets and no records
// (mailbolt_buckets and mailbolt_kv have no rows): a database no node
// has started on, or one a failed migration left (it commits nothing).
// Anything else is ErrTargetNotEmpty, checked under the write lock before
// a single record is written. The SQL schema (the tables) is created on
// an empty database as any node would.
//
// After the commit the target is opened as a node would open it (secret
// key check, schema version) and closed.
func MigrateToPostgres(ctx context.Context, fromDataDir string, opts Options, progress MigrateProgress) (*MigrateReport, error) {
	start := time.Now()
	if progress == nil {
		progress = func(string, string, int, int) {}
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	if opts.SecretKeyFile == "" {
		opts.SecretKeyFile = filepath.Join(fromDataDir, SecretKeyFileName)
	}
	cfg, err := PostgresConfig(opts.Database, opts.DatabaseInsecure)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 2

	src, err := OpenFile(filepath.Join(fromDataDir, FileName), Options{ReadOnly: true, LockTimeout: opts.LockTimeout,
		MaxBatch: 1, SecretKeyFile: opts.SecretKeyFile})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if src.seal == nil {
		return nil, fmt.Errorf("%w: the secret key file %s does not exist: migrate needs the key the secrets in %s are sealed with "+
			"(give --secret-key-file), and every node of the target needs a copy of it", ErrSecretKey, opts.SecretKeyFile, src.path)
	}
	version, err := src.SchemaVersion()
	if err != nil {
		return nil, err
	}
	if version != LatestSchemaVersion() {
		return nil, fmt.Errorf("the database in %s is at schema version %d and this build writes %d: "+
			"start `mailbolt serve` with this build on it once (it migrates the file), stop it, then migrate", fromDataDir, version, LatestSchemaVersion())
	}

	target, err := openPGStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the target database %s: %w", RedactURL(opts.Database), err)
	}
	defer target.Close()
	rep := &MigrateReport{Source: src.path, Target: RedactURL(opts.Database), SecretKeyFile: opts.SecretKeyFile, SchemaVersion: version}
	if err := copyInto(ctx, src.bolt, target, rep, progress); err != nil {
		return nil, err
	}
	target.Close()

	// Open it as every node will: the key check and the schema version.
	nodeOpts := DefaultOptions()
	nodeOpts.Database, nodeOpts.DatabaseInsecure, nodeOpts.SecretKeyFile = opts.Database, opts.DatabaseInsecure, opts.SecretKeyFile
	nodeOpts.DatabaseConns, nodeOpts.Logger = 2, opts.Logger
	db, err := Open(fromDataDir, nodeOpts)
	if err != nil {
		return nil, fmt.Errorf("the copy is committed, but opening it as a node would: %w", err)
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// copyInto copies every bucket of src into target in one transaction and
// verifies it before committing.
func copyInto(ctx context.Context, src *bolt.DB, target *pgStore, rep *MigrateReport, progress MigrateProgress) error {
	pc, err := target.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to the target database: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock("+strconv.Itoa(pgWriteLock)+")"); err != nil {
		conn.Close(context.Background())
		return fmt.Errorf("target database: begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			if _, err := conn.Exec(context.Background(), "ROLLBACK"); err != nil {
				conn.Close(context.Background())
			}
		}
	}()
	var nBuckets, nKeys int64
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM mailbolt_buckets), (SELECT count(*) FROM mailbolt_kv)").Scan(&nBuckets, &nKeys); err != nil {
		return fmt.Errorf("target database: %w", err)
	}
	if nBuckets != 0 || nKeys != 0 {
		return fmt.Errorf("%w: %s already holds %d buckets and %d records: migrate copies only into a database no node has used; "+
			"drop it and create it again empty (or give another)", ErrTargetNotEmpty, rep.Target, nBuckets, nKeys)
	}

	err = src.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			bc, err := copyBucket(ctx, conn, string(name), b, progress)
			if err != nil {
				return fmt.Errorf("copy bucket %s: %w", name, err)
			}
			rep.Buckets = append(rep.Buckets, bc)
			rep.Keys += bc.Keys
			rep.Bytes += bc.Bytes
			return nil
		})
	})
	if err != nil {
		return err
	}
	if err := verifyCopy(ctx, conn, rep, progress); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		conn.Close(context.Background())
		return fmt.Errorf("target database: commit: %w", err)
	}
	committed = true
	return nil
}

// copyBucket sends one bucket's keys and values in pieces of bounded size.
func copyBucket(ctx context.Context, conn *pgx.Conn, name string, b *bolt.Bucket, progress MigrateProgress) (BucketCopy, error) {
	bc := BucketCopy{Name: name, Sequence: b.Sequence()}
	if _, err := conn.Exec(ctx, "INSERT INTO mailbolt_buckets (name, seq) VALUES ($1, $2)", name, int64(bc.Sequence)); err != nil {
		return bc, err
	}
	total := b.Stats().KeyN
	sum := sha256.New()
	var rows [][]any
	var size int
	send := func() error {
		if len(rows) == 0 {
			return nil
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"mailbolt_kv"}, []string{"bucket", "key", "value"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		rows, size = rows[:0], 0
		progress("copy", name, bc.Keys, total)
		return nil
	}
	progress("copy", name, 0, total)
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil && b.Bucket(k) != nil {
			return bc, fmt.Errorf("the key %q is a nested bucket, which Mailbolt never writes: this is not a Mailbolt database", k)
		}
		sumRecord(sum, k, v)
		// bbolt's slices stay valid for the read transaction, which
		// lasts the whole copy.
		rows = append(rows, []any{name, k, nonNil(v)})
		bc.Keys++
		bc.Bytes += int64(len(k) + len(v))
		if size += len(k) + len(v); len(rows) >= copyBatchKeys || size >= copyBatchBytes {
			if err := send(); err != nil {
				return bc, err
			}
		}
	}
	if err := send(); err != nil {
		return bc, err
	}
	copy(bc.Sum[:], sum.Sum(nil))
	return bc, nil
}

func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// sumRecord adds one key and value to a bucket's checksum: each as its
// length (uvarint) then its bytes, so no two sequences of records give
// the same input.
func sumRecord(h hash.Hash, k, v []byte) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
	h.Write(k)
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
	h.Write(v)
}

// verifyCopy reads back what the transaction wrote: the same buckets with
// the same sequences, and in each the same number of keys with the same
// checksum; nothing else.
func verifyCopy(ctx context.Context, conn *pgx.Conn, rep *MigrateReport, progress MigrateProgress) error {
	rows, err := conn.Query(ctx, "SELECT name, seq FROM mailbolt_buckets ORDER BY name")
	if err != nil {
		return err
	}
	type bucketRow struct {
		name string
		seq  int64
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (bucketRow, error) {
		var b bucketRow
		err := r.Scan(&b.name, &b.seq)
		return b, err
	})
	if err != nil {
		return err
	}
	if len(got) != len(rep.Buckets) {
		return fmt.Errorf("verify: the target holds %d buckets, the source %d: nothing was committed", len(got), len(rep.Buckets))
	}
	var total int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM mailbolt_kv").Scan(&total); err != nil {
		return err
	}
	if total != int64(rep.Keys) {
		return fmt.Errorf("verify: the target holds %d records, the source %d: nothing was committed", total, rep.Keys)
	}
	for i := range rep.Buckets {
		bc := &rep.Buckets[i]
		if got[i].name != bc.Name || uint64(got[i].seq) != bc.Sequence {
			return fmt.Errorf("verify: bucket %s (sequence %d) is %s (sequence %d) in the target: nothing was committed",
				bc.Name, bc.Sequence, got[i].name, got[i].seq)
		}
		progress("verify", bc.Name, 0, bc.Keys)
		sum := sha256.New()
		n := 0
		rows, err := conn.Query(ctx, "SELECT key, value FROM mailbolt_kv WHERE bucket = $1 ORDER BY key", bc.Name)
		if err != nil {
			return err
		}
		var k, v []byte
		_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error {
			sumRecord(sum, k, v)
			n++
			return nil
		})
		if err != nil {
			return fmt.Errorf("verify bucket %s: %w", bc.Name, err)
		}
		progress("verify", bc.Name, n, bc.Keys)
		if n != bc.Keys || !bytes.Equal(sum.Sum(nil), bc.Sum[:]) {
			return fmt.Errorf("verify: bucket %s holds %d keys in the source and %d in the target, or their checksums differ: nothing was committed",
				bc.Name, bc.Keys, n)
		}
		bc.Verified = true
	}
	return nil
}
