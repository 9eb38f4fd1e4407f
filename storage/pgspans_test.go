package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// spanModel reads a sorted key list the way the server would: up to size
// pairs from (x, incl) on.
func spanModel(keys []string, x []byte, incl bool, size int) (page []pgPair, end bool) {
	for _, k := range keys {
		c := 1
		if x != nil {
			c = bytes.Compare([]byte(k), x)
		}
		if c > 0 || (c == 0 && incl) {
			if len(page) == size {
				return page, false
			}
			page = append(page, pgPair{k: []byte(k), v: []byte("v" + k)})
		}
	}
	return page, true
}

// TestSpansAgreeWithTheBucket: spans left by random reads of a random
// bucket answer later reads with exactly the bucket's keys from where each
// starts (all of them when the span says it reaches the end), and the
// spans stay in order, none within another.
func TestSpansAgreeWithTheBucket(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var keys []string
		for range r.IntN(40) {
			keys = append(keys, fmt.Sprintf("%c%c", 'a'+r.IntN(8), 'a'+r.IntN(8)))
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		point := func() ([]byte, bool) {
			if r.IntN(10) == 0 {
				return nil, true
			}
			if r.IntN(2) == 0 {
				return []byte{byte('a' + r.IntN(9))}, r.IntN(2) == 0
			}
			return fmt.Appendf(nil, "%c%c", 'a'+r.IntN(9), 'a'+r.IntN(9)), r.IntN(2) == 0
		}
		var ss pgSpans
		answered := 0
		for range 60 {
			x, incl := point()
			if pairs, end, ok := ss.find(x, incl); ok {
				answered++
				truth, _ := spanModel(keys, x, incl, len(keys)+1)
				if len(pairs) > len(truth) || (end && len(pairs) != len(truth)) {
					t.Fatalf("seed %d: read from %q (incl %v) answered %d pairs (end %v), the bucket holds %d", seed, x, incl, len(pairs), end, len(truth))
				}
				for i := range pairs {
					if !bytes.Equal(pairs[i].k, truth[i].k) {
						t.Fatalf("seed %d: read from %q (incl %v): pair %d is %q, want %q", seed, x, incl, i, pairs[i].k, truth[i].k)
					}
				}
				if len(pairs) == 0 && !end {
					t.Fatalf("seed %d: an empty answer that does not reach the end", seed)
				}
				continue
			}
			size := 1 + r.IntN(6)
			page, end := spanModel(keys, x, incl, size)
			ss = ss.add(pgSpan{from: x, incl: incl, pairs: page, end: end})
			for i := range ss {
				for j := range ss {
					if i != j && ss[i].within(&ss[j]) {
						t.Fatalf("seed %d: span %d is within span %d", seed, i, j)
					}
				}
				if i > 0 && !startsBefore(ss[i-1].from, ss[i-1].incl, ss[i].from, ss[i].incl) {
					t.Fatalf("seed %d: spans %d and %d out of order", seed, i-1, i)
				}
			}
		}
		if seed == 0 && answered == 0 {
			t.Fatal("no read was answered from the spans")
		}
	}
}

// TestSpanOfAnEmptySeek: a seek that found nothing answers every later
// seek past it, and none before it.
func TestSpanOfAnEmptySeek(t *testing.T) {
	ss := pgSpans(nil).add(pgSpan{from: []byte("m"), incl: true, end: true})
	if p, end, ok := ss.find([]byte("x"), true); !ok || !end || len(p) != 0 {
		t.Errorf("seek x: %v %v %v, want an empty answer to the end", p, end, ok)
	}
	if _, _, ok := ss.find([]byte("a"), true); ok {
		t.Error("seek a answered from a span starting at m")
	}
	if _, _, ok := ss.find([]byte("m"), false); !ok {
		t.Error("a read after m not answered")
	}
}
