package app

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// RepeatedName finds a name that appears twice in one object of the JSON
// value data, at any depth, and returns where: "a", "a.b", "list[2].c".
// Request bodies refuse a repeated name (docs/errors.md, "Strict JSON");
// this holds a free-form object such as metadata to the same rule. data
// is valid JSON (the caller has decoded it): for anything else the answer
// means nothing.
func RepeatedName(data []byte) (path string, found bool) {
	var seen []map[string]bool // the names of the object open at each depth
	path, found, err := WalkJSON(json.NewDecoder(bytes.NewReader(data)), func(at []JSONStep, name bool) bool {
		if !name {
			return false
		}
		d, step := len(at)-1, at[len(at)-1]
		if step.Index == 0 { // the first name of an object
			for len(seen) <= d {
				seen = append(seen, nil)
			}
			if seen[d] == nil {
				seen[d] = map[string]bool{}
			}
			clear(seen[d]) // the last object at this depth is closed
		}
		if seen[d][step.Name] {
			return true
		}
		seen[d][step.Name] = true
		return false
	})
	return path, found && err == nil
}

// A JSONStep is one step down into a JSON value: to a member of an object,
// or to an item of a list.
type JSONStep struct {
	Member bool   // a member of an object, not an item of a list
	Name   string // the member's name, unescaped
	Index  int    // the item's place in its list, or the member's in its object, from 0
}

// WalkJSON reads one JSON value from dec, token by token, and calls visit
// with the steps from the top to where it stands: at each name of an
// object, once the name is read, and at each value that is not an object
// or a list, once that is read. When visit returns true the walk stops
// there and WalkJSON returns the path of that place, as the API names a
// field ("a.b", "list[2].c", "" for the value at the top). Otherwise it
// reads the whole value and returns found false, or the decoder's error,
// for instance on a token that is not JSON. dec is the caller's, with the
// caller's options (UseNumber): visit may ask it for its InputOffset.
// The steps given to visit are only valid during the call.
func WalkJSON(dec *json.Decoder, visit func(at []JSONStep, name bool) bool) (path string, found bool, err error) {
	w := jsonWalk{dec: dec, visit: visit}
	if found, err = w.value(); !found {
		return "", false, err
	}
	return jsonPath(w.at), true, nil
}

type jsonWalk struct {
	dec   *json.Decoder
	visit func(at []JSONStep, name bool) bool
	at    []JSONStep
}

// value walks the value that comes next, and leaves w.at where the visit
// stopped it.
func (w *jsonWalk) value() (bool, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	switch tok {
	case json.Delim('{'):
		for i := 0; w.dec.More(); i++ {
			tok, err := w.dec.Token()
			if err != nil {
				return false, err
			}
			name, _ := tok.(string)
			w.at = append(w.at, JSONStep{Member: true, Name: name, Index: i})
			if w.visit(w.at, true) {
				return true, nil // at the name itself
			}
			if found, err := w.value(); found || err != nil {
				return found, err
			}
			w.at = w.at[:len(w.at)-1]
		}
	case json.Delim('['):
		for i := 0; w.dec.More(); i++ {
			w.at = append(w.at, JSONStep{Index: i})
			if found, err := w.value(); found || err != nil {
				return found, err
			}
			w.at = w.at[:len(w.at)-1]
		}
	default:
		return w.visit(w.at, false), nil
	}
	_, err = w.dec.Token() // the closing delimiter
	return false, err
}

// jsonPath names the place at as the API names a field: a member by its
// name after a dot ("a.b"), an item by its index in brackets ("list[2]").
func jsonPath(at []JSONStep) string {
	var p []byte
	for _, s := range at {
		if !s.Member {
			p = append(p, '[')
			p = strconv.AppendInt(p, int64(s.Index), 10)
			p = append(p, ']')
			continue
		}
		if len(p) > 0 {
			p = append(p, '.')
		}
		p = append(p, s.Name...)
	}
	return string(p)
}
