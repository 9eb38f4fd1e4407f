package storage

import "time"

// IdempotencyRecord is the stored answer to a write request sent with an
// Idempotency-Key, scoped to the API key that sent it. Sealed holds the
// answer's headers and body encrypted with a key only that API key's secret
// derives, so answers that carry secrets (a new API key) are not readable
// from the file or a backup.
type IdempotencyRecord struct {
	Fingerprint []byte    `json:"fingerprint"`
	Status      int       `json:"status"`
	Sealed      []byte    `json:"sealed,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Pending, when set, marks the request as in flight and names it: no
	// answer is stored yet. Nodes sharing the database write it before
	// running a request, so a duplicate on another node waits for the
	// answer instead of running the request again; ExpiresAt then bounds
	// the wait should the node running it die.
	Pending string `json:"pending,omitempty"`
}

// DropIdempotencyMarker removes the record for (apiKeyID, key) if it is
// still the in-flight marker pending (a request whose answer is not kept).
func (tx *Tx) DropIdempotencyMarker(apiKeyID, key, pending string) error {
	r, err := tx.IdempotencyRecord(apiKeyID, key)
	if err != nil || r.Pending == "" || r.Pending != pending {
		return nil
	}
	return tx.bucket(bucketIdempotency).Delete(join(apiKeyID, key))
}

// IdempotencyRecord reads the stored answer for (apiKeyID, key).
func (tx *Tx) IdempotencyRecord(apiKeyID, key string) (IdempotencyRecord, error) {
	var r IdempotencyRecord
	err := getJSON(tx.bucket(bucketIdempotency), join(apiKeyID, key), &r)
	return r, err
}

// PutIdempotencyRecord stores an answer and schedules its removal at
// r.ExpiresAt.
func (tx *Tx) PutIdempotencyRecord(apiKeyID, key string, r IdempotencyRecord) error {
	k := join(apiKeyID, key)
	if err := putJSON(tx.bucket(bucketIdempotency), k, r); err != nil {
		return err
	}
	return tx.addExpiry(r.ExpiresAt, kindIdempotency, k)
}
