package storage

import (
	"slices"
	"strings"
	"time"
)

// Change says what a committed write transaction filed that a worker waits
// for. Storage derives it from the writes themselves (see fileQueued and
// AppendEvent), so a use case cannot forget to announce its work.
type Change uint8

const (
	// OutboxWritten: events were appended to the webhook outbox (their
	// account has webhooks).
	OutboxWritten Change = 1 << iota
	// WebhookQueueWritten: a webhook delivery was filed in delivery_queue
	// as new work or due sooner than before (a replay, a retry, an event
	// queued behind a busy host). A claim, which moves an entry later to
	// its lease end, is not.
	WebhookQueueWritten
	// MessageQueueWritten: a message was filed in message_queue as new
	// work or due sooner than before (an accepted message, a deferral). A
	// claim, which moves an entry later to its lease end, is not.
	MessageQueueWritten
)

func (c Change) String() string {
	var names []string
	for _, n := range []struct {
		bit  Change
		name string
	}{{OutboxWritten, "outbox"}, {WebhookQueueWritten, "webhook_queue"}, {MessageQueueWritten, "message_queue"}} {
		if c&n.bit != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// afterCommit is one registered hook; a pointer, so remove finds it.
type afterCommit struct{ fn func(Change) }

// AfterCommit registers fn to be called after every commit whose
// transaction changed something a worker waits for, with what it changed.
//
// fn runs once the commit is on disk (bbolt's fsync has returned) and
// before the Update calls whose writes the commit holds return: when Update
// returns nil, the hooks of its commit have run. A unit of work that fails,
// or a commit that fails, never reaches fn. Under group commit one call
// covers every unit of work of the commit, their changes or-ed together.
//
// fn runs on the committer goroutine: it must be quick and must not block,
// and it must not call Update, which would wait for the committer forever.
// remove unregisters fn; calling it again does nothing.
func (db *DB) AfterCommit(fn func(Change)) (remove func()) {
	h := &afterCommit{fn: fn}
	db.hookMu.Lock()
	db.hooks = append(slices.Clip(db.hooks), h)
	db.hookMu.Unlock()
	return func() {
		db.hookMu.Lock()
		db.hooks = slices.DeleteFunc(slices.Clone(db.hooks), func(x *afterCommit) bool { return x == h })
		db.hookMu.Unlock()
	}
}

// runAfterCommit calls the hooks with what a commit changed. The list is
// replaced, never changed in place, so it is read under the lock and called
// outside it (a hook may register or remove hooks).
func (db *DB) runAfterCommit(c Change) {
	if c == 0 {
		return
	}
	db.hookMu.Lock()
	hooks := db.hooks
	db.hookMu.Unlock()
	for _, h := range hooks {
		h.fn(c)
	}
}

// fileQueued puts the entry of id due at in the queue bucket name (with
// put: kvBucket.PutNew for a new message's), noting c when it is new work
// or due sooner than the entry it replaces (was; nil when there was none).
// Every write of a queue entry goes through here.
func (tx *Tx) fileQueued(put func(kvBucket, []byte, []byte) error, name []byte, c Change, at time.Time, was *time.Time, id string, v []byte) error {
	if err := put(tx.bucket(name), queueKey(at, id), v); err != nil {
		return err
	}
	if was == nil || at.Before(*was) {
		tx.changed |= c
	}
	return nil
}
