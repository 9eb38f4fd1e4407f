package storage

import (
	"fmt"
	"sync"
	"testing"
)

func TestPostgresWarmStress(t *testing.T) {
	dbs := openNodes(t, 2)
	const each = 150
	var wg sync.WaitGroup
	for _, db := range dbs {
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					db.Warm(func(tx *Tx) {
						tx.bucket(bucketTeam).Get([]byte("n"))
						c := tx.btx.Bucket(bucketTeam).Cursor()
						for k, _ := c.First(); k != nil; k, _ = c.Next() {
						}
					})
					var bad string
					err := db.Update(func(tx *Tx) error {
						bad = ""
						b := tx.bucket(bucketTeam)
						n := getU64(b.Get([]byte("n")))
						var keys int
						c := tx.btx.Bucket(bucketTeam).Cursor()
						for k, _ := c.First(); k != nil; k, _ = c.Next() {
							keys++
						}
						if n > 0 && uint64(keys) != n+1 { // n and one key per increment... (k<n>)
							bad = fmt.Sprintf("n=%d keys=%d", n, keys)
						}
						if err := b.Put(putU64(n+1), []byte("x")); err != nil {
							return err
						}
						return b.Put([]byte("n"), putU64(n+1))
					})
					if err != nil {
						t.Error(err)
						return
					}
					if bad != "" {
						t.Errorf("committed after reading %s", bad)
					}
				}
			}()
		}
	}
	wg.Wait()
	var n uint64
	dbs[0].View(func(tx *Tx) error { n = getU64(tx.bucket(bucketTeam).Get([]byte("n"))); return nil })
	if n != 6*each {
		t.Errorf("counter %d, want %d", n, 6*each)
	}
}

// ExpectNew in a read-only transaction defers its check to a commit that
// never sends it: it answers nil for a key that holds a record.
func TestPostgresExpectNewInView(t *testing.T) {
	db := openNodes(t, 1)[0]
	kvPut(t, db, bucketTeam, "k", "1")
	var err error
	db.kv.View(func(tx kvTx) error { err = tx.Bucket(bucketTeam).ExpectNew([]byte("k")); return nil })
	if err == nil {
		t.Fatal("ExpectNew in a View: nil for a taken key (bbolt: ErrExists)")
	}
}

// Pages Warm adds to the node cache are not counted in its byte budget,
// so they never make it start again: one cached page per distinct Seek
// (a suppression check per recipient) grows without bound.
func TestPostgresWarmRangesCounted(t *testing.T) {
	db := openNodes(t, 1)[0]
	for i := 0; i < 40; i++ {
		kvPut(t, db, bucketTeam, fmt.Sprintf("k%03d", i), string(make([]byte, 1000)))
	}
	before := db.pg.cache.bytes
	db.Warm(func(tx *Tx) {
		for i := 0; i < 40; i++ {
			tx.btx.Bucket(bucketTeam).Cursor().Seek([]byte(fmt.Sprintf("k%03d", i)))
		}
	})
	db.pg.cache.mu.Lock()
	n := len(db.pg.cache.ranges[string(bucketTeam)])
	after := db.pg.cache.bytes
	db.pg.cache.mu.Unlock()
	if n > 0 && after-before < n*1000 {
		t.Fatalf("%d pages (about %d kB) cached by Warm, the budget counts %d bytes more", n, n*16, after-before)
	}
}
