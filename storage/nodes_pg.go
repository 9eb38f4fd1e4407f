package storage

import (
	"context"
	"fmt"
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
// show a node whose lock connection was lost, and a node of a version
// from before the lock.

// pgNodeLock is the advisory lock every node holds shared.
const pgNodeLock = 0x6d622e6e6f646573 // "mb.nodes"

// holdNodeLock takes the node lock, shared, on a connection of its own
// that stays open until Close. It waits while a rotation holds it. The
// connection's application_name names the node (host and process) for
// the rotation's refusal and for pg_stat_activity.
func (s *pgStore) holdNodeLock(ctx context.Context, cfg *pgx.ConnConfig) error {
	cfg = cfg.Copy()
	host, _ := os.Hostname()
	cfg.RuntimeParams["application_name"] = "mailbolt node " + host + " pid " + strconv.Itoa(os.Getpid())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("take the node lock: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", int64(pgNodeLock)); err != nil {
		conn.Close(context.Background())
		return fmt.Errorf("take the node lock (a `mailbolt secrets rotate` may be running): %w", err)
	}
	s.nodeConn = conn
	return nil
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
