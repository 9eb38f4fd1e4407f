package storage

import (
	"bytes"
)

// Range narrows a list to keys between Lower (inclusive) and Upper
// (exclusive), both relative to the list's prefix; nil means unbounded.
// Keys that are UUIDv7 ids sort in time order, so a time window becomes a
// key range and costs a seek, not a walk.
type Range struct {
	Lower, Upper []byte
}

// scanMatching walks the keys of b under pfx within rg, in the order opts
// asks for, decoding each with match, and returns the page of records match
// accepts; Offset and Limit count only those. Its cost is proportional to
// the records walked until the page is full: with a selective filter that
// can be many more than the page. A negative Limit walks to the end.
func scanMatching[T any](b kvBucket, pfx []byte, rg Range, opts ListOptions, match func(k, v []byte) (T, bool, error)) ([]T, ListResult, error) {
	c := b.Cursor()
	abs := func(rel []byte) []byte { return append(append([]byte{}, pfx...), rel...) }
	var k, v []byte
	var step func() ([]byte, []byte)
	if !opts.Reverse {
		step = c.Next
		start := pfx
		if rg.Lower != nil {
			start = abs(rg.Lower)
		}
		if opts.After != nil && bytes.Compare(abs(opts.After), start) >= 0 {
			start = abs(opts.After)
			k, v = c.Seek(start)
			if k != nil && bytes.Equal(k, start) {
				k, v = c.Next()
			}
		} else {
			k, v = c.Seek(start)
		}
	} else {
		step = c.Prev
		start := abs([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		if rg.Upper != nil {
			start = abs(rg.Upper)
		}
		if opts.After != nil && bytes.Compare(abs(opts.After), start) < 0 {
			start = abs(opts.After)
		}
		k, v = c.Seek(start)
		if k == nil {
			k, v = c.Last()
		}
		for k != nil && bytes.Compare(k, start) >= 0 {
			k, v = c.Prev()
		}
	}
	inRange := func(k []byte) bool {
		if k == nil || !bytes.HasPrefix(k, pfx) {
			return false
		}
		rel := k[len(pfx):]
		if opts.Reverse {
			return rg.Lower == nil || bytes.Compare(rel, rg.Lower) >= 0
		}
		return rg.Upper == nil || bytes.Compare(rel, rg.Upper) < 0
	}
	var res ListResult
	var out []T
	var last []byte
	skipped := 0
	for ; inRange(k); k, v = step() {
		rel := k[len(pfx):]
		x, ok, err := match(rel, v)
		if err != nil {
			return nil, ListResult{}, err
		}
		if !ok {
			continue
		}
		if skipped < opts.Offset {
			skipped++
			continue
		}
		if len(out) == opts.Limit {
			res.HasMore = true
			res.Next = append([]byte{}, last...)
			break
		}
		out = append(out, x)
		last = append(last[:0], rel...)
	}
	return out, res, nil
}

// countMatching counts the records of b under pfx within rg that match
// accepts: a walk over all of them, for page-mode totals of filtered lists.
func countMatching[T any](b kvBucket, pfx []byte, rg Range, match func(k, v []byte) (T, bool, error)) (int, error) {
	n := 0
	_, _, err := scanMatching(b, pfx, rg, ListOptions{Limit: -1}, func(k, v []byte) (struct{}, bool, error) {
		_, ok, err := match(k, v)
		if ok {
			n++
		}
		return struct{}{}, false, err
	})
	return n, err
}
