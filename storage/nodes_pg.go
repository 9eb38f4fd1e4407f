package storage

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Which nodes use a shared database. A node that may write holds the
// node lock (pgNodeLock), a session-level advisory lock, shared, on a
// connection of its own from before it reads the key check until Close:
// PostgreSQL lets go of it when the connection ends, however the process
// ends. A rotation of the secret key (rotate.go) takes it exclusively, in
// its one write transaction, without waiting: it is refused while any
// node holds it, and a node that starts meanwhile waits for the commit,
// then reads the new key check and refuses the old key. The webhook
// dispatchers' heartbeats (outboxshards.go) are counted too: they also
// show a node whose lock connection was lost, until it takes the lock
// again, and a node of a version from before the lock.
//
// The lock's connection can be lost while the node runs (PostgreSQL
// restarted, the backend terminated, the network cut). The node checks it
// every Options.NodeLockCheck and, when it is gone, takes the lock again
// on a new connection, waiting while a rotation holds it (keepNodeLock).
// A rotation may still have committed in between; the node's key is then
// stale, and what guards the secrets is not the lock but the check made
// before every seal, in the write transaction (Tx.keyCurrent): a node
// never seals a secret under a key the database's key check does not
// name.

// pgNodeLock is the advisory lock every node holds shared.
const pgNodeLock = 0x6d622e6e6f646573 // "mb.nodes"

// nodeLockTimeout bounds the check of the node lock's connection and the
// making of a new one: a server that does not answer within it is taken
// for lost.
const nodeLockTimeout = 30 * time.Second

// defaultNodeLockCheck is how often the node lock's connection is checked
// when Options.NodeLockCheck is 0.
const defaultNodeLockCheck = 10 * time.Second

// holdNodeLock takes the node lock, shared, on a connection of its own
// that stays open until Close. It waits while a rotation holds it. The
// connection's application_name names the node (host and process) for
// the rotation's refusal and for pg_stat_activity.
func (s *pgStore) holdNodeLock(ctx context.Context, cfg *pgx.ConnConfig) error {
	cfg = cfg.Copy()
	host, _ := os.Hostname()
	cfg.RuntimeParams["application_name"] = "mailbolt node " + host + " pid " + strconv.Itoa(os.Getpid())
	conn, err := takeNodeLock(ctx, ctx, cfg)
	if err != nil {
		return err
	}
	s.nodeCfg, s.nodeConn = cfg, conn
	return nil
}

// takeNodeLock connects with cfg within connectCtx and takes the node
// lock, shared, on that connection, waiting while a rotation holds it,
// within ctx.
func takeNodeLock(ctx, connectCtx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(connectCtx, cfg)
	if err != nil {
		return nil, fmt.Errorf("take the node lock: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", int64(pgNodeLock)); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("take the node lock (a `mailbolt secrets rotate` may be running): %w", err)
	}
	return conn, nil
}

// keepNodeLock checks the node lock's connection every interval until ctx
// ends. When it is gone it takes the lock again on a new connection
// (waiting while a rotation holds it, or trying again at the next check
// while the server cannot be reached) and calls retaken, which finds out
// whether a rotation committed while the lock was not held. It owns
// s.nodeConn until ctx ends.
func (s *pgStore) keepNodeLock(ctx context.Context, every time.Duration, lost, retaken func(), log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		if s.nodeConn != nil {
			pctx, cancel := context.WithTimeout(ctx, nodeLockTimeout)
			err := s.nodeConn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return
			}
			log.Warn("database: this node's lock on the database was lost with its connection; taking it again "+
				"(until it does, only its webhook dispatcher's heartbeat keeps `mailbolt secrets rotate` out)", "err", err)
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s.nodeConn.Close(cctx)
			cancel()
			s.nodeConn = nil
		}
		if lost != nil {
			lost()
		}
		cctx, cancel := context.WithTimeout(ctx, nodeLockTimeout)
		conn, err := takeNodeLock(ctx, cctx, s.nodeCfg)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("database: could not take this node's lock again; trying at the next check", "err", err)
			continue
		}
		s.nodeConn = conn
		retaken()
	}
}

// stopKeepingNodeLock ends keepNodeLock and waits for it.
func (s *pgStore) stopKeepingNodeLock() {
	if s.stopKeep != nil {
		s.stopKeep()
		<-s.keeping
		s.stopKeep = nil
	}
}

// releaseNodeLock lets go of the node lock and closes its connection.
// The lock is let go of first, and waited for: the server ends a closed
// connection's session (and its locks) a moment after the close, and a
// rotation run right after every node has stopped would find it held.
func (s *pgStore) releaseNodeLock() {
	if s.nodeConn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.nodeConn.Exec(ctx, "SELECT pg_advisory_unlock_shared($1)", int64(pgNodeLock))
	s.nodeConn.Close(ctx)
	s.nodeConn = nil
}

// lockOutNodes takes the node lock exclusively until tx, a write
// transaction on the shared engine, ends. It does not wait: while a node
// holds the lock, or a webhook dispatcher's heartbeat has not ended at
// now, it fails with ErrNodesLive naming them.
func lockOutNodes(tx kvTx, now time.Time) error {
	live, err := tx.(*pgTx).nodeLockHolders()
	if err != nil {
		return err
	}
	// A node of this version holds the lock and beats too: the heartbeats
	// are named when there are more of them than holders of the lock.
	if beats := liveDispatchers(tx, now); len(beats) > len(live) {
		live = append(live, "webhook dispatchers whose heartbeat has not ended (a node of an earlier version, "+
			"or one that stopped without ending it, leaves one until then): "+strings.Join(beats, ", "))
	}
	if len(live) > 0 {
		return fmt.Errorf("%w: %s", ErrNodesLive, strings.Join(live, "; "))
	}
	return nil
}

// nodeLockHolders takes the node lock exclusively until t ends, without
// waiting, and returns nil; or else names the connections that hold it
// (other than t's own).
func (t *pgTx) nodeLockHolders() ([]string, error) {
	var free bool
	b := t.batch()
	b.Queue("SELECT pg_try_advisory_xact_lock($1)", int64(pgNodeLock)).QueryRow(func(r pgx.Row) error { return r.Scan(&free) })
	if err := t.conn.SendBatch(t.ctx, b).Close(); err != nil {
		t.fail(err)
		return nil, err
	}
	if free {
		return nil, nil
	}
	rows, err := t.conn.Query(t.ctx, `SELECT coalesce(a.application_name, ''), coalesce(host(a.client_addr), ''), a.backend_start
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND l.classid::bigint = $1 AND l.objid::bigint = $2 AND l.objsubid = 1 AND l.granted AND l.pid <> pg_backend_pid()
		ORDER BY a.backend_start, l.pid`, int64(pgNodeLock>>32), int64(pgNodeLock&0xffffffff))
	if err != nil {
		t.fail(err)
		return nil, err
	}
	names, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var app, from string
		var since *time.Time
		if err := r.Scan(&app, &from, &since); err != nil {
			return "", err
		}
		return describeConn(app, from, since), nil
	})
	if err != nil {
		t.fail(err)
		return nil, err
	}
	if len(names) == 0 {
		// It was let go of between the two statements: that node stopped.
		names = []string{"a node that has just stopped (run the command again)"}
	}
	return names, nil
}

// describeConn names a connection as pg_stat_activity shows it.
func describeConn(app, from string, since *time.Time) string {
	if app == "" {
		app = "a connection without an application name"
	}
	var about []string
	if from != "" {
		about = append(about, "from "+from)
	}
	if since != nil {
		about = append(about, "connected at "+since.UTC().Format(time.RFC3339))
	}
	if len(about) == 0 {
		return app
	}
	return app + " (" + strings.Join(about, ", ") + ")"
}

// liveDispatchers names the webhook dispatchers whose heartbeat has not
// ended at now, with its end.
func liveDispatchers(tx kvTx, now time.Time) []string {
	_, nodes := (&Tx{btx: tx}).OutboxShardLeases()
	var out []string
	for h, end := range nodes {
		if end.After(now) {
			out = append(out, h+" (until "+end.Format(time.RFC3339)+")")
		}
	}
	slices.Sort(out)
	return out
}
