package storage

import (
	bolt "go.etcd.io/bbolt"
)

// boltStore is the embedded engine: one bbolt file.
type boltStore struct{ db *bolt.DB }

func (s boltStore) View(fn func(kvTx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (s boltStore) Update(fn func(kvTx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (s boltStore) Close() error { return s.db.Close() }

type boltTx struct{ tx *bolt.Tx }

func (t boltTx) Bucket(name []byte) kvBucket {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil
	}
	if appendMostly[string(name)] {
		// Keys arrive in increasing order (UUIDv7 ids, times): a split
		// page is never written to again, so fill it.
		b.FillPercent = 0.95
	}
	return boltBucket{b}
}

func (t boltTx) CreateBucketIfNotExists(name []byte) (kvBucket, error) {
	b, err := t.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return nil, err
	}
	return boltBucket{b}, nil
}

func (t boltTx) DeleteBucket(name []byte) error { return t.tx.DeleteBucket(name) }
func (t boltTx) Writable() bool                 { return t.tx.Writable() }

type boltBucket struct{ *bolt.Bucket }

func (b boltBucket) Cursor() kvCursor { return b.Bucket.Cursor() }
func (b boltBucket) KeyN() int        { return b.Bucket.Stats().KeyN }

func (b boltBucket) PutNew(key, value []byte) error { return b.Bucket.Put(key, value) }

func (b boltBucket) ExpectNew(key []byte) error {
	if b.Bucket.Get(key) != nil {
		return ErrExists
	}
	return nil
}

// appendMostly are the buckets whose new keys sort after the existing
// ones (per account, or globally).
var appendMostly = map[string]bool{
	string(bucketMessages): true, string(bucketMessageContent): true, string(bucketMessageRaw): true,
	string(bucketMessageOwner): true, string(bucketEvents): true, string(bucketEventBodies): true,
	string(bucketEventOutbox): true, string(bucketExpiry): true, string(bucketEventsByMessage): true,
	string(bucketAudit): true,
}
