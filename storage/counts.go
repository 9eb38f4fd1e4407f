package storage

// count reads the number of records of a collection owned by account.
func (tx *Tx) count(collection, accountID string) int {
	return int(getU64(tx.bucket(bucketCounts).Get(join(collection, accountID))))
}

// addCount moves a collection's count for account by delta, in the same
// transaction as the records it counts.
func (tx *Tx) addCount(collection, accountID string, delta int) error {
	b := tx.bucket(bucketCounts)
	key := join(collection, accountID)
	n := int64(getU64(b.Get(key))) + int64(delta)
	if n < 0 {
		n = 0
	}
	return b.Put(key, putU64(uint64(n)))
}
