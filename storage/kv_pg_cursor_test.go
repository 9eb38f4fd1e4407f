package storage

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
)

// The cursor against a model (Next: the first key after the cursor's,
// Prev: the last before it), with writes to the bucket between moves.
func TestPostgresCursorModel(t *testing.T) {
	pg := openNodes(t, 1)[0]
	model := map[string]string{}
	for seed := int64(1); seed < 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		key := func() string { return fmt.Sprintf("k%03d", rng.Intn(300)) }
		var log []string
		err := pg.kv.Update(func(tx kvTx) error {
			m := map[string]string{}
			for k, v := range model {
				m[k] = v
			}
			log = nil
			b := tx.Bucket(bucketTeam)
			c := b.Cursor()
			var cur string
			on := false
			sorted := func() []string {
				var ks []string
				for k := range m {
					ks = append(ks, k)
				}
				sort.Strings(ks)
				return ks
			}
			for i := 0; i < 300; i++ {
				op := rng.Intn(9)
				if !on && (op == 2 || op == 3) {
					op = 4
				}
				var k, v []byte
				var want string
				ks := sorted()
				switch op {
				case 0:
					k, v = c.First()
					if len(ks) > 0 {
						want = ks[0]
					}
				case 1:
					k, v = c.Last()
					if len(ks) > 0 {
						want = ks[len(ks)-1]
					}
				case 2:
					k, v = c.Next()
					j := sort.SearchStrings(ks, cur+"\x00")
					if j < len(ks) {
						want = ks[j]
					}
				case 3:
					k, v = c.Prev()
					j := sort.SearchStrings(ks, cur)
					if j > 0 {
						want = ks[j-1]
					}
				case 4:
					s := key()
					k, v = c.Seek([]byte(s))
					j := sort.SearchStrings(ks, s)
					if j < len(ks) {
						want = ks[j]
					}
				case 5, 6:
					s, val := key(), fmt.Sprint("v", i)
					b.Put([]byte(s), []byte(val))
					m[s] = val
					log = append(log, "put "+s)
					continue
				case 7:
					s := key()
					b.Delete([]byte(s))
					delete(m, s)
					log = append(log, "del "+s)
					continue
				case 8:
					if !on {
						continue
					}
					c.Delete()
					delete(m, cur)
					log = append(log, "cdel "+cur)
					continue
				}
				log = append(log, fmt.Sprintf("%d -> %s", op, k))
				if string(k) != want || (k != nil && string(v) != m[want]) {
					return fmt.Errorf("seed %d step %d op %d: got %q=%q, want %q=%q; log %v", seed, i, op, k, v, want, m[want], log[max(0, len(log)-8):])
				}
				cur, on = want, k != nil
			}
			model = m
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
