package web

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Request generation for the OpenAPI-driven fuzz test
// (fuzz_openapi_test.go): values built from the document's own schemas,
// then mutated. The document is read as plain JSON, so every keyword the
// generator honours is visible here.

// fuzzOp is one operation of the document.
type fuzzOp struct {
	method, path string // path as documented, e.g. /v1/messages/{id}
	public       bool   // security: [] (no key needed)
	params       []fuzzParam
	body         map[string]any // schema of the request body, nil for none
	bodyType     string         // its content type
	bodyRequired bool
}

// fuzzParam is a documented path, query or header parameter.
type fuzzParam struct {
	name, in string
	required bool
	schema   map[string]any
}

func (o fuzzOp) String() string { return o.method + " " + o.path }

// fuzzSpec is openapi.json decoded as plain JSON.
type fuzzSpec struct{ root map[string]any }

func loadFuzzSpec() (fuzzSpec, error) {
	var root map[string]any
	if err := json.Unmarshal(OpenAPI, &root); err != nil {
		return fuzzSpec{}, fmt.Errorf("decode openapi.json: %w", err)
	}
	return fuzzSpec{root}, nil
}

// deref follows $ref (local references only) until it reaches a schema.
func (s fuzzSpec) deref(v map[string]any) map[string]any {
	for i := 0; i < 16; i++ {
		ref, ok := v["$ref"].(string)
		if !ok {
			return v
		}
		var cur any = s.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := cur.(map[string]any)
			cur = m[part]
		}
		next, _ := cur.(map[string]any)
		if next == nil {
			return map[string]any{}
		}
		v = next
	}
	return v
}

// operations lists every operation, in path then method order.
func (s fuzzSpec) operations() []fuzzOp {
	pathsObj, _ := s.root["paths"].(map[string]any)
	var out []fuzzOp
	for _, p := range sortedKeys(pathsObj) {
		item, _ := pathsObj[p].(map[string]any)
		for _, m := range []string{"get", "post", "put", "patch", "delete"} {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			fo := fuzzOp{method: strings.ToUpper(m), path: p}
			if sec, ok := op["security"].([]any); ok && len(sec) == 0 {
				fo.public = true
			}
			var raw []any
			if ps, ok := item["parameters"].([]any); ok {
				raw = append(raw, ps...)
			}
			if ps, ok := op["parameters"].([]any); ok {
				raw = append(raw, ps...)
			}
			for _, r := range raw {
				pm := s.deref(r.(map[string]any))
				sch, _ := pm["schema"].(map[string]any)
				req, _ := pm["required"].(bool)
				fo.params = append(fo.params, fuzzParam{name: pm["name"].(string), in: pm["in"].(string), required: req, schema: s.deref(sch)})
			}
			if rb, ok := op["requestBody"].(map[string]any); ok {
				rb = s.deref(rb)
				fo.bodyRequired, _ = rb["required"].(bool)
				content, _ := rb["content"].(map[string]any)
				for _, ct := range sortedKeys(content) {
					media, _ := content[ct].(map[string]any)
					sch, _ := media["schema"].(map[string]any)
					fo.body, fo.bodyType = s.deref(sch), ct
					break
				}
			}
			out = append(out, fo)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fuzzGen builds values from schemas. hints give plausible values for
// properties by name (a verified sender, an existing template id), so that
// valid requests get past the checks the schema cannot express.
type fuzzGen struct {
	spec  fuzzSpec
	rnd   *rand.Rand
	now   time.Time
	hints map[string][]any
}

// value generates a value that matches schema. name is the property name
// it is for ("" when none).
func (g *fuzzGen) value(schema map[string]any, name string, depth int) any {
	schema = g.spec.deref(schema)
	if hs := g.hints[name]; len(hs) > 0 && g.rnd.IntN(8) != 0 {
		return deepCopy(hs[g.rnd.IntN(len(hs))]) // mutations change values in place
	}
	if c, ok := schema["const"]; ok {
		return c
	}
	if e, ok := schema["enum"].([]any); ok && len(e) > 0 {
		return e[g.rnd.IntN(len(e))]
	}
	if ex, ok := schema["example"]; ok && g.rnd.IntN(2) == 0 {
		return ex
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := schema[k].([]any); ok && len(alts) > 0 {
			return g.value(alts[g.rnd.IntN(len(alts))].(map[string]any), name, depth)
		}
	}
	if all, ok := schema["allOf"].([]any); ok {
		merged := map[string]any{}
		for _, a := range all {
			if m, ok := g.value(a.(map[string]any), name, depth).(map[string]any); ok {
				for k, v := range m {
					merged[k] = v
				}
			}
		}
		return merged
	}
	typ := schemaType(schema, g.rnd)
	switch typ {
	case "null":
		return nil
	case "boolean":
		return g.rnd.IntN(2) == 0
	case "integer":
		lo, hi := bounds(schema, 0, 100)
		return lo + g.rnd.Int64N(hi-lo+1)
	case "number":
		lo, hi := bounds(schema, 0, 100)
		return float64(lo) + g.rnd.Float64()*float64(hi-lo)
	case "string":
		return g.str(schema, name)
	case "array":
		items, _ := schema["items"].(map[string]any)
		lo, hi := bounds(schema, 0, 3)
		if v, ok := schema["minItems"].(float64); ok {
			lo = int64(v)
		}
		if v, ok := schema["maxItems"].(float64); ok {
			hi = min(int64(v), lo+3)
		} else {
			hi = lo + 3
		}
		n := lo + g.rnd.Int64N(hi-lo+1)
		out := make([]any, 0, n)
		for range n {
			if depth > 6 {
				break
			}
			out = append(out, g.value(items, strings.TrimSuffix(name, "s"), depth+1))
		}
		if u, _ := schema["uniqueItems"].(bool); u {
			out = uniq(out)
		}
		return out
	default: // object
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		req := map[string]bool{}
		if rs, ok := schema["required"].([]any); ok {
			for _, r := range rs {
				req[r.(string)] = true
			}
		}
		for _, k := range sortedKeys(props) {
			if depth > 6 && !req[k] {
				continue
			}
			if req[k] || len(g.hints[k]) > 0 && g.rnd.IntN(2) == 0 || g.rnd.IntN(4) == 0 {
				out[k] = g.value(props[k].(map[string]any), k, depth+1)
			}
		}
		if ap, ok := schema["additionalProperties"].(map[string]any); ok && len(props) == 0 && depth < 6 {
			for i := range g.rnd.IntN(3) {
				out[fmt.Sprintf("X-Fuzz-%d", i)] = g.value(ap, "", depth+1)
			}
		}
		return out
	}
}

// deepCopy copies the maps and slices of a JSON value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// schemaType picks the schema's type: one of a list, mostly not null.
func schemaType(schema map[string]any, rnd *rand.Rand) string {
	switch t := schema["type"].(type) {
	case string:
		return t
	case []any:
		var nonNull []string
		for _, x := range t {
			if s := x.(string); s != "null" {
				nonNull = append(nonNull, s)
			}
		}
		if len(nonNull) == 0 || rnd.IntN(8) == 0 {
			return "null"
		}
		return nonNull[rnd.IntN(len(nonNull))]
	}
	if _, ok := schema["properties"]; ok {
		return "object"
	}
	if _, ok := schema["items"]; ok {
		return "array"
	}
	return "string"
}

func bounds(schema map[string]any, lo, hi int64) (int64, int64) {
	if v, ok := schema["minimum"].(float64); ok {
		lo = int64(v)
		if hi < lo {
			hi = lo + 100
		}
	}
	if v, ok := schema["maximum"].(float64); ok {
		hi = int64(v)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func uniq(xs []any) []any {
	var out []any
	seen := map[string]bool{}
	for _, x := range xs {
		k := fmt.Sprint(x)
		if !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}

// str generates a string for schema: by format, else a word within the
// length bounds.
func (g *fuzzGen) str(schema map[string]any, name string) string {
	switch schema["format"] {
	case "email":
		return fmt.Sprintf("r%d@dest.test", g.rnd.IntN(1000))
	case "date-time":
		return g.now.Add(time.Duration(g.rnd.IntN(48)-24) * time.Hour).Format(time.RFC3339)
	case "date":
		return g.now.AddDate(0, 0, -g.rnd.IntN(30)).Format(time.DateOnly)
	case "uri", "url":
		return "https://hooks.acme.test/" + strconv.Itoa(g.rnd.IntN(1000))
	case "uuid":
		return fmt.Sprintf("0192%04x-0000-7000-8000-%012x", g.rnd.IntN(1<<16), g.rnd.Int64N(1<<48))
	}
	lo, hi := int64(1), int64(12)
	if v, ok := schema["minLength"].(float64); ok {
		lo = int64(v)
	}
	if v, ok := schema["maxLength"].(float64); ok && int64(v) < hi {
		hi = int64(v)
	}
	if hi < lo {
		hi = lo
	}
	n := lo + g.rnd.Int64N(hi-lo+1)
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[g.rnd.IntN(len(letters))]
	}
	return string(b)
}

// oddStrings are the strings mutations put where a string is expected:
// control characters, CR/LF header injection, bidi overrides, non-
// characters, combining marks, long single words, template syntax,
// path tricks and markup.
var oddStrings = []string{
	"",
	" ",
	"\x00",
	"a\x00b@dest.test",
	"x\r\nBcc: victim@evil.test",
	"Subject\r\n\r\nbody",
	"\nX-Injected: 1",
	"ann@dest.test\r\nRCPT TO:<victim@evil.test>",
	"\u202egnp.exe",
	"\ufeff\ufffe\uffff",
	"\U0001F4A9\U0001F600",
	"e\u0301\u0301\u0301\u0301\u0301\u0301",
	"\u0000\u001f\u007f\u0085\u2028\u2029",
	"ᴀᴅᴍɪɴ@ᴀᴄᴍᴇ.ᴛᴇsᴛ",
	"ann@xn--80ak6aa92e.com",
	"\"quoted\\\"\"@dest.test",
	"<script>alert(1)</script>",
	"{{#a}}{{#a}}{{#a}}{{.}}{{/a}}{{/a}}{{/a}}",
	"{{> partial}}",
	"{{{raw}}}",
	"../../etc/passwd",
	"%00%0d%0a",
	"-1",
	"9223372036854775808",
	"1e309",
	"NaN",
	"null",
	"true",
	"\\u0000",
	"javascript:alert(1)",
	"http://127.0.0.1:22/",
	"https://[::1]/x",
	"https://169.254.169.254/latest/meta-data/",
	"https://user:pass@hooks.acme.test/#frag",
}

// hugeString is a long string of the given size with no white space.
func hugeString(n int, rnd *rand.Rand) string {
	if rnd.IntN(2) == 0 {
		return strings.Repeat("a", n)
	}
	return strings.Repeat("\u00e9\U0001F4A9", n/6+1)
}

// node is a place in a generated JSON value: its parent and key or index.
type node struct {
	parent any // map[string]any or []any
	key    string
	index  int
	path   string
}

func (n node) get() any {
	if m, ok := n.parent.(map[string]any); ok {
		return m[n.key]
	}
	return n.parent.([]any)[n.index]
}

func (n node) set(v any) {
	if m, ok := n.parent.(map[string]any); ok {
		m[n.key] = v
		return
	}
	n.parent.([]any)[n.index] = v
}

// nodes lists every place under v.
func nodes(v any, path string) []node {
	var out []node
	switch x := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			out = append(out, node{parent: x, key: k, path: path + "." + k})
			out = append(out, nodes(x[k], path+"."+k)...)
		}
	case []any:
		for i := range x {
			p := fmt.Sprintf("%s[%d]", path, i)
			out = append(out, node{parent: x, index: i, path: p})
			out = append(out, nodes(x[i], p)...)
		}
	}
	return out
}

// mutation names a way of spoiling a valid body.
type mutation string

const (
	mutNone       mutation = "valid"
	mutDrop       mutation = "drop-field"
	mutType       mutation = "wrong-type"
	mutHuge       mutation = "huge-string"
	mutOdd        mutation = "odd-string"
	mutExtra      mutation = "unknown-field"
	mutRaw        mutation = "raw-body"
	mutNoBody     mutation = "no-body"
	mutArrayBloat mutation = "many-items"
)

var bodyMutations = []mutation{mutNone, mutNone, mutNone, mutDrop, mutType, mutHuge, mutOdd, mutOdd, mutExtra, mutRaw, mutNoBody, mutArrayBloat}

// wrongTypes are values put where another type is expected.
var wrongTypes = []any{nil, true, 0, -1, 1e300, "", "x", []any{}, []any{nil}, map[string]any{}, map[string]any{"a": map[string]any{}}}

// mutate spoils body (a fresh value the caller owns) and returns what
// to send. It may return raw bytes instead of a value.
func (g *fuzzGen) mutate(body any, m mutation) (any, []byte) {
	ns := nodes(body, "")
	pick := func(keep func(node) bool) (node, bool) {
		var c []node
		for _, n := range ns {
			if keep(n) {
				c = append(c, n)
			}
		}
		if len(c) == 0 {
			return node{}, false
		}
		return c[g.rnd.IntN(len(c))], true
	}
	isString := func(n node) bool { _, ok := n.get().(string); return ok }
	switch m {
	case mutDrop:
		if n, ok := pick(func(n node) bool { _, ok := n.parent.(map[string]any); return ok }); ok {
			delete(n.parent.(map[string]any), n.key)
		} else if obj, ok := body.(map[string]any); ok {
			clear(obj)
		}
	case mutType:
		if n, ok := pick(func(node) bool { return true }); ok {
			n.set(wrongTypes[g.rnd.IntN(len(wrongTypes))])
		} else {
			body = wrongTypes[g.rnd.IntN(len(wrongTypes))]
		}
	case mutHuge:
		size := []int{1 << 10, 64 << 10, 1 << 20}[g.rnd.IntN(3)]
		if n, ok := pick(isString); ok {
			n.set(hugeString(size, g.rnd))
		} else if obj, ok := body.(map[string]any); ok {
			obj["name"] = hugeString(size, g.rnd)
		}
	case mutOdd:
		s := oddStrings[g.rnd.IntN(len(oddStrings))]
		if n, ok := pick(isString); ok {
			if g.rnd.IntN(2) == 0 {
				s = n.get().(string) + s
			}
			n.set(s)
		} else if obj, ok := body.(map[string]any); ok {
			obj["name"] = s
		}
	case mutExtra:
		if n, ok := pick(func(n node) bool { _, ok := n.get().(map[string]any); return ok }); ok {
			n.get().(map[string]any)["__proto__"] = map[string]any{"admin": true}
		} else if obj, ok := body.(map[string]any); ok {
			obj["account_id"] = "acct_other"
		}
	case mutArrayBloat:
		if n, ok := pick(func(n node) bool { a, ok := n.get().([]any); return ok && len(a) > 0 }); ok {
			a := n.get().([]any)
			n.set(slices.Repeat(a[:1], 6000))
		}
	case mutRaw:
		return nil, rawBodies[g.rnd.IntN(len(rawBodies))]
	}
	return body, nil
}

// rawBodies are bodies no encoder would produce.
var rawBodies = [][]byte{
	[]byte(`{`),
	[]byte(`{"a":1}{"b":2}`),
	[]byte(`[]`),
	[]byte(`null`),
	[]byte(`"string"`),
	[]byte(`{"from":"\ud800@dest.test","to":"\udfff"}`),
	[]byte("{\"name\":\"\xff\xfe\xfd\"}"),
	[]byte("\xef\xbb\xbf{}"),
	[]byte(strings.Repeat("[", 100000)),
	[]byte(`{"name":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`),
	[]byte(`{"name":1e999999}`),
	[]byte(`{"limit":-0,"name":"x","name":"y"}`),
	[]byte(`{"NAME":"x"}`),
	[]byte("name=x&to=a%40b.test"),
	[]byte("\x00\x01\x02"),
}

// encodeBody encodes a value for the content type.
func encodeBody(v any, contentType string) []byte {
	if contentType == "application/x-www-form-urlencoded" {
		form := url.Values{}
		if m, ok := v.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				form.Set(k, fmt.Sprint(m[k]))
			}
		}
		return []byte(form.Encode())
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Values that JSON cannot hold (1e300 is fine; NaN is not made).
		return []byte(`{}`)
	}
	return b
}

// queryValue generates a value for a query parameter: valid from its
// schema, or spoiled.
func (g *fuzzGen) queryValue(p fuzzParam, spoil bool) string {
	if !spoil {
		v := g.value(p.schema, p.name, 5)
		switch x := v.(type) {
		case nil:
			return ""
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return fmt.Sprint(v)
	}
	bad := []string{"", "abc", "-1", "0", "1.5", "99999999999999999999", "1e3", "true", "null",
		"%00", "\r\nX: y", "2026-13-45T99:99:99Z", "<script>", strings.Repeat("9", 4096), "\u202e\U0001F4A9",
		"AAAA", "eyJ0IjoiYSJ9", "Zm9v..", "'; DROP TABLE messages;--"}
	return bad[g.rnd.IntN(len(bad))]
}
