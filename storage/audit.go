package storage

import "time"

// AuditEntry is one change made in an account by a person, a key or the
// operator: who (Actor, of kind ActorKind), what (Action, on Target), from
// where (Source, the client address; empty for the CLI) and when. Entries
// are appended in the transaction of the change they record and kept as
// long as events.
type AuditEntry struct {
	ID        string    `json:"id"` // UUIDv7: creation order
	AccountID string    `json:"account_id"`
	Actor     string    `json:"actor"`
	ActorKind string    `json:"actor_kind"`
	Action    string    `json:"action"`
	Target    string    `json:"target,omitempty"`
	Source    string    `json:"source,omitempty"`
	At        time.Time `json:"at"`
}

const collectionAudit = "audit"

// AppendAudit appends an entry, to be removed at expires.
func (tx *Tx) AppendAudit(e AuditEntry, expires time.Time) error {
	key := join(e.AccountID, e.ID)
	if err := putJSON(tx.bucket(bucketAudit), key, e); err != nil {
		return err
	}
	if err := tx.addCount(collectionAudit, e.AccountID, 1); err != nil {
		return err
	}
	return tx.addExpiry(expires, kindAudit, key)
}

// AuditLog lists an account's entries (opts.Reverse: newest first).
func (tx *Tx) AuditLog(accountID string, opts ListOptions) ([]AuditEntry, ListResult, error) {
	return scanJSON[AuditEntry](tx.bucket(bucketAudit), prefix(accountID), opts)
}

// AuditCount is the number of entries an account has.
func (tx *Tx) AuditCount(accountID string) int { return tx.count(collectionAudit, accountID) }

func expireAudit(tx *Tx, key []byte, _ time.Time) error {
	b := tx.bucket(bucketAudit)
	v := b.Get(key)
	if v == nil {
		return nil
	}
	var e AuditEntry
	if err := decodeJSON(key, v, &e); err != nil {
		return b.Delete(key)
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	return tx.addCount(collectionAudit, e.AccountID, -1)
}
