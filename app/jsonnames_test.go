package app

import "testing"

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
		{`{"a":"{\"b\":1,\"b\":2}"}`, ""}, // inside a string
		{`{"a":1,"b"`, ""},                // not JSON
	} {
		path, found := RepeatedName([]byte(c.data))
		if path != c.path || found != (c.path != "") {
			t.Errorf("%s: %q %v, want %q", c.data, path, found, c.path)
		}
	}
}
