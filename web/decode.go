package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"mailbolt/app"
)

// errBodyTooLarge is the answer to a body over the configured cap.
func errBodyTooLarge(limit int64) error {
	return &app.Error{Code: app.CodeBodyTooLarge,
		Message: fmt.Sprintf("request body is larger than %d bytes", limit),
		Details: map[string]any{"max_bytes": limit}}
}

// readBody reads the (already size-capped) request body.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errBodyTooLarge(limit)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// The client is too slow (or stalled): 408, which says retry,
		// not 400, which says the request is wrong; and no socket
		// addresses in the message.
		return nil, app.NewError(app.CodeRequestTimeout, "the request body did not arrive within the server's read deadline; retry")
	}
	if err != nil {
		return nil, app.Validation("body", "could not be read: the connection broke off before the body was whole")
	}
	return data, nil
}

// decodeStrict parses a JSON object into the struct v points to. Field
// names must match the struct's json names exactly (encoding/json alone
// would accept "Recipient" for "recipient"), each at most once. An unknown
// or repeated field, a wrong type, a body that is not one JSON object, or
// trailing data is 400 VALIDATION_ERROR naming the field in details.
//
// The usual body (known names, each once, no null, no escaped name) is
// checked by a scan of its top-level names and then decoded in one pass;
// anything else, and any body that pass refuses, takes the careful
// field-by-field path, which gives the error.
//
// The body must be text: invalid UTF-8, or a \u escape of half a
// surrogate pair, is 400 naming the field that holds it (checkText), where
// encoding/json would quietly make it U+FFFD.
func decodeStrict(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return app.Validation("body", "must be a JSON object")
	}
	if off, lone := checkText(data); off >= 0 {
		return textError(data, off, lone, v)
	}
	return decodeObject(trimmed, v)
}

// decodePart is decodeStrict for a part of a body that decodeStrict has
// checked as text already (a nested object, an item of a batch): it does
// not read the bytes a second time.
func decodePart(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return app.Validation("body", "must be a JSON object")
	}
	return decodeObject(trimmed, v)
}

// decodeObject decodes trimmed, a JSON text starting with '{', one pass
// or carefully (decodeStrict).
func decodeObject(trimmed []byte, v any) error {
	if plainObject(trimmed, namesOf(v)) {
		target := reflect.ValueOf(v).Elem()
		before := reflect.New(target.Type()).Elem()
		before.Set(target)
		if json.Unmarshal(trimmed, v) == nil {
			return nil
		}
		// The careful path starts from what v held, not from what the
		// failed pass left in it.
		target.Set(before)
	}
	return decodeCareful(trimmed, v)
}

// decodeCareful is decodeStrict field by field: it names what is wrong.
func decodeCareful(trimmed []byte, v any) error {
	fields := jsonFields(v)
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return syntaxError(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		name, _ := tok.(string)
		field, ok := fields[name]
		switch {
		case !ok:
			return app.Validation(name, "unknown field")
		case seen[name]:
			return app.Validation(name, "appears more than once")
		}
		seen[name] = true
		if null, known := nextIsNull(dec); !known || null {
			// Rare: read the value whole to look at it.
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return syntaxError(err)
			}
			if string(raw) == "null" && !nullable(field) {
				return app.Validation(name, "must not be null")
			}
			if err := json.Unmarshal(raw, field.Addr().Interface()); err != nil {
				return valueError(name, raw, field.Type(), err)
			}
			continue
		}
		// The usual case: decode straight from the stream, one scan.
		start := dec.InputOffset() // just after the name
		if err := dec.Decode(field.Addr().Interface()); err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
				return syntaxError(err)
			}
			// The decoder has read the whole value (it checks its syntax
			// before it fills the field), so it is there to look at.
			i := skipSpace(trimmed, int(start))
			i = skipSpace(trimmed, i+1) // the colon
			raw := trimmed[i:]
			if end := skipValue(trimmed, i); end > i {
				raw = trimmed[i:end]
			}
			return valueError(name, raw, field.Type(), err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return app.Validation("body", "unexpected data after the JSON object")
	}
	return nil
}

// nullable reports whether null may stand for a field left out: a
// pointer, list, map or interface may be nil, unless its struct tag says
// `null:"refuse"` (a *bool that is optional but, being a boolean, takes no
// null: docs/errors.md, "Strict JSON").
func nullable(f jsonField) bool {
	switch f.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return !f.refuseNull
	}
	return false
}

// fieldNames holds, per struct type, its json names (namesOf).
var fieldNames sync.Map // reflect.Type → map[string]bool

// namesOf is the set of the json names of the struct v points to.
func namesOf(v any) map[string]bool {
	t := reflect.TypeOf(v)
	if names, ok := fieldNames.Load(t); ok {
		return names.(map[string]bool)
	}
	names := map[string]bool{}
	for name := range jsonFields(v) {
		names[name] = true
	}
	t0 := t.Elem()
	for i := 0; i < t0.NumField(); i++ {
		if t0.Field(i).Anonymous {
			// encoding/json promotes an embedded struct's fields, which
			// the careful path does not: only that path decodes it.
			names = nil
			break
		}
	}
	fieldNames.Store(t, names)
	return names
}

// plainObject reports whether data, a JSON text starting with '{', is an
// object whose top-level names are all in names, each once, none written
// with escapes and none with a null value. It does not validate the
// values: it only finds where each ends, and a body that is not JSON fails
// the decoding that follows. false means "decode carefully", never
// "invalid".
func plainObject(data []byte, names map[string]bool) bool {
	var seen [32]string
	n := 0
	i := skipSpace(data, 1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		end := bytes.IndexByte(data[i+1:], '"')
		if end < 0 {
			return false
		}
		name := data[i+1 : i+1+end]
		if bytes.IndexByte(name, '\\') >= 0 || !names[string(name)] || n == len(seen) {
			return false
		}
		for _, s := range seen[:n] {
			if s == string(name) {
				return false
			}
		}
		seen[n] = string(name)
		n++
		i = skipSpace(data, i+2+end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		if i >= len(data) || data[i] == 'n' {
			return false
		}
		if i = skipValue(data, i); i < 0 {
			return false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns where the JSON value starting at data[i] ends, or -1.
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if i >= len(data) {
				return -1
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object: the caller sees it
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}

// jsonField is one field of a request struct.
type jsonField struct {
	reflect.Value
	refuseNull bool // tagged null:"refuse"
}

// jsonFields maps the json names of the struct v points to onto its fields.
func jsonFields(v any) map[string]jsonField {
	rv := reflect.ValueOf(v).Elem()
	out := map[string]jsonField{}
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{Value: rv.Field(i), refuseNull: f.Tag.Get("null") == "refuse"}
	}
	return out
}

func syntaxError(err error) error {
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return app.Validation("body", fmt.Sprintf("invalid JSON at byte %d: %v", syntaxErr.Offset, syntaxErr))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return app.Validation("body", "invalid JSON: unexpected end of input")
	}
	return app.Validation("body", "invalid JSON: "+err.Error())
}

var (
	timeType        = reflect.TypeFor[time.Time]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// valueError describes err, the failure to decode raw into a value of type
// t, naming the field the way docs/errors.md does: an item of a list by
// its index (tags[0], attachments[1].filename), an entry of an object by
// its name (headers.X-Tag). encoding/json reports neither, so the value is
// taken apart again here: this runs only once decoding has failed.
func valueError(name string, raw []byte, t reflect.Type, err error) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(raw) > 0 && !reflect.PointerTo(t).Implements(unmarshalerType) {
		switch {
		case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && raw[0] == '[':
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) == nil {
				for i, item := range items {
					if e := json.Unmarshal(item, reflect.New(t.Elem()).Interface()); e != nil {
						return valueError(fmt.Sprintf("%s[%d]", name, i), item, t.Elem(), e)
					}
				}
			}
		case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && raw[0] == '{':
			var entries map[string]json.RawMessage
			if json.Unmarshal(raw, &entries) == nil {
				for _, k := range sortedNames(entries) {
					if e := json.Unmarshal(entries[k], reflect.New(t.Elem()).Interface()); e != nil {
						return valueError(name+"."+k, entries[k], t.Elem(), e)
					}
				}
			}
		}
	}
	if t == timeType {
		// time.Time's own errors speak of Go (Time.UnmarshalJSON: input
		// is not a JSON string): whatever it was, it is not the time.
		return app.Validation(name, "must be an RFC 3339 time such as 2027-01-01T00:00:00Z")
	}
	return fieldError(name, err)
}

// sortedNames is the names of an object, sorted, so that of several bad
// entries the same one is named every time.
func sortedNames(m map[string]json.RawMessage) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// jsonKind names the JSON type of a value the way encoding/json's
// UnmarshalTypeError does.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// fieldError describes why a field's value did not fit its type.
func fieldError(name string, err error) error {
	var typeErr *json.UnmarshalTypeError
	var timeErr *time.ParseError
	var nested *app.Error
	switch {
	case errors.As(err, &nested):
		// A nested object's own strict decoding: name the path to the field.
		f, _ := nested.Details["field"].(string)
		reason, _ := nested.Details["reason"].(string)
		if f != "" && !strings.HasPrefix(f, "[") {
			f = "." + f
		}
		return app.Validation(name+f, reason)
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			name += "." + typeErr.Field
		}
		if number, ok := strings.CutPrefix(typeErr.Value, "number "); ok && typeErr.Type != nil && outOfRange(number, typeErr.Type) {
			return app.Validation(name, "number out of range")
		}
		return app.Validation(name, fmt.Sprintf("must be of type %s, not %s", jsonType(typeErr.Type.Kind()), typeErr.Value))
	case errors.As(err, &timeErr):
		return app.Validation(name, "must be an RFC 3339 time such as 2027-01-01T00:00:00Z")
	}
	return app.Validation(name, "invalid value: "+err.Error())
}

// outOfRange reports whether number, a JSON number that did not fit a
// field of type t, is too large for it (1e400 anywhere, 300 for an int8)
// rather than of the wrong sort (1.5 for an integer).
func outOfRange(number string, t reflect.Type) bool {
	var err error
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(number, 10, t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err = strconv.ParseUint(number, 10, t.Bits())
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(number, t.Bits())
	case reflect.Interface:
		_, err = strconv.ParseFloat(number, 64)
	}
	return errors.Is(err, strconv.ErrRange)
}

// jsonType names a Go kind the way a JSON client thinks of it.
func jsonType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct, reflect.Pointer, reflect.Interface:
		return "object"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	return k.String()
}

// nextIsNull looks at the decoder's buffered input, which after an object
// key holds the colon and the value: null reports a literal null; known is
// false when the buffer ends before the value starts.
func nextIsNull(dec *json.Decoder) (null, known bool) {
	buf, _ := dec.Buffered().(*bytes.Reader)
	if buf == nil {
		return false, false
	}
	rest := make([]byte, min(buf.Len(), 64))
	n, _ := buf.ReadAt(rest, buf.Size()-int64(buf.Len()))
	rest = bytes.TrimLeft(rest[:n], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return false, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 {
		return false, false
	}
	if rest[0] != 'n' {
		return false, true
	}
	return true, true
}
