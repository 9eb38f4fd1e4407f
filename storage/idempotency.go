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
