package storage

import "time"

// Suppression stops mail to one recipient of one account.
type Suppression struct {
	AccountID       string    `json:"account_id"`
	Recipient       string    `json:"recipient"`
	Reason          string    `json:"reason"`
	SourceMessageID string    `json:"source_message_id,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

const collectionSuppressions = "suppressions"

// PutSuppression adds s; when the recipient is already suppressed it keeps
// the existing record and returns it with created=false.
func (tx *Tx) PutSuppression(s Suppression) (stored Suppression, created bool, err error) {
	b := tx.bucket(bucketSuppressions)
	key := join(s.AccountID, s.Recipient)
	if err := getJSON(b, key, &stored); err == nil {
		return stored, false, nil
	}
	if err := putJSON(b, key, s); err != nil {
		return Suppression{}, false, err
	}
	return s, true, tx.addCount(collectionSuppressions, s.AccountID, 1)
}

// Suppression reads one suppression.
func (tx *Tx) Suppression(accountID, recipient string) (Suppression, error) {
	var s Suppression
	err := getJSON(tx.bucket(bucketSuppressions), join(accountID, recipient), &s)
	return s, err
}

// DeleteSuppression removes one; ErrNotFound when it is absent.
func (tx *Tx) DeleteSuppression(accountID, recipient string) error {
	b := tx.bucket(bucketSuppressions)
	key := join(accountID, recipient)
	if b.Get(key) == nil {
		return ErrNotFound
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	return tx.addCount(collectionSuppressions, accountID, -1)
}

// Suppressions lists an account's suppressions in recipient order.
func (tx *Tx) Suppressions(accountID string, opts ListOptions) ([]Suppression, ListResult, error) {
	return scanJSON[Suppression](tx.bucket(bucketSuppressions), prefix(accountID), opts)
}

// SuppressionCount is the number of suppressions of an account.
func (tx *Tx) SuppressionCount(accountID string) int {
	return tx.count(collectionSuppressions, accountID)
}
