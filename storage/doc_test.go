package storage

import (
	"os"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestBucketTreesNameEveryBucket: the bucket trees drawn in doc.go and
// docs/storage.md name every bucket the migrations create (event_bodies was
// once missing from the second).
func TestBucketTreesNameEveryBucket(t *testing.T) {
	b, _ := openAt(t, LatestSchemaVersion())
	defer b.Close()
	var names []string
	b.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	if len(names) < 40 {
		t.Fatalf("only %d buckets found: %v", len(names), names)
	}
	for _, file := range []string{"doc.go", "../docs/storage.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		drawn := map[string]bool{} // a bucket's line: its name and a slash first
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(strings.TrimPrefix(line, "//")); len(f) > 0 && strings.HasSuffix(f[0], "/") {
				drawn[strings.TrimSuffix(f[0], "/")] = true
			}
		}
		for _, name := range names {
			if !drawn[name] {
				t.Errorf("%s does not draw the bucket %s/", file, name)
			}
		}
	}
}
