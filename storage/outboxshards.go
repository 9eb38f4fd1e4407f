package storage

import (
	"math/bits"
	"slices"
	"time"
)

// The webhook outbox is split into OutboxShards shards, an entry's shard
// being its sequence number modulo OutboxShards, and shared out among the
// dispatchers that run (one per serve node): each leases a set of shards
// and sends only their entries straight from the outbox. The leases, and
// each dispatcher's heartbeat, are one meta record (keyOutboxShards),
// changed only in write transactions, which run one at a time across every
// node: the read, the check and the write of LeaseOutboxShards are atomic.

// OutboxShards is how many shards the outbox is split into. Every node
// must use the same number.
const OutboxShards = 16

// OutboxShardSet is a set of outbox shards, shard i as bit i.
type OutboxShardSet uint32

// AllOutboxShards is every shard: what a dispatcher alone holds.
const AllOutboxShards OutboxShardSet = 1<<OutboxShards - 1

// OutboxShard is the shard of the outbox entry with sequence number seq.
func OutboxShard(seq uint64) int { return int(seq % OutboxShards) }

// Has reports whether shard is in the set.
func (s OutboxShardSet) Has(shard int) bool { return s&(1<<shard) != 0 }

// Len is how many shards the set holds.
func (s OutboxShardSet) Len() int { return bits.OnesCount32(uint32(s)) }

// keyOutboxShards is the meta key of the outbox's shard leases and
// dispatcher heartbeats (outboxLeases, JSON). keyOutboxLease is the one
// lease on the whole outbox that versions before the shards kept.
var (
	keyOutboxShards = []byte("outbox_shards")
	keyOutboxLease  = []byte("outbox_lease")
)

// outboxLeases is the keyOutboxShards record. Times are unix nanoseconds.
type outboxLeases struct {
	// Nodes are the live dispatchers' heartbeats: holder -> end. A
	// dispatcher whose heartbeat has ended is dead; the next renewal by
	// any other removes it.
	Nodes map[string]int64 `json:"nodes"`
	// Shards are the leases, indexed by shard; a zero Holder is free.
	Shards []shardLease `json:"shards"`
}

type shardLease struct {
	Holder string `json:"holder,omitempty"`
	Until  int64  `json:"until,omitempty"`
}

// OutboxLease is what LeaseOutboxShards leaves a dispatcher with.
type OutboxLease struct {
	// Held are the shards leased to it until the end it asked for.
	Held OutboxShardSet
	// Give are the shards of Held beyond its fair share that it was asked
	// to give back but kept because it still holds entries of them: it
	// should take no more of their entries, and renew again once the ones
	// it holds are saved, which gives them back.
	Give OutboxShardSet
	// Nodes is how many dispatchers are live, itself included; Fair is its
	// fair share, ceil(OutboxShards / Nodes).
	Nodes, Fair int
}

func (tx *Tx) outboxLeases() outboxLeases {
	var l outboxLeases
	if err := getJSON(tx.bucket(bucketMeta), keyOutboxShards, &l); err != nil || len(l.Shards) != OutboxShards {
		// None yet, or damaged, or written for another shard count: start
		// over, every shard free (what is leased ends within a lease span).
		l = outboxLeases{Nodes: l.Nodes}
	}
	if l.Nodes == nil {
		l.Nodes = map[string]int64{}
	}
	if len(l.Shards) != OutboxShards {
		l.Shards = make([]shardLease, OutboxShards)
	}
	return l
}

// LeaseOutboxShards renews holder's heartbeat and its shard leases until
// until, and moves it towards its fair share, ceil(OutboxShards / live
// dispatchers): holding more, it gives back its highest-numbered shards,
// keeping (in Give) those of them that are busy (entries of it taken and
// not saved yet); holding fewer, it takes free ones, lowest-numbered
// first. A shard is free when no lease names it or its lease has ended
// (its holder stopped, or died and its heartbeat ended with it), never
// while another holder's lease runs. Heartbeats that have ended are
// removed.
func (tx *Tx) LeaseOutboxShards(holder string, now, until time.Time, busy OutboxShardSet) (OutboxLease, error) {
	l := tx.outboxLeases()
	at, end := now.UnixNano(), until.UnixNano()
	for h, e := range l.Nodes {
		if h != holder && e <= at {
			delete(l.Nodes, h)
		}
	}
	l.Nodes[holder] = end
	out := OutboxLease{Nodes: len(l.Nodes)}
	out.Fair = (OutboxShards + out.Nodes - 1) / out.Nodes
	for i, s := range l.Shards {
		if s.Holder == holder {
			out.Held |= 1 << i
		}
	}
	extra := out.Held.Len() - out.Fair
	for i := OutboxShards - 1; i >= 0 && extra > 0; i-- {
		if !out.Held.Has(i) {
			continue
		}
		extra--
		if busy.Has(i) {
			out.Give |= 1 << i
			continue
		}
		out.Held &^= 1 << i
		l.Shards[i] = shardLease{}
	}
	for i := 0; i < OutboxShards && out.Held.Len() < out.Fair; i++ {
		if s := l.Shards[i]; s.Holder == "" || s.Until <= at {
			out.Held |= 1 << i
		}
	}
	for i := range l.Shards {
		if out.Held.Has(i) {
			l.Shards[i] = shardLease{Holder: holder, Until: end}
		} else if l.Shards[i].Until <= at {
			l.Shards[i] = shardLease{}
		}
	}
	return out, putJSON(tx.bucket(bucketMeta), keyOutboxShards, l)
}

// ReleaseOutboxShards ends holder's heartbeat and the shard leases it
// still holds: the others may take them at once.
func (tx *Tx) ReleaseOutboxShards(holder string) error {
	l := tx.outboxLeases()
	_, found := l.Nodes[holder]
	delete(l.Nodes, holder)
	for i, s := range l.Shards {
		if s.Holder == holder {
			l.Shards[i], found = shardLease{}, true
		}
	}
	if !found {
		return nil
	}
	return putJSON(tx.bucket(bucketMeta), keyOutboxShards, l)
}

// OutboxShardHolder is one shard's lease as OutboxShardLeases reports it.
type OutboxShardHolder struct {
	Holder string // "" when free
	Until  time.Time
}

// OutboxShardLeases reads the shard leases, by shard, and the heartbeats,
// holder -> end, as they are stored (ended ones included), for
// observation and tests.
func (tx *Tx) OutboxShardLeases() ([]OutboxShardHolder, map[string]time.Time) {
	l := tx.outboxLeases()
	shards := make([]OutboxShardHolder, len(l.Shards))
	for i, s := range l.Shards {
		if s.Holder != "" {
			shards[i] = OutboxShardHolder{Holder: s.Holder, Until: time.Unix(0, s.Until).UTC()}
		}
	}
	nodes := make(map[string]time.Time, len(l.Nodes))
	for h, e := range l.Nodes {
		nodes[h] = time.Unix(0, e).UTC()
	}
	return shards, nodes
}

// voidOutboxLeases drops the outbox's shard leases and heartbeats at open
// on the embedded engine: bbolt's file lock lets one process at a time use
// the file, so leases found now were left by a process that has ended,
// and its sends were never saved. A stop that released its leases leaves
// none, and costs no commit here. (A shared database keeps them: they are
// the other nodes'.)
func voidOutboxLeases(db kvStore) error {
	var found bool
	err := db.View(func(btx kvTx) error {
		if b := btx.Bucket(bucketMeta); b != nil {
			found = b.Get(keyOutboxLease) != nil || leasesHeld(b.Get(keyOutboxShards))
		}
		return nil
	})
	if err != nil || !found {
		return err
	}
	return db.Update(func(btx kvTx) error {
		b := btx.Bucket(bucketMeta)
		if err := b.Delete(keyOutboxLease); err != nil {
			return err
		}
		return b.Delete(keyOutboxShards)
	})
}

// leasesHeld reports whether an outbox_shards record names any holder.
func leasesHeld(v []byte) bool {
	if v == nil {
		return false
	}
	var l outboxLeases
	if decodeJSON(keyOutboxShards, v, &l) != nil {
		return true // damaged: drop it
	}
	return len(l.Nodes) > 0 || slices.ContainsFunc(l.Shards, func(s shardLease) bool { return s.Holder != "" })
}

// OutboxIn is OutboxAfter for the entries of the given shards only: the
// others' keys are walked over without reading their events. It looks at
// no more than scan keys, and returns the last sequence number it looked
// at (through; after when none) and whether entries may lie beyond it.
func (tx *Tx) OutboxIn(shards OutboxShardSet, after uint64, max, scan int) (out []OutboxEntry, through uint64, more bool, err error) {
	through = after
	c := tx.bucket(bucketEventOutbox).Cursor()
	events := tx.bucket(bucketEvents)
	k, v := c.Seek(putU64(after + 1))
	for ; k != nil; k, v = c.Next() {
		if len(out) == max || scan == 0 {
			return out, through, true, nil
		}
		scan--
		seq := getU64(k)
		through = seq
		if shards != AllOutboxShards && !shards.Has(OutboxShard(seq)) {
			continue
		}
		out = append(out, outboxEntry(events, seq, v))
	}
	return out, through, false, nil
}

// InOutbox reports whether the entry seq is still in the outbox: not
// removed by another dispatcher that sent it too.
func (tx *Tx) InOutbox(seq uint64) bool { return tx.bucket(bucketEventOutbox).Get(putU64(seq)) != nil }
