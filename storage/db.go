package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileName is the name of the database file inside the data directory.
const FileName = "mailbolt.db"

// Options configure Open.
type Options struct {
	// ReadOnly opens the file with a shared lock and runs no migrations.
	ReadOnly bool
	// MustExist fails with ErrNoDatabase instead of creating a new file.
	MustExist bool
	// LockTimeout bounds the wait for the file lock.
	LockTimeout time.Duration
	// MaxBatch caps how many writes share one commit.
	MaxBatch int
	// WriteFault, when set, is called before every write unit of work; a
	// non-nil result fails that write as a storage fault would. Tests use it
	// to prove how the layers above report storage failures.
	WriteFault func() error
	// ReadFault, when set, is called before every read-only unit of work;
	// a non-nil result fails it as a storage fault would.
	ReadFault func() error
	// SecretKeyFile holds the key that seals the secrets stored in the
	// database (seal.go); empty means secret.key beside the database file.
	SecretKeyFile string
	// CreateSecretKey lets Open create a missing key file while the
	// database holds no sealed secret yet: the embedded engine's first
	// start, or the start that seals an older file's secrets. An engine
	// shared by several nodes leaves it unset, so that every node is given
	// the one key file and none makes its own.
	CreateSecretKey bool
	// Database, when set, is a postgres:// URL: the shared engine
	// (db_pg.go) instead of the file in the data directory.
	Database string
	// DatabaseInsecure allows a non-loopback database host without
	// sslmode=verify-full.
	DatabaseInsecure bool
	// DatabaseConns caps the connections to the database (0: 16).
	DatabaseConns int
	// Logger hears what goes wrong in the background (the shared engine's
	// wait for other nodes' commits); nil: slog's default.
	Logger *slog.Logger
	// CommitObserver, when set, is told how long each commit of the
	// committer took, fsync included (for the commit duration metric). It
	// runs on the committer goroutine and must be quick.
	CommitObserver func(time.Duration)

	// NodeLockCheck is how often a node of a shared database checks the
	// connection that holds its node lock, and takes the lock again when
	// that connection was lost (nodes_pg.go); 0: every 10 s.
	NodeLockCheck time.Duration

	// nodeLockLost and nodeLockRetaken, when set, are called when a node
	// found its node lock's connection lost, before it takes the lock
	// again, and once it has, with what the key check then said: tests
	// rotate and watch there.
	nodeLockLost    func()
	nodeLockRetaken func(keyErr error)

	// rotating opens a shared database for RotateSecretKey, whose
	// transaction takes the node lock exclusively (nodes_pg.go): this
	// Open does not hold it shared as a node's does.
	rotating bool
}

// DB is an open Mailbolt database.
type DB struct {
	kv       kvStore  // the engine's transactions
	bolt     *bolt.DB // the embedded engine's file; nil for PostgreSQL
	path     string
	opts     Options
	ops      chan *op
	mu       sync.RWMutex // guards closed against concurrent Update sends
	closed   bool
	finished chan struct{}
	commits  atomic.Int64 // transactions committed by the committer

	gauges gauges // queue sizes, kept from each commit (gauges.go)

	hookMu sync.Mutex
	hooks  []*afterCommit // replaced, never changed in place (see AfterCommit)

	seal         *sealer // the secret key (seal.go)
	decoded      *decodedCaches
	keyFile      string // where the key was read from
	keyCreated   bool   // this Open created keyFile
	preMigration string // the copy taken before this Open migrated the schema
	// probeKeyLogged: Probe has logged that this node's key is stale.
	probeKeyLogged atomic.Bool

	node     string // this handle's lease token (Node)
	nodeOnce sync.Once

	pg         *pgStore // the shared engine; nil for the embedded one
	stopListen func()   // ends the wait for other nodes' commits (db_pg.go)
	listening  chan struct{}

	counters memCounters // the embedded engine's shared counters (counters.go)
}

// Open opens (creating if needed) the database in dataDir and brings its
// schema up to date. A database held by another process gives ErrLocked.
func Open(dataDir string, opts Options) (*DB, error) {
	if opts.Database != "" {
		return openPostgres(dataDir, opts)
	}
	if !opts.ReadOnly && !opts.MustExist {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
	}
	return OpenFile(filepath.Join(dataDir, FileName), opts)
}

// DefaultOptions open the database for reading and writing, creating it
// when missing, waiting 1 s at most for the file lock, with up to 1000
// writes in one commit, its secrets sealed under secret.key beside it
// (created when missing on a database without sealed secrets).
func DefaultOptions() Options {
	return Options{LockTimeout: time.Second, MaxBatch: 1000, CreateSecretKey: true}
}

func boltOptions(opts Options) *bolt.Options {
	return &bolt.Options{
		Timeout:         opts.LockTimeout,
		ReadOnly:        opts.ReadOnly,
		FreelistType:    bolt.FreelistMapType,
		NoFreelistSync:  true,
		InitialMmapSize: 256 << 20,
	}
}

// OpenFile opens the database at an explicit path. Only a missing file is
// created: an existing file that is not a whole database (empty, truncated,
// damaged pages) gives ErrDamaged, never a new empty database or a panic.
func OpenFile(path string, opts Options) (_ *DB, err error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	exists, err := statFile(path)
	if err != nil {
		return nil, err
	}
	if !exists && (opts.ReadOnly || opts.MustExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoDatabase, path)
	}
	if exists {
		prefetch(path)
		if err := verify(path, opts.LockTimeout); err != nil {
			return nil, err
		}
	}
	// What verify did not see (the migrations' reads) fails as ErrDamaged too.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverDamaged(path, &err)
	b, err := bolt.Open(path, 0o600, boltOptions(opts))
	if err != nil {
		return nil, openError(path, err)
	}
	db := &DB{bolt: b, kv: boltStore{b}, path: path, opts: opts, ops: make(chan *op, 4096), finished: make(chan struct{}),
		decoded: newDecodedCaches()}
	if err := db.loadSecretKey(); err != nil {
		b.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		if err := db.upgrade(); err != nil {
			db.bolt.Close()
			return nil, err
		}
		if err := voidOutboxLeases(db.kv); err != nil {
			db.bolt.Close()
			return nil, fmt.Errorf("open database: %w", err)
		}
		if err := voidJobLeases(db.kv); err != nil {
			db.bolt.Close()
			return nil, fmt.Errorf("open database: %w", err)
		}
		if err := db.startCommitting(); err != nil {
			b.Close()
			return nil, err
		}
	} else {
		close(db.finished)
	}
	return db, nil
}

func (o Options) check() error {
	if o.LockTimeout <= 0 || o.MaxBatch < 1 {
		return errors.New("storage: the lock timeout and the commit batch must be positive (start from DefaultOptions)")
	}
	return nil
}

// startCommitting counts the queue gauges and starts the committer: the
// last step of a writable Open, on either engine.
func (db *DB) startCommitting() error {
	if err := db.countGauges(); err != nil {
		return fmt.Errorf("open database: count the queues: %w", err)
	}
	go db.commitLoop()
	return nil
}

// Commits is how many write transactions the committer has committed; with
// group commit it grows slower than the number of Update calls.
func (db *DB) Commits() int64 { return db.commits.Load() }

// Path is the file the database lives in.
func (db *DB) Path() string { return db.path }

// Close waits for pending writes to commit, then closes the file.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	if !db.opts.ReadOnly {
		close(db.ops)
	}
	db.mu.Unlock()
	<-db.finished
	if db.stopListen != nil {
		db.stopListen()
		<-db.listening
	}
	return db.kv.Close()
}

// View runs fn in a read-only transaction. Keep fn short and free of I/O:
// a long read transaction holds pages that writers cannot reuse.
func (db *DB) View(fn func(tx *Tx) error) error {
	if db.opts.ReadFault != nil {
		if err := db.opts.ReadFault(); err != nil {
			return err
		}
	}
	return db.kv.View(func(btx kvTx) error {
		return fn(&Tx{btx: btx, seal: db.seal, decoded: db.decoded})
	})
}

// ViewCached is View for a read that runs often and is small, such as
// finding the API key of a request. On the PostgreSQL engine its reads may
// come from the node's cache: the database's generation is read first
// (one read shared by every caller waiting for it), and when the cache
// holds that generation or a later one, fn sees the cache, a state the
// database held after the call began. When it does not, or fn asks for
// something the cache lacks, fn runs again in a transaction on the
// server, and what it reads there is cached. So fn may run twice: it must
// set what it finds, never add to what it found before.
//
// It returns a ReadPoint. A later ViewCached of the same request that
// passes it as since reads no generation again: any state from that
// point on is one the database held after the request began. A ReadPoint
// is only good for the request it was made in. Pass 0 for none; on the
// embedded engine it is always 0.
func (db *DB) ViewCached(since ReadPoint, fn func(tx *Tx) error) (ReadPoint, error) {
	if db.pg == nil {
		return 0, db.View(fn)
	}
	if db.opts.ReadFault != nil {
		if err := db.opts.ReadFault(); err != nil {
			return 0, err
		}
	}
	at, err := db.pg.viewCached(int64(since), func(btx kvTx) error {
		return fn(&Tx{btx: btx, seal: db.seal, decoded: db.decoded})
	})
	return ReadPoint(at), err
}

// ReadPoint is a generation of the PostgreSQL database that a request's
// first cached read found (see ViewCached).
type ReadPoint int64

// SchemaVersion reports the schema version stored in the file.
func (db *DB) SchemaVersion() (int, error) {
	var v int
	err := db.kv.View(func(btx kvTx) error {
		v = schemaVersion(btx)
		return nil
	})
	return v, err
}

// LatestSchemaVersion is the schema version this build writes.
func LatestSchemaVersion() int { return migrations[len(migrations)-1].version }
