package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgStore is the shared engine: every bucket's keys and values in one
// PostgreSQL table, mailbolt_kv, keyed by (bucket, key) in byte order.
//
// Write transactions take one transaction-scoped advisory lock first, so
// that, across every node sharing the database, they run one at a time as
// bbolt's do: each sees every write committed before it began, and the
// record logic above (queue claims and their leases, idempotency keys,
// warm-up caps, name claims) is exactly as safe as on one file. Group
// commit (commit.go) puts many units of work in each of those
// transactions. A transaction's writes are held in memory and sent
// together, in one round trip, before its next range read and with its
// COMMIT. Read-only transactions are REPEATABLE READ snapshots and never
// wait for the lock.
//
// Statements are pipelined: BEGIN (and the lock) go with a transaction's
// first read, and a transaction that reads nothing from the server sends
// only its commit. Write transactions read through a node-wide cache of
// the records this node's own write transactions read and wrote (pgcache.go),
// checked at commit against the generation every writing commit bumps:
// when another node wrote meanwhile, the transaction is rolled back and run
// again without the cache. One node alone thus reads each record from the
// server once, not in every transaction.
type pgStore struct {
	pool  *pgxpool.Pool
	cache pgCache // only write transactions use it, one at a time (writeMu)

	writeMu sync.Mutex // this node's write transactions, one at a time

	mu      sync.RWMutex
	buckets map[string]bool // bucket names; they change only in migrations

	gens genCheck // the generation, read for cached views

	serverReads   atomic.Int64 // reads sent to the server (tests watch the cache with it)
	cachedViews   atomic.Int64 // views answered from the cache alone
	upsertRetries atomic.Int64 // write transactions run again after a PutNew was wrong
	migrating     atomic.Bool  // Open is running the record migrations

	pidMu sync.Mutex
	pids  map[uint32]bool // backend pids of this node's connections (notifications it sent)

	nodeConn *pgx.Conn       // holds the node lock (nodes_pg.go); nil when not taken
	nodeCfg  *pgx.ConnConfig // how nodeConn is made again when lost
	stopKeep func()          // ends keepNodeLock, which owns nodeConn while it runs
	keeping  chan struct{}   // closed when keepNodeLock has returned
}

// pgWriteLock is the advisory lock every write transaction holds.
const pgWriteLock = 0x6d61696c626f6c74 // "mailbolt"

// pgNotifyChannel carries each commit's Change to every node.
const pgNotifyChannel = "mailbolt_change"

// pgTimeout bounds one transaction, its wait for the write lock included;
// the record migrations at open, which may rewrite every record, get
// pgMigrationTimeout instead.
const (
	pgTimeout          = 2 * time.Minute
	pgMigrationTimeout = 12 * time.Hour
)

// pgSchema is the SQL schema's migrations: each entry is one version,
// applied in order under the write lock and recorded in
// mailbolt_sql_schema. The records' own schema (migrate.go) lives in the
// meta bucket, as on bbolt.
var pgSchema = []string{
	1: `CREATE TABLE mailbolt_buckets (name text COLLATE "C" PRIMARY KEY, seq bigint NOT NULL DEFAULT 0);
CREATE TABLE mailbolt_kv (bucket text COLLATE "C" NOT NULL, key bytea NOT NULL, value bytea NOT NULL, PRIMARY KEY (bucket, key));
CREATE TABLE mailbolt_generation (n bigint NOT NULL);
INSERT INTO mailbolt_generation VALUES (1);
CREATE FUNCTION mailbolt_commit(expected bigint, bump boolean) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE cur bigint;
BEGIN
	SELECT n INTO cur FROM mailbolt_generation;
	IF expected >= 0 AND cur <> expected THEN
		RAISE EXCEPTION 'mailbolt: the database changed since this node cached it' USING ERRCODE = 'MB001';
	END IF;
	IF bump THEN
		UPDATE mailbolt_generation SET n = n + 1 RETURNING n INTO cur;
	END IF;
	RETURN cur;
END $$;`,
	// 2: the shared counters (counters.go, counters_pg.go): rate windows
	// and attempt counts, written outside the write lock.
	2: `CREATE TABLE mailbolt_counters (name bytea NOT NULL, window_id bigint NOT NULL, count bigint NOT NULL, expires timestamptz NOT NULL, PRIMARY KEY (name, window_id));
CREATE INDEX mailbolt_counters_expires ON mailbolt_counters (expires);`,
	// A new record's key checked at commit rather than read before it.
	3: `CREATE FUNCTION mailbolt_expect_absent(buckets text[], keys bytea[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM mailbolt_kv k JOIN unnest(buckets, keys) AS u(b, k) ON k.bucket = u.b AND k.key = u.k) THEN
		RAISE EXCEPTION 'mailbolt: a new record''s key is taken' USING ERRCODE = 'MB002';
	END IF;
END $$;`,
}

func openPGStore(ctx context.Context, cfg *pgxpool.Config) (*pgStore, error) {
	s := &pgStore{pids: map[uint32]bool{}}
	before := cfg.BeforeClose
	cfg.BeforeClose = func(c *pgx.Conn) {
		// The server may give this PID to another node's connection next.
		s.pidMu.Lock()
		delete(s.pids, c.PgConn().PID())
		s.pidMu.Unlock()
		if before != nil {
			before(c)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.pool = pool
	s.gens.read = func(ctx context.Context) (n int64, err error) {
		err = pool.QueryRow(ctx, "SELECT n FROM mailbolt_generation").Scan(&n)
		return n, err
	}
	if err := s.migrateSQL(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.loadBuckets(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// migrateSQL brings the SQL schema up to date, refusing a newer one.
func (s *pgStore) migrateSQL(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "BEGIN; SELECT pg_advisory_xact_lock("+strconv.Itoa(pgWriteLock)+"); "+
		"CREATE TABLE IF NOT EXISTS mailbolt_sql_schema (version int NOT NULL)"); err != nil {
		return fmt.Errorf("prepare the schema: %w", err)
	}
	defer conn.Exec(context.Background(), "ROLLBACK")
	var current int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM mailbolt_sql_schema").Scan(&current); err != nil {
		return err
	}
	latest := len(pgSchema) - 1
	if current > latest {
		return fmt.Errorf("the database's SQL schema version %d is newer than this build supports (%d): upgrade mailbolt", current, latest)
	}
	for v := current + 1; v <= latest; v++ {
		if _, err := conn.Exec(ctx, pgSchema[v]); err != nil {
			return fmt.Errorf("SQL schema version %d: %w", v, err)
		}
		if _, err := conn.Exec(ctx, "INSERT INTO mailbolt_sql_schema VALUES ("+strconv.Itoa(v)+")"); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, "COMMIT")
	return err
}

func (s *pgStore) loadBuckets(ctx context.Context) error {
	rows, err := s.pool.Query(ctx, "SELECT name FROM mailbolt_buckets")
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.buckets = map[string]bool{}
	for _, n := range names {
		s.buckets[n] = true
	}
	s.mu.Unlock()
	return nil
}

func (s *pgStore) Close() error {
	s.stopKeepingNodeLock()
	s.pool.Close()
	s.releaseNodeLock()
	return nil
}

func (s *pgStore) View(fn func(kvTx) error) error { return s.run(false, fn) }

func (s *pgStore) Update(fn func(kvTx) error) error { return s.run(true, fn) }

// viewCached runs fn on what the node's cache holds when the server's
// generation, read after the call began, is the cache's or older: the
// cache is then a state the server held after the call began, and nothing
// written before the call is missed. since, when not 0, is such a
// generation read already (by an earlier view of the same request), and
// none is read again. When the cache is behind, or fn asks for a record
// it does not hold, fn runs again in a read-only transaction on the
// server (so fn may run twice), and what that reads is added to the
// cache. It returns the generation fn's reads were of (0 when unknown).
func (s *pgStore) viewCached(since int64, fn func(kvTx) error) (int64, error) {
	if s.cache.generation() != 0 {
		n, err := since, error(nil)
		if n == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
			n, err = s.gens.current(ctx)
			cancel()
		}
		if err == nil {
			if at, ok := s.cache.reach(n); ok {
				if ferr, ok := s.fromCache(at, fn); ok {
					s.cachedViews.Add(1)
					return at, ferr
				}
			}
		}
	}
	var last *pgTx
	err := s.runOnce(pgRun{warming: true}, func(kt kvTx) error {
		last = kt.(*pgTx)
		return fn(kt)
	})
	if last == nil {
		return 0, err
	}
	return last.viewGen, err
}

// fromCache runs fn on the cache alone, at generation at: ok is false
// when fn asked for something the cache did not hold (or no longer at at),
// and what fn made of that is to be thrown away.
func (s *pgStore) fromCache(at int64, fn func(kvTx) error) (ferr error, ok bool) {
	t := &pgTx{s: s, cacheOnly: true, pin: at, open: map[string]*pgBucket{}}
	ferr = fn(t)
	return ferr, !t.missed
}

func (s *pgStore) run(writable bool, fn func(kvTx) error) error {
	if !writable {
		return s.runOnce(pgRun{}, fn)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	attempt := func(r pgRun) error {
		r.writable, r.useCache = true, true
		err := s.runOnce(r, fn)
		if errors.Is(err, errStaleCache) {
			// Another node wrote since this node last did: what the cache
			// held may be out of date. Run fn again on what the server holds.
			s.cache.clear()
			r.useCache = false
			err = s.runOnce(r, fn)
		}
		return err
	}
	var r pgRun
	for {
		err := attempt(r)
		switch {
		case errors.Is(err, errFreshTaken) && !r.upsertOnly:
			// A key PutNew was given holds a value: store them as Put does.
			// The cache may be what misled it (a sequence another node
			// has moved on): it goes too, as for a stale cache.
			r.upsertOnly = true
			s.cache.clear()
			s.upsertRetries.Add(1)
		case errors.Is(err, errKeyTaken) && !r.eagerNew:
			// A key ExpectNew let through is taken: run fn again checking
			// each one as it is asked, so the unit of work that made it
			// hears ErrExists and the others go on.
			r.eagerNew = true
		default:
			return err
		}
	}
}

// errFreshTaken is a transaction refused because a key given to PutNew
// holds a value (unique_violation, which only those plain INSERTs raise).
var errFreshTaken = errors.New("storage: a key written as new is taken")

const pgUniqueViolation = "23505"

// pgCode is the SQLSTATE err carries, "" when none.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// retryable is what pgStore.run makes of a transaction refused with code,
// when it runs fn again for it; nil otherwise.
func retryable(code string) error {
	switch code {
	case pgKeyTakenCode:
		return errKeyTaken
	case pgUniqueViolation:
		return errFreshTaken
	}
	return nil
}

// pgRun is how runOnce runs fn.
type pgRun struct {
	writable   bool
	useCache   bool // reads may come from the node's cache
	eagerNew   bool // ExpectNew reads the key at once
	warming    bool // a read-only transaction whose reads may fill the cache
	upsertOnly bool // PutNew is Put
}

// errKeyTaken is a commit refused because a key given to ExpectNew holds
// a record.
var errKeyTaken = errors.New("storage: a new record's key is taken")

// pgKeyTakenCode is the SQLSTATE mailbolt_expect_absent raises.
const pgKeyTakenCode = "MB002"

// errStaleCache is a commit refused because the generation moved on since
// the cache was filled.
var errStaleCache = errors.New("storage: stale cache")

// runOnce runs fn in one transaction. A read-only one that is warming
// adds what it read to the cache when its snapshot is of the cache's
// generation.
func (s *pgStore) runOnce(r pgRun, fn func(kvTx) error) (err error) {
	writable := r.writable
	timeout := pgTimeout
	if s.migrating.Load() {
		timeout = pgMigrationTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	defer conn.Release()
	if writable {
		s.pidMu.Lock()
		s.pids[conn.Conn().PgConn().PID()] = true
		s.pidMu.Unlock()
	}
	t := &pgTx{s: s, conn: conn.Conn(), ctx: ctx, writable: writable, useCache: r.useCache, eagerNew: r.eagerNew,
		warming: r.warming && !writable, upsertOnly: r.upsertOnly, open: map[string]*pgBucket{}}
	done := false
	defer func() {
		if !done && t.begun {
			if _, rerr := conn.Exec(context.Background(), "ROLLBACK"); rerr != nil {
				conn.Conn().Close(context.Background())
			}
		}
	}()
	ferr := fn(t)
	// A flush before the commit (a read's, or DeleteBucket's, which fn
	// hears) may have raised what run answers by running fn again.
	for _, e := range []error{t.err, ferr} {
		if again := retryable(pgCode(e)); again != nil {
			return again
		}
	}
	if (t.err != nil || ferr != nil) && t.usedCache {
		// fn may have failed on what the cache said (a record another
		// node has since made): only an error the server's state gives too
		// is fn's answer.
		if err := t.checkCache(); err != nil {
			return err
		}
	}
	if t.err != nil {
		return fmt.Errorf("storage: %w", t.err)
	}
	if t.warming && t.viewGen > 0 {
		// Every read was of one snapshot, whatever fn made of them.
		s.cache.warm(t, t.viewGen)
	}
	if ferr != nil {
		return ferr
	}
	gen, err := t.commit()
	if err != nil {
		// The deferred ROLLBACK ends the transaction.
		if code := pgCode(err); code == pgStaleCode {
			return errStaleCache
		} else if again := retryable(code); again != nil {
			return again
		}
		done = true // the connection's state is unknown
		conn.Conn().Close(context.Background())
		return fmt.Errorf("storage: commit: %w", err)
	}
	done = true
	if writable {
		if t.created != nil {
			s.mu.Lock()
			for name, created := range t.created {
				if created {
					s.buckets[name] = true
				} else {
					delete(s.buckets, name)
				}
			}
			s.mu.Unlock()
			s.cache.clear()
		} else if gen > 0 {
			s.cache.keep(t, gen, t.wrote)
		}
	}
	return nil
}

// checkCache reports errStaleCache when another node has written since
// the cache was filled; the transaction is rolled back afterwards either way.
func (t *pgTx) checkCache() error {
	batch := t.batch()
	batch.Queue("SELECT mailbolt_commit($1, false)", t.s.cache.generation())
	err := t.conn.SendBatch(t.ctx, batch).Close()
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgStaleCode {
		return errStaleCache
	}
	return nil // the cache was current (or the check failed: fn's error stands)
}

// pgStaleCode is the SQLSTATE mailbolt_commit raises for a stale cache.
const pgStaleCode = "MB001"

// warm runs fn in a read-only transaction and, when its snapshot is of
// the generation the cache holds, adds what it read to the cache: reads a
// write transaction will make, made beforehand outside the write lock and
// in parallel with it.
func (s *pgStore) warm(fn func(kvTx) error) {
	if at := s.cache.generation(); at != 0 {
		if _, ok := s.fromCache(at, fn); ok {
			return // the cache holds it all already
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return // warming is only ever a saving
	}
	defer conn.Release()
	t := &pgTx{s: s, conn: conn.Conn(), ctx: ctx, warming: true, open: map[string]*pgBucket{}}
	ferr := fn(t)
	if _, err := t.commit(); err != nil {
		conn.Conn().Close(context.Background())
		return
	}
	if ferr == nil && t.err == nil && t.viewGen > 0 {
		s.cache.warm(t, t.viewGen)
	}
}

// ownPID reports whether pid is one of this node's connections.
func (s *pgStore) ownPID(pid uint32) bool {
	s.pidMu.Lock()
	defer s.pidMu.Unlock()
	return s.pids[pid]
}

// listen calls fn with the Change of every commit made by another node,
// until ctx ends; a lost connection is re-made. After a reconnection fn is
// called with every Change, since notifications sent meanwhile are lost
// (the first connection misses nothing: the workers read the queues at start).
func (s *pgStore) listen(ctx context.Context, fn func(Change), logf func(error)) {
	all := OutboxWritten | WebhookQueueWritten | MessageQueueWritten
	for first := true; ctx.Err() == nil; first = false {
		conn, err := s.pool.Acquire(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+pgNotifyChannel)
			if err == nil {
				if !first {
					fn(all)
				}
				for {
					n, werr := conn.Conn().WaitForNotification(ctx)
					if werr != nil {
						err = werr
						break
					}
					if s.ownPID(n.PID) {
						continue
					}
					if c, perr := strconv.ParseUint(n.Payload, 10, 8); perr == nil {
						fn(Change(c))
					}
				}
			}
			conn.Conn().Close(context.Background())
			conn.Release()
		}
		if ctx.Err() != nil {
			return
		}
		logf(err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// pgTx is one transaction on one connection.
type pgTx struct {
	s        *pgStore
	conn     *pgx.Conn
	ctx      context.Context
	writable bool
	err      error // the first failed read: the transaction fails with it

	open    map[string]*pgBucket
	created map[string]bool // buckets created (true) or deleted (false) here
	notify  Change

	cacheOnly bool  // a view that reads the cache alone, at generation pin
	pin       int64 // (see pgStore.viewCached)
	missed    bool  // it asked for something the cache did not hold

	begun     bool     // BEGIN has been sent (with the first statement)
	useCache  bool     // reads may come from the node's cache
	eagerNew  bool     // ExpectNew reads the key at once
	warming   bool     // a read-only transaction whose reads may fill the cache
	viewGen   int64    // the generation its snapshot is of
	newB      []string // keys given to ExpectNew, checked with the next flush
	newK      [][]byte
	usedCache bool // some did: the commit checks the generation
	wrote     bool

	upsertOnly bool // PutNew is Put: a plain INSERT of this fn's was refused
}

// batch is a new pipeline for t, led by BEGIN (and, for a write
// transaction, the advisory lock) when nothing has been sent yet.
func (t *pgTx) batch() *pgx.Batch {
	b := &pgx.Batch{}
	if !t.begun {
		t.begun = true
		if t.writable {
			b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
			b.Queue("SELECT pg_advisory_xact_lock($1)", int64(pgWriteLock))
		} else {
			b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
			if t.warming {
				// The snapshot is taken here: every read of t is of the
				// state this generation names.
				b.Queue("SELECT n FROM mailbolt_generation").QueryRow(func(row pgx.Row) error { return row.Scan(&t.viewGen) })
			}
		}
	}
	return b
}

// exec runs one statement in t. A failure is t's too: the server has
// aborted the transaction, and the error may be one run answers by running
// fn again (when fn's own error does not reach run, as in group commit).
func (t *pgTx) exec(sql string, args ...any) error {
	b := t.batch()
	b.Queue(sql, args...)
	err := t.conn.SendBatch(t.ctx, b).Close()
	t.fail(err)
	return err
}

func (t *pgTx) Writable() bool { return t.writable }

func (t *pgTx) fail(err error) {
	if t.err == nil && err != nil {
		t.err = err
	}
}

func (t *pgTx) exists(name string) bool {
	if c, ok := t.created[name]; ok {
		return c
	}
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	return t.s.buckets[name]
}

func (t *pgTx) Bucket(name []byte) kvBucket {
	if b := t.open[string(name)]; b != nil {
		return b
	}
	if !t.exists(string(name)) {
		return nil
	}
	b := &pgBucket{t: t, name: string(name), written: map[string]pgValue{}, read: map[string][]byte{}}
	t.open[b.name] = b
	return b
}

func (t *pgTx) CreateBucketIfNotExists(name []byte) (kvBucket, error) {
	if !t.writable {
		return nil, errors.New("storage: create a bucket in a read-only transaction")
	}
	if !t.exists(string(name)) {
		if err := t.exec("INSERT INTO mailbolt_buckets (name) VALUES ($1) ON CONFLICT DO NOTHING", string(name)); err != nil {
			return nil, err
		}
		if t.created == nil {
			t.created = map[string]bool{}
		}
		t.created[string(name)] = true
		t.wrote = true
	}
	return t.Bucket(name), nil
}

func (t *pgTx) DeleteBucket(name []byte) error {
	if !t.writable {
		return errors.New("storage: delete a bucket in a read-only transaction")
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := t.exec("DELETE FROM mailbolt_kv WHERE bucket = $1", string(name)); err != nil {
		return err
	}
	if err := t.exec("DELETE FROM mailbolt_buckets WHERE name = $1", string(name)); err != nil {
		return err
	}
	delete(t.open, string(name))
	t.wrote = true // other nodes' caches of the bucket are stale now
	if t.created == nil {
		t.created = map[string]bool{}
	}
	t.created[string(name)] = false
	return nil
}

// setNotify asks the commit to tell every node what it changed.
func (t *pgTx) setNotify(c Change) { t.notify |= c }

// queueFlush adds this transaction's unsent writes to batch, leaving them
// sent once batch is.
func (t *pgTx) queueFlush(batch *pgx.Batch) {
	var putB, delB, newB []string
	var putK, putV, delK, newK, newV [][]byte
	for _, b := range t.open {
		for k := range b.dirty {
			w := b.written[k]
			switch {
			case w.deleted:
				delB, delK = append(delB, b.name), append(delK, []byte(k))
			case w.fresh && !t.upsertOnly:
				newB, newK, newV = append(newB, b.name), append(newK, []byte(k)), append(newV, w.value)
			default:
				putB, putK, putV = append(putB, b.name), append(putK, []byte(k)), append(putV, w.value)
			}
		}
		b.dirty = nil
		if b.seqDirty {
			batch.Queue("UPDATE mailbolt_buckets SET seq = $2 WHERE name = $1", b.name, int64(b.seq))
			b.seqDirty = false
		}
	}
	if len(t.newK) > 0 {
		// Before this transaction's own writes of those keys are sent. A
		// key this flush inserts plainly needs no check: the INSERT fails
		// when it is taken, and run then runs fn again with upserts, which
		// check it here (see pgStore.run).
		expB, expK := t.newB, t.newK
		if len(newK) > 0 {
			plain := make(map[string]struct{}, len(newK))
			for i := range newK {
				plain[newB[i]+"\x00"+string(newK[i])] = struct{}{}
			}
			expB, expK = nil, nil
			for i := range t.newK {
				if _, ok := plain[t.newB[i]+"\x00"+string(t.newK[i])]; !ok {
					expB, expK = append(expB, t.newB[i]), append(expK, t.newK[i])
				}
			}
		}
		if len(expK) > 0 {
			batch.Queue("SELECT mailbolt_expect_absent($1::text[], $2::bytea[])", expB, expK)
		}
		t.newB, t.newK = nil, nil
	}
	if len(delK) > 0 {
		batch.Queue("DELETE FROM mailbolt_kv WHERE (bucket, key) IN (SELECT * FROM unnest($1::text[], $2::bytea[]))", delB, delK)
	}
	if len(newK) > 0 {
		batch.Queue("INSERT INTO mailbolt_kv (bucket, key, value) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[])", newB, newK, newV)
	}
	if len(putK) > 0 {
		batch.Queue("INSERT INTO mailbolt_kv (bucket, key, value) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[]) "+
			"ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value", putB, putK, putV)
	}
}

// flush sends the unsent writes.
func (t *pgTx) flush() error {
	if !t.dirty() {
		return nil
	}
	batch := t.batch()
	t.queueFlush(batch)
	err := t.conn.SendBatch(t.ctx, batch).Close()
	t.fail(err) // as in exec
	return err
}

// dirty reports whether t holds writes not sent yet.
func (t *pgTx) dirty() bool {
	if len(t.newK) > 0 {
		return true
	}
	for _, b := range t.open {
		if len(b.dirty) > 0 || b.seqDirty {
			return true
		}
	}
	return false
}

// commit sends the unsent writes, the generation check and bump, the
// notification and COMMIT in one round trip. It returns the generation the
// commit left (0 when it sent nothing).
func (t *pgTx) commit() (gen int64, err error) {
	if !t.writable {
		if !t.begun {
			return 0, nil
		}
		return 0, t.conn.SendBatch(t.ctx, &pgx.Batch{QueuedQueries: []*pgx.QueuedQuery{{SQL: "COMMIT"}}}).Close()
	}
	if !t.begun && !t.wrote && !t.usedCache && t.notify == 0 {
		return 0, nil // nothing read from the server, nothing written
	}
	batch := t.batch()
	t.queueFlush(batch)
	// Check the cache was current (when it was read), bump the generation
	// (when something was written), and learn where it stands.
	expected := int64(-1)
	if t.usedCache {
		expected = t.s.cache.generation()
	}
	batch.Queue("SELECT mailbolt_commit($1, $2)", expected, t.wrote).QueryRow(func(row pgx.Row) error { return row.Scan(&gen) })
	if t.notify != 0 {
		batch.Queue("SELECT pg_notify($1, $2)", pgNotifyChannel, strconv.Itoa(int(t.notify)))
	}
	batch.Queue("COMMIT")
	if err := t.conn.SendBatch(t.ctx, batch).Close(); err != nil {
		return 0, err
	}
	return gen, nil
}

// rows runs a range query after sending the unsent writes, in one round
// trip, and returns its key/value pairs.
func (t *pgTx) rows(sql string, args ...any) ([]pgPair, error) {
	t.s.serverReads.Add(1)
	batch := t.batch()
	t.queueFlush(batch)
	var out []pgPair
	batch.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var p pgPair
			if err := rows.Scan(&p.k, &p.v); err != nil {
				return err
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	if err := t.conn.SendBatch(t.ctx, batch).Close(); err != nil {
		return nil, err
	}
	return out, nil
}

type pgPair struct{ k, v []byte }

type pgValue struct {
	value   []byte
	deleted bool
	fresh   bool // known to be a new key: sent in a plain INSERT
}

// pgBucket is one bucket within one transaction: its writes so far, and
// the values it has read.
type pgBucket struct {
	t        *pgTx
	name     string
	written  map[string]pgValue  // every write of this transaction
	dirty    map[string]struct{} // the writes not sent yet
	read     map[string][]byte   // values read (nil: none stored)
	version  int                 // counts writes, so cursors know to re-read
	ranges   map[string][]pgPair // pages read before any write to the bucket
	spans    []pgSpan            // what the forward ones of them learned, for the cache
	backs    map[string][]pgPair // and the backward ones
	expected map[string]struct{} // keys whose absence the commit checks (ExpectNew)

	seq      uint64
	seqRead  bool
	seqDirty bool
}

func (b *pgBucket) Get(key []byte) []byte {
	if w, ok := b.written[string(key)]; ok {
		if w.deleted {
			return nil
		}
		return w.value
	}
	if v, ok := b.read[string(key)]; ok {
		return v
	}
	if b.t.cacheOnly {
		v, ok := b.t.s.cache.get(b.name, key, b.t.pin)
		if !ok {
			b.t.missed = true
			return nil
		}
		b.read[string(key)] = v
		return v
	}
	if b.t.useCache {
		if v, ok := b.t.s.cache.get(b.name, key, 0); ok {
			b.t.usedCache = true
			b.read[string(key)] = v
			return v
		}
	}
	var v []byte
	b.t.s.serverReads.Add(1)
	batch := b.t.batch()
	batch.Queue("SELECT value FROM mailbolt_kv WHERE bucket = $1 AND key = $2", b.name, key).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			v, err = nil, nil
		}
		return err
	})
	if err := b.t.conn.SendBatch(b.t.ctx, batch).Close(); err != nil {
		b.t.fail(err)
		return nil
	}
	b.read[string(key)] = v
	return v
}

func (b *pgBucket) write(key []byte, w pgValue) error {
	if !b.t.writable {
		return errors.New("storage: write in a read-only transaction")
	}
	if len(key) == 0 {
		return errors.New("storage: empty key")
	}
	b.written[string(key)] = w
	b.t.wrote = true
	if b.dirty == nil {
		b.dirty = map[string]struct{}{}
	}
	b.dirty[string(key)] = struct{}{}
	b.version++
	return nil
}

// ExpectNew reports ErrExists when key holds a record. When neither this
// transaction nor the node's cache knows the key, it is checked with the
// transaction's next flush instead of read now, saving a round trip inside
// the write lock; the transaction then fails as a whole when it is taken,
// and is run again checking each key at once.
func (b *pgBucket) ExpectNew(key []byte) error {
	if w, ok := b.written[string(key)]; ok {
		if w.deleted {
			return nil
		}
		return ErrExists
	}
	_, known := b.read[string(key)]
	if !known && b.t.useCache {
		_, known = b.t.s.cache.get(b.name, key, 0)
	}
	if known || b.t.eagerNew || !b.t.writable { // a read-only transaction sends no commit to check it with
		if b.Get(key) != nil {
			return ErrExists
		}
		return nil
	}
	b.t.newB, b.t.newK = append(b.t.newB, b.name), append(b.t.newK, bytes.Clone(key))
	if b.expected == nil {
		b.expected = map[string]struct{}{}
	}
	b.expected[string(key)] = struct{}{} // absent when the commit succeeds
	b.t.wrote = true                     // the check goes with the commit
	return nil
}

func (b *pgBucket) Put(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	_, expected := b.expected[string(key)]
	return b.write(key, pgValue{value: value, fresh: expected && b.freshable(key)})
}

// PutNew stores key with a plain INSERT, cheaper on the server than the
// upsert Put sends, unless this transaction knows better. When the key
// did hold a value, the commit fails and the transaction is run again
// with upserts only (pgStore.run).
func (b *pgBucket) PutNew(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return b.write(key, pgValue{value: value, fresh: b.freshable(key)})
}

// freshable reports whether a plain INSERT of key may be tried: not after
// this transaction wrote the key (the row may exist, or its DELETE would
// be lost), nor once it read a value there.
func (b *pgBucket) freshable(key []byte) bool {
	if b.t.upsertOnly {
		return false
	}
	if _, ok := b.written[string(key)]; ok {
		return false
	}
	v, read := b.read[string(key)]
	return !read || v == nil
}

func (b *pgBucket) Delete(key []byte) error { return b.write(key, pgValue{deleted: true}) }

func (b *pgBucket) Cursor() kvCursor { return &pgCursor{b: b} }

func (b *pgBucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

func (b *pgBucket) NextSequence() (uint64, error) {
	if !b.t.writable {
		return 0, errors.New("storage: sequence in a read-only transaction")
	}
	if !b.seqRead {
		seq, ok := uint64(0), false
		if b.t.useCache {
			if seq, ok = b.t.s.cache.seq(b.name); ok {
				b.t.usedCache = true
			}
		}
		if !ok {
			var n int64
			batch := b.t.batch()
			batch.Queue("SELECT seq FROM mailbolt_buckets WHERE name = $1", b.name).QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
			if err := b.t.conn.SendBatch(b.t.ctx, batch).Close(); err != nil {
				return 0, err
			}
			seq = uint64(n)
		}
		b.seq, b.seqRead = seq, true
	}
	b.seq++
	b.seqDirty = true
	b.t.wrote = true
	return b.seq, nil
}

func (b *pgBucket) KeyN() int {
	if b.t.cacheOnly {
		b.t.missed = true // counts are not cached
		return 0
	}
	var n int
	batch := b.t.batch()
	b.t.queueFlush(batch)
	batch.Queue("SELECT count(*) FROM mailbolt_kv WHERE bucket = $1", b.name).QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	if err := b.t.conn.SendBatch(b.t.ctx, batch).Close(); err != nil {
		b.t.fail(err)
		return 0
	}
	return n
}

// pgCursor reads its bucket a page at a time, each page larger than the
// last (up to pgPageMax), and reads again from where it stands when the
// transaction has written to the bucket since.
type pgCursor struct {
	b       *pgBucket
	page    []pgPair
	i       int
	forward bool
	version int
	size    int
	end     bool   // the page runs to the bucket's end (or start, backward)
	cur     []byte // the key the cursor is on; nil past either end
}

const (
	pgPageMin = 16
	pgPageMax = 2048
)

func (c *pgCursor) load(forward bool, from []byte, inclusive bool) ([]byte, []byte) {
	if forward != c.forward || c.size == 0 {
		c.size = pgPageMin
	} else if c.size < pgPageMax {
		c.size *= 4
	}
	c.forward, c.version, c.i = forward, c.b.version, 0
	var sql string
	switch {
	case forward && from == nil:
		sql = "SELECT key, value FROM mailbolt_kv WHERE bucket = $1 AND $2::bytea IS NULL ORDER BY key LIMIT $3"
	case forward && inclusive:
		sql = "SELECT key, value FROM mailbolt_kv WHERE bucket = $1 AND key >= $2 ORDER BY key LIMIT $3"
	case forward:
		sql = "SELECT key, value FROM mailbolt_kv WHERE bucket = $1 AND key > $2 ORDER BY key LIMIT $3"
	case from == nil:
		sql = "SELECT key, value FROM mailbolt_kv WHERE bucket = $1 AND $2::bytea IS NULL ORDER BY key DESC LIMIT $3"
	default:
		sql = "SELECT key, value FROM mailbolt_kv WHERE bucket = $1 AND key < $2 ORDER BY key DESC LIMIT $3"
	}
	// A range of a bucket this transaction has not written to may come
	// from the node's cache, like a single record: a forward read from a
	// span (pgspans.go) of any earlier forward read that covers where it
	// starts, a backward one from the same read made before.
	t, rk := c.b.t, pgRangeKey(sql, from, c.size)
	if c.b.version == 0 {
		if page, ok := c.b.ranges[rk]; ok {
			c.page, c.end = page, len(page) < c.size
			return c.land()
		}
	}
	if (t.cacheOnly || t.useCache) && c.b.version == 0 {
		at := int64(0)
		if t.cacheOnly {
			at = t.pin
		}
		var page []pgPair
		end, ok := false, false
		if forward {
			page, end, ok = t.s.cache.spanGet(c.b.name, from, inclusive, at)
		} else if page, ok = t.s.cache.rangeGet(c.b.name, rk, at); ok {
			end = len(page) < c.size
		}
		if ok {
			t.usedCache = t.usedCache || t.useCache
			c.page, c.end = page, end
			return c.land()
		}
	}
	if t.cacheOnly {
		t.missed = true
		c.page, c.end = nil, true
		return c.land()
	}
	page, err := t.rows(sql, c.b.name, from, c.size)
	if err != nil {
		t.fail(err)
		page = nil
	}
	c.page, c.end = page, len(page) < c.size
	if c.b.version == 0 && len(page) <= pgCacheMaxRange {
		if c.b.ranges == nil {
			c.b.ranges = map[string][]pgPair{}
		}
		c.b.ranges[rk] = page
		if forward {
			c.b.spans = append(c.b.spans, pgSpan{from: from, incl: inclusive, pairs: page, end: c.end})
		} else {
			if c.b.backs == nil {
				c.b.backs = map[string][]pgPair{}
			}
			c.b.backs[rk] = page
		}
	}
	return c.land()
}

func (c *pgCursor) land() ([]byte, []byte) {
	if c.i >= len(c.page) {
		c.cur = nil
		return nil, nil
	}
	p := c.page[c.i]
	c.cur = p.k
	return p.k, p.v
}

// step moves one key in the direction asked.
func (c *pgCursor) step(forward bool) ([]byte, []byte) {
	if c.cur == nil {
		return nil, nil
	}
	if forward == c.forward && c.version == c.b.version {
		c.i++
		if c.i < len(c.page) {
			return c.land()
		}
		if c.end {
			c.cur = nil
			return nil, nil
		}
		last := c.page[len(c.page)-1].k
		return c.load(forward, last, false)
	}
	return c.load(forward, c.cur, false)
}

func (c *pgCursor) First() ([]byte, []byte) { c.size = 0; return c.load(true, nil, true) }
func (c *pgCursor) Last() ([]byte, []byte)  { c.size = 0; return c.load(false, nil, true) }
func (c *pgCursor) Next() ([]byte, []byte)  { return c.step(true) }
func (c *pgCursor) Prev() ([]byte, []byte)  { return c.step(false) }

func (c *pgCursor) Seek(key []byte) ([]byte, []byte) {
	c.size = 0
	return c.load(true, append([]byte{}, key...), true)
}

func (c *pgCursor) Delete() error {
	if c.cur == nil {
		return errors.New("storage: cursor is past the end")
	}
	return c.b.Delete(bytes.Clone(c.cur))
}
