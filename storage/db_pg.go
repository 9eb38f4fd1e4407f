package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// openPostgres opens the shared engine at opts.Database. Several nodes may
// open the same database at once: each is a normal server, and storage
// keeps them from stepping on each other (kv_pg.go). The secret key file
// is never created here: every node is given the same one, and it is
// checked against the database's key-check value. A writable open holds
// the node lock until Close (nodes_pg.go), so that the key cannot be
// rotated under it.
func openPostgres(dataDir string, opts Options) (*DB, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	cfg, err := PostgresConfig(opts.Database, opts.DatabaseInsecure)
	if err != nil {
		return nil, err
	}
	if !opts.ReadOnly && dataDir != "" {
		// The node's own files still live there: its management socket,
		// the ACME cache, by default the secret key file.
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
	}
	cfg.MaxConns = 16
	if opts.DatabaseConns > 0 {
		cfg.MaxConns = int32(opts.DatabaseConns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.LockTimeout+30e9)
	defer cancel()
	s, err := openPGStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", RedactURL(opts.Database), err)
	}
	if !opts.ReadOnly && !opts.rotating {
		// Before the key check is read: a rotation either sees this node
		// and is refused, or has committed and the check is its new one.
		if err := s.holdNodeLock(ctx, cfg.ConnConfig); err != nil {
			s.Close()
			return nil, fmt.Errorf("open database %s: %w", RedactURL(opts.Database), err)
		}
	}
	if opts.SecretKeyFile == "" {
		opts.SecretKeyFile = filepath.Join(dataDir, SecretKeyFileName)
	}
	opts.CreateSecretKey = false
	db := &DB{kv: s, pg: s, path: RedactURL(opts.Database), opts: opts, ops: make(chan *op, 4096),
		finished: make(chan struct{}), decoded: newDecodedCaches()}
	if opts.ReadOnly || opts.MustExist {
		if v, err := db.SchemaVersion(); err != nil || v == 0 {
			s.Close()
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s holds no Mailbolt data yet", ErrNoDatabase, db.path)
		}
	}
	if err := db.loadSecretKey(); err != nil {
		s.Close()
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if s.nodeConn != nil {
		db.keepNodeLock(log)
	}
	if keyChecked != nil && !opts.ReadOnly && !opts.rotating {
		keyChecked()
	}
	if opts.ReadOnly {
		close(db.finished)
		return db, nil
	}
	s.migrating.Store(true)
	err = db.upgrade()
	s.migrating.Store(false)
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := db.startCommitting(); err != nil {
		s.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	db.stopListen, db.listening = stop, make(chan struct{})
	go func() {
		defer close(db.listening)
		s.listen(lctx, db.runAfterCommit, func(err error) {
			log.Warn("database: waiting for other nodes' commits; reconnecting", "err", err)
		})
	}()
	return db, nil
}

// keepNodeLock starts the watch over the node lock (pgStore.keepNodeLock),
// which runs until Close. Each time it has taken the lock again it reads
// the key check: a key that no longer opens it was rotated meanwhile, and
// that is logged as an error, since the node can then neither open the
// secrets nor seal new ones (Tx.keyCurrent refuses every seal) until it is
// restarted with the new key file.
func (db *DB) keepNodeLock(log *slog.Logger) {
	every := db.opts.NodeLockCheck
	if every <= 0 {
		every = defaultNodeLockCheck
	}
	s := db.pg
	ctx, stop := context.WithCancel(context.Background())
	s.stopKeep, s.keeping = stop, make(chan struct{})
	go func() {
		defer close(s.keeping)
		s.keepNodeLock(ctx, every, db.opts.nodeLockLost, func() {
			err := db.kv.View(func(tx kvTx) error { return (&Tx{btx: tx, seal: db.seal}).keyCurrent() })
			switch {
			case errors.Is(err, ErrSecretKey):
				log.Error("database: took this node's lock again, but the secret key was rotated while it was lost: "+
					"this node refuses to seal new secrets (new webhooks, DKIM keys) under its old key and cannot open "+
					"those sealed under the new one; give it the new key file and restart it", "err", err)
			case err != nil:
				log.Warn("database: took this node's lock again, but could not read the key check "+
					"(every seal checks it again)", "err", err)
			default:
				log.Info("database: took this node's lock again")
			}
			if db.opts.nodeLockRetaken != nil {
				db.opts.nodeLockRetaken(err)
			}
		}, log)
	}()
}

// keyChecked, when set, is called by a node's open of a shared database
// once its key has passed the key check: tests rotate there.
var keyChecked func()

// Shared reports whether other nodes may use the database at the same
// time (the PostgreSQL engine): work found under a lease at start may be
// theirs, not an orphan.
func (db *DB) Shared() bool { return db.pg != nil }

// PostgresConfig parses a postgres:// URL and applies the transport rule:
// a host that is not loopback (or a Unix socket) needs
// sslmode=verify-full, unless insecure is set.
func PostgresConfig(rawURL string, insecure bool) (*pgxpool.Config, error) {
	if !IsPostgresURL(rawURL) {
		return nil, fmt.Errorf("--database: %q is not a postgres:// URL", RedactURL(rawURL))
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--database: %w", errors.New("not a valid URL"))
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--database %s: %w", RedactURL(rawURL), err)
	}
	if !insecure && u.Query().Get("sslmode") != "verify-full" {
		hosts := []string{cfg.ConnConfig.Host}
		for _, f := range cfg.ConnConfig.Fallbacks {
			hosts = append(hosts, f.Host)
		}
		for _, h := range hosts {
			if !loopbackHost(h) {
				return nil, fmt.Errorf("--database: the host %s is not loopback, so the connection must be verified: add sslmode=verify-full to the URL (or give --database-insecure)", h)
			}
		}
	}
	return cfg, nil
}

// IsPostgresURL reports whether s names the PostgreSQL engine.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

func loopbackHost(h string) bool {
	if strings.HasPrefix(h, "/") || h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// RedactURL is u without its passwords, for messages and logs: the one in
// its user part and the password and sslpassword parameters libpq also
// takes in the query.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	q, hidden := u.Query(), false
	for k := range q {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			q[k], hidden = []string{"xxxxx"}, true
		}
	}
	if hidden {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Warm runs fn in a read-only transaction for what it reads: on the
// PostgreSQL engine, reads of the state the node's write cache holds are
// added to it, so a use case that calls Warm with the reads its next
// Update will make takes those round trips out of the write lock, which
// every node's writes wait for. fn must only read. On the embedded engine,
// where reads inside the write transaction cost no round trip, it does
// nothing.
func (db *DB) Warm(fn func(tx *Tx)) {
	if db.pg == nil {
		return
	}
	db.pg.warm(func(kt kvTx) error {
		fn(&Tx{btx: kt, seal: db.seal, decoded: db.decoded})
		return nil
	})
}
