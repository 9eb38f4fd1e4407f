package app

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRepeatedName(t *testing.T) {
	for _, c := range []struct {
		data, path string
	}{
		{`{}`, ""},
		{`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`, ""}, // the same name in different objects
		{`{"a":1,"a":2}`, "a"},
		{`{"a":{"b":1,"c":{"d":1,"d":2}}}`, "a.c.d"},
		{`{"list":[1,{"x":1},{"y":1,"y":2}]}`, "list[2].y"},
		{`{"a":[[{"b":1,"b":1}]]}`, "a[0][0].b"},
		{`[{"a":1},{"b":1,"a":1}]`, ""},          // objects in turn at one depth
		{`{"a":{"b":{}},"c":{"d":1,"b":1}}`, ""}, // a closed object's names are forgotten
		{`{"a":{"x":1},"b":2,"a":3}`, "a"},       // an open object's are not, past a nested one
		{`{"a":"{\"b\":1,\"b\":2}"}`, ""},        // inside a string
		{`{"a\u0062":1,"ab":2}`, "ab"},           // names compare unescaped
		{`{"a":1,"b"`, ""},                       // not JSON
	} {
		path, found := RepeatedName([]byte(c.data))
		if path != c.path || found != (c.path != "") {
			t.Errorf("%s: %q %v, want %q", c.data, path, found, c.path)
		}
	}
}

// visits walks data with WalkJSON once for every place visit is called at,
// stopping there, and returns the paths it answers, a name's marked ":".
func visits(t *testing.T, data string) []string {
	t.Helper()
	var paths []string
	for k := 0; ; k++ {
		n, atName := 0, false
		path, found, err := WalkJSON(json.NewDecoder(strings.NewReader(data)), func(_ []JSONStep, name bool) bool {
			n++
			atName = name
			return n > k
		})
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !found {
			return paths
		}
		if atName {
			path += ":"
		}
		paths = append(paths, path)
	}
}

// TestWalkJSON: the walk visits every name and every value that is not a
// container, in order, and answers each place's path as the API names a
// field, containers at any depth, empty ones, and names that are escaped
// or hold the path's own punctuation included.
func TestWalkJSON(t *testing.T) {
	for _, c := range []struct {
		data  string
		paths []string
	}{
		{`{}`, nil},
		{`[]`, nil},
		{`"x"`, []string{""}},
		{` 12 `, []string{""}},
		{`{"a":1,"b":"x"}`, []string{"a:", "a", "b:", "b"}},
		{`{"a":{"b":{"c":null}}}`, []string{"a:", "a.b:", "a.b.c:", "a.b.c"}},
		{`[1,[2,[3]]]`, []string{"[0]", "[1][0]", "[1][1][0]"}},
		{`{"list":[{"x":1},[true,{"y":[]}]]}`, []string{"list:", "list[0].x:", "list[0].x", "list[1][0]", "list[1][1].y:"}},
		{`{"e":{},"f":[],"g":[{},[]],"h":2}`, []string{"e:", "f:", "g:", "h:", "h"}},
		{`{"a\"b":{"c.d":1,"\u00e9\ud83d\ude00":2},"\\":[3],"x[0]":4}`, []string{`a"b:`, `a"b.c.d:`, `a"b.c.d`, `a"b.é😀:`, `a"b.é😀`, `\:`, `\[0]`, `x[0]:`, `x[0]`}},
		// An empty name adds nothing to the path: the API has always named
		// {"":{"a":1}}'s member "a".
		{`{"":{"a":1}}`, []string{":", "a:", "a"}},
	} {
		if got := visits(t, c.data); !reflect.DeepEqual(got, c.paths) {
			t.Errorf("%s: %q, want %q", c.data, got, c.paths)
		}
	}
}

// TestWalkJSONSteps: visit is given the steps from the top: members by
// name and their place in their object, items by index.
func TestWalkJSONSteps(t *testing.T) {
	var got [][]JSONStep
	_, found, err := WalkJSON(json.NewDecoder(strings.NewReader(`{"a":1,"b":[{"c":2}]}`)), func(at []JSONStep, name bool) bool {
		if !name {
			got = append(got, append([]JSONStep(nil), at...))
		}
		return false
	})
	want := [][]JSONStep{
		{{Member: true, Name: "a", Index: 0}},
		{{Member: true, Name: "b", Index: 1}, {Index: 0}, {Member: true, Name: "c", Index: 0}},
	}
	if found || err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%v %v, steps %+v; want %+v", found, err, got, want)
	}
}

// TestWalkJSONStopsAndFails: a walk stopped at a name does not read its
// value, and text that is not JSON is the decoder's error, with no path.
func TestWalkJSONStopsAndFails(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(`{"a":{"b":`))
	path, found, err := WalkJSON(dec, func(at []JSONStep, name bool) bool { return len(at) == 2 })
	if path != "a.b" || !found || err != nil {
		t.Errorf("stopped at a name: %q %v %v", path, found, err)
	}
	// The decoder is the caller's, with its options: 1e400 is a token
	// with UseNumber, and without it an error.
	dec = json.NewDecoder(strings.NewReader(`[1e400]`))
	dec.UseNumber()
	if path, found, err := WalkJSON(dec, func([]JSONStep, bool) bool { return true }); path != "[0]" || !found || err != nil {
		t.Errorf("1e400 with UseNumber: %q %v %v", path, found, err)
	}
	for _, data := range []string{`[1e400]`, ``, `{"a":1,"b"`, `{"a" 1}`, `[1,]`, `[1 2]`, `{"a":1,}`, `}`} {
		path, found, err := WalkJSON(json.NewDecoder(strings.NewReader(data)), func([]JSONStep, bool) bool { return false })
		if path != "" || found || err == nil {
			t.Errorf("%q: %q %v %v, want the decoder's error", data, path, found, err)
		}
	}
}

// FuzzWalkJSON holds WalkJSON and RepeatedName to encoding/json: the walk
// fails exactly when the value does not decode; it visits every name and
// every value that is not a container, each at steps that lead to it; and
// RepeatedName finds a name exactly when decoding into maps drops one.
func FuzzWalkJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":null}],"c":{}}`, `[[],{"a":1,"a":2}]`, `{"":{"a":1},"a":2}`, `{"a\u0062":1,"ab":2}`, `"x"`, `{"a":1,}`, `{"n":1e400}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var raw json.RawMessage
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		decodeErr := dec.Decode(&raw)
		names, scalars := 0, 0
		type place struct {
			at   []JSONStep
			name bool
		}
		var places []place
		dec = json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		_, found, err := WalkJSON(dec, func(at []JSONStep, name bool) bool {
			if name {
				names++
			} else {
				scalars++
			}
			places = append(places, place{append([]JSONStep(nil), at...), name})
			return false
		})
		if found || (err == nil) != (decodeErr == nil) {
			t.Fatalf("%q: walk %v %v, decode %v", data, found, err, decodeErr)
		}
		if err != nil {
			return
		}
		var v any
		dec = json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		members, leaves := count(v)
		if names < members {
			t.Fatalf("%q: walk visits %d names; decoded %d members", raw, names, members)
		}
		if _, repeated := RepeatedName(raw); repeated != (names > members) {
			t.Fatalf("%q: RepeatedName %v; %d names, %d kept", raw, repeated, names, members)
		}
		if names > members {
			return // the values of a repeated name but the last are dropped
		}
		if scalars != leaves {
			t.Fatalf("%q: walk visits %d values; decoded %d", raw, scalars, leaves)
		}
		for _, p := range places {
			x, ok := follow(v, p.at)
			_, object := x.(map[string]any)
			_, list := x.([]any)
			if !ok || !p.name && (object || list) {
				t.Fatalf("%q: steps %+v (name %v) lead to %v %v", raw, p.at, p.name, x, ok)
			}
		}
	})
}

// count counts the members of v's objects and the values in it that are
// not objects or lists.
func count(v any) (members, leaves int) {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			m, l := count(x)
			members, leaves = members+1+m, leaves+l
		}
	case []any:
		for _, x := range v {
			m, l := count(x)
			members, leaves = members+m, leaves+l
		}
	default:
		leaves = 1
	}
	return members, leaves
}

// follow takes the steps at down into v, a value decoded into maps and
// slices, and says whether they lead anywhere.
func follow(v any, at []JSONStep) (any, bool) {
	for _, s := range at {
		switch x := v.(type) {
		case map[string]any:
			if !s.Member || s.Index >= len(x) {
				return nil, false
			}
			if v = x[s.Name]; v == nil {
				if _, ok := x[s.Name]; !ok {
					return nil, false
				}
			}
		case []any:
			if s.Member || s.Index >= len(x) {
				return nil, false
			}
			v = x[s.Index]
		default:
			return nil, false
		}
	}
	return v, true
}
