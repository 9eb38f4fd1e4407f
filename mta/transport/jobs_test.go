package transport

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/storage"
	"mailbolt/storage/pgtest"
	"mailbolt/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Two nodes run the same periodic job over one PostgreSQL database: the
// one that takes the lease runs every round and the other none; once the
// holder stops (and releases the lease) the other takes the job over.
func TestRunLeasedOneNodeAtATime(t *testing.T) {
	frozen := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return frozen } // no lease ends by itself
	type node struct {
		db     *storage.DB
		rounds atomic.Int32
		stop   context.CancelFunc
		done   chan struct{}
	}
	var nodes [2]*node
	for i, db := range storagetest.Nodes(t, len(nodes)) {
		nodes[i] = &node{db: db, done: make(chan struct{})}
	}
	for _, n := range nodes {
		ctx, stop := context.WithCancel(context.Background())
		n.stop = stop
		go func() {
			defer close(n.done)
			runLeased(ctx, n.db, JobTLSReports, time.Millisecond, now, slog.New(slog.DiscardHandler), func(context.Context) { n.rounds.Add(1) })
		}()
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.stop()
			<-n.done
		}
	})
	for nodes[0].rounds.Load()+nodes[1].rounds.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	holder, other := nodes[0], nodes[1]
	if holder.rounds.Load() == 0 {
		holder, other = other, holder
	}
	if other.rounds.Load() != 0 {
		t.Fatalf("both nodes ran rounds: %d and %d", holder.rounds.Load(), other.rounds.Load())
	}
	holder.stop()
	<-holder.done
	for other.rounds.Load() == 0 { // the released job is taken over
		time.Sleep(time.Millisecond)
	}
}
