package storage

import (
	"bytes"
	"sort"
)

// pgSpan is what one forward range read learned of a bucket: its keys from
// a start (nil: the bucket's first key; after from itself unless incl) up
// to the last pair read, every one of them, or to the bucket's end when
// end. A later forward read that starts inside a span is answered from it,
// whatever key it starts at: a seek that finds nothing (a recipient on no
// suppression list) leaves a span that answers the seeks of every address
// that sorts after it.
type pgSpan struct {
	from  []byte
	incl  bool
	pairs []pgPair
	end   bool
}

// startsBefore reports whether a read from (x, xincl) starts at or before
// one from (y, yincl): nil is the bucket's start, and an inclusive start at
// a key comes before an exclusive one.
func startsBefore(x []byte, xincl bool, y []byte, yincl bool) bool {
	switch {
	case x == nil:
		return true
	case y == nil:
		return false
	}
	if c := bytes.Compare(x, y); c != 0 {
		return c < 0
	}
	return xincl || !yincl
}

// covers reports whether a read starting at (x, incl), inside or after s's
// start, begins within what s knows: before its last key, or anywhere when
// s reaches the end.
func (s *pgSpan) covers(x []byte, incl bool) bool {
	if s.end {
		return true
	}
	if len(s.pairs) == 0 {
		return false
	}
	last := s.pairs[len(s.pairs)-1].k
	if x == nil {
		return true
	}
	c := bytes.Compare(x, last)
	return c < 0 || (c == 0 && incl)
}

// answer is s's keys from (x, incl) on.
func (s *pgSpan) answer(x []byte, incl bool) []pgPair {
	if x == nil {
		return s.pairs
	}
	i := sort.Search(len(s.pairs), func(i int) bool {
		c := bytes.Compare(s.pairs[i].k, x)
		return c > 0 || (c == 0 && incl)
	})
	return s.pairs[i:]
}

// reach is how far s knows the bucket, to compare spans: ok false is the
// bucket's end.
func (s *pgSpan) reach() (last []byte, ok bool) {
	if s.end || len(s.pairs) == 0 {
		return nil, false
	}
	return s.pairs[len(s.pairs)-1].k, true
}

// within reports whether s knows nothing o does not: it starts no earlier
// and reaches no further.
func (s *pgSpan) within(o *pgSpan) bool {
	if !startsBefore(o.from, o.incl, s.from, s.incl) {
		return false
	}
	ol, ook := o.reach()
	if !ook {
		return true
	}
	sl, sok := s.reach()
	return sok && bytes.Compare(sl, ol) <= 0
}

// pgSpans is one bucket's spans, in the order of their starts, none within
// another: their reaches are in order too, so the last span starting at
// or before a read is the one that reaches furthest.
type pgSpans []pgSpan

// find answers a forward read from (x, incl) when a span holds it: the
// keys from there on, and whether they run to the bucket's end.
func (ss pgSpans) find(x []byte, incl bool) (pairs []pgPair, end, ok bool) {
	i := sort.Search(len(ss), func(i int) bool { return !startsBefore(ss[i].from, ss[i].incl, x, incl) }) - 1
	if i < 0 || !ss[i].covers(x, incl) {
		return nil, false, false
	}
	return ss[i].answer(x, incl), ss[i].end, true
}

// add puts s among ss, dropping the spans within it; a span within one
// already held adds nothing.
func (ss pgSpans) add(s pgSpan) pgSpans {
	if !s.end && len(s.pairs) == 0 {
		return ss
	}
	out := ss[:0:0]
	placed := false
	for i := range ss {
		if s.within(&ss[i]) {
			return ss
		}
		if ss[i].within(&s) {
			continue
		}
		if !placed && startsBefore(s.from, s.incl, ss[i].from, ss[i].incl) {
			out = append(out, s)
			placed = true
		}
		out = append(out, ss[i])
	}
	if !placed {
		out = append(out, s)
	}
	return out
}

// size is what s holds, for the cache's budget.
func (s *pgSpan) size() int {
	n := len(s.from) + 32
	for _, p := range s.pairs {
		n += len(p.k) + len(p.v)
	}
	return n
}
