package storage

import (
	"encoding/json"
	"time"
)

// GraderResult is a stored grader result of one account. Result holds the
// check-result fields exactly as they were answered.
type GraderResult struct {
	ID        string          `json:"id"`
	AccountID string          `json:"account_id"`
	CreatedAt time.Time       `json:"created_at"`
	Domain    string          `json:"domain"`
	Score     int             `json:"score"`
	Grade     string          `json:"grade"`
	Result    json.RawMessage `json:"result"`
}

const collectionGrader = "grader_results"

// InsertGraderResult stores a result under its account.
func (tx *Tx) InsertGraderResult(r GraderResult) error {
	if err := putJSON(tx.bucket(bucketGraderResults), join(r.AccountID, r.ID), r); err != nil {
		return err
	}
	return tx.addCount(collectionGrader, r.AccountID, 1)
}

// GraderResult reads one result of an account.
func (tx *Tx) GraderResult(accountID, id string) (GraderResult, error) {
	var r GraderResult
	err := getJSON(tx.bucket(bucketGraderResults), join(accountID, id), &r)
	return r, err
}

// GraderResults lists an account's results (ids are UUIDv7: Reverse is
// newest first), with their total.
func (tx *Tx) GraderResults(accountID string, opts ListOptions) ([]GraderResult, ListResult, int, error) {
	list, res, err := scanJSON[GraderResult](tx.bucket(bucketGraderResults), prefix(accountID), opts)
	return list, res, tx.count(collectionGrader, accountID), err
}
