package storage

// The key-value layer under Tx. Every record Mailbolt stores is a key and
// a value in a named bucket, keys in byte order: the embedded engine keeps
// them in bbolt (kv_bolt.go), the shared engine in one PostgreSQL table
// (kv_pg.go). Everything above this file is the same for both engines.

// kvStore is one engine's transactions.
type kvStore interface {
	// View runs fn in a read-only transaction that sees one consistent
	// state of the database.
	View(fn func(kvTx) error) error
	// Update runs fn in a read-write transaction, committed when fn
	// returns nil and rolled back otherwise. Write transactions never run
	// at the same time (across every node sharing the database): each
	// sees every write committed before it began.
	Update(fn func(kvTx) error) error
	Close() error
}

// kvTx is one transaction of a kvStore.
type kvTx interface {
	// Bucket is the named bucket, or nil when it does not exist.
	Bucket(name []byte) kvBucket
	CreateBucketIfNotExists(name []byte) (kvBucket, error)
	DeleteBucket(name []byte) error
	Writable() bool
}

// kvBucket holds keys in byte order. Slices it returns are valid only until
// the transaction ends.
type kvBucket interface {
	// Get is the value of key, or nil when there is none.
	Get(key []byte) []byte
	Put(key, value []byte) error
	// PutNew is Put of a key the caller knows holds no value: its name
	// holds an id made for the record being written. An engine may store
	// it more cheaply, and must still end as Put would when the caller was
	// wrong.
	PutNew(key, value []byte) error
	Delete(key []byte) error
	Cursor() kvCursor
	// ForEach calls fn with every key and value in order; fn must not
	// change the bucket.
	ForEach(fn func(k, v []byte) error) error
	// NextSequence returns the bucket's next integer (1, 2, ...).
	NextSequence() (uint64, error)
	// KeyN is how many keys the bucket holds.
	KeyN() int
	// ExpectNew reports ErrExists when key holds a value. An engine may
	// check it when the transaction commits instead, failing the whole
	// transaction with ErrExists then.
	ExpectNew(key []byte) error
}

// kvCursor walks a bucket's keys in order. Each move returns the key and
// value it lands on, or nil keys past either end.
type kvCursor interface {
	First() (key, value []byte)
	Last() (key, value []byte)
	Next() (key, value []byte)
	Prev() (key, value []byte)
	// Seek lands on key, or the first key after it.
	Seek(key []byte) (k, v []byte)
	// Delete removes the key the cursor is on; Next then moves to the key
	// after it.
	Delete() error
}
