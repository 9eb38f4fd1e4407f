package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"unicode"
	"unicode/utf8"

	"mailbolt/app"
)

// A JSON text is UTF-8 (RFC 8259 §8.1), and a \u escape of half of a
// UTF-16 surrogate pair stands for nothing without its other half (§7,
// §8.2). encoding/json replaces either with U+FFFD without a word, so a
// subject sent as "\ud800" would be stored as "�": decodeStrict refuses
// them first, with checkText, and names the field that holds them.

// checkText reports the first problem of data, a request body, as text:
// the offset of a byte that is not UTF-8, or of a \u escape of a surrogate
// that is not half of a pair; off is -1 when there is none. It is one pass
// over data, utf8.Valid, and a search for "\u", which reads the escape
// further only when a d or D follows.
func checkText(data []byte) (off int, lone bool) {
	if i := invalidUTF8(data); i >= 0 {
		return i, false
	}
	if i := loneSurrogate(data); i >= 0 {
		return i, true
	}
	return -1, false
}

// invalidUTF8 returns the offset of the first byte of data that is not
// UTF-8, or -1. It is checkText for text that is not JSON, such as a form
// field, where "\ud800" is six characters and no escape.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

// reasonNotUTF8 is the reason of an error for text that is not UTF-8.
const reasonNotUTF8 = app.ReasonNotUTF8

var escapeU = []byte(`\u`)

// loneSurrogate returns the offset of the first \u escape in data that is
// a surrogate not paired as \uD800–\uDBFF then \uDC00–\uDFFF, or -1.
func loneSurrogate(data []byte) int {
	for i := 0; ; {
		j := bytes.Index(data[i:], escapeU)
		if j < 0 {
			return -1
		}
		i += j
		if i+2 >= len(data) || data[i+2]|0x20 != 'd' || !startsEscape(data, i) {
			i += 2
			continue
		}
		r, ok := hex4(data[i+2:])
		switch {
		case !ok:
			i += 2 // a syntax error for the decoder
			continue
		case r >= 0xDC00 && r <= 0xDFFF:
			return i // a low half first
		case r >= 0xD800 && r <= 0xDBFF:
			if len(data) >= i+12 && data[i+6] == '\\' && data[i+7] == 'u' {
				if r2, ok := hex4(data[i+8:]); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
					i += 12
					continue
				}
			}
			return i // a high half without its low half
		}
		i += 6
	}
}

// startsEscape reports whether the backslash at data[i] starts an escape,
// not ends one: "\\ud800" is a backslash, then text. In JSON a backslash
// is only ever inside a string (outside, it does not parse), where a run
// of them is escaped backslashes in pairs, so the one at i starts an
// escape when an even number come right before it.
func startsEscape(data []byte, i int) bool {
	n := 0
	for i > 0 && data[i-1] == '\\' {
		i--
		n++
	}
	return n%2 == 0
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			c = c | 0x20 - 'a' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// textError is the answer to a body checkText refused at off: 400 naming
// the field whose name or value holds the offending bytes (the same path
// as every error: "subject", "attachments[0].filename", "metadata.a").
// An item of a list the handler decodes one by one ([]json.RawMessage:
// the messages of a batch, the suppressions of an import) is named by
// details.index as well, as that handler's own errors are. A body that is
// malformed before off gets the syntax error instead. This runs only once
// the check has failed.
func textError(data []byte, off int, lone bool, v any) error {
	trimmed := bytes.TrimLeftFunc(data, unicode.IsSpace)
	at, found, err := placeOf(trimmed, off-(len(data)-len(trimmed)))
	if err != nil {
		return syntaxError(err)
	}
	if !found {
		at.path = "body"
	}
	e := app.Validation(at.path, textReason(data, off, lone))
	if field, ok := jsonFields(v)[at.name]; ok && at.index >= 0 && field.Type() == rawListType {
		e = e.With("index", at.index)
	}
	return e
}

var rawListType = reflect.TypeFor[[]json.RawMessage]()

// textReason says what checkText found at off.
func textReason(data []byte, off int, lone bool) string {
	if !lone {
		return reasonNotUTF8
	}
	return fmt.Sprintf(`must not contain a lone UTF-16 surrogate (%s): a character above U+FFFF is sent as UTF-8 or as a pair of escapes such as \ud83d\ude00`, data[off:off+6])
}

// checkTextValue is checkText for data, a free-form JSON value that came
// in a form field rather than as a body (the dashboard's preview data).
// Its error names the path within the value ("name", "items[1]"; "" for
// the value itself), which fieldError puts the field's name in front of.
// In a value malformed before the bytes at fault, they are the value's.
func checkTextValue(data []byte) error {
	off, lone := checkText(data)
	if off < 0 {
		return nil
	}
	return textPathError(data, off, lone)
}

// textPathError is the error for the bytes at off of data, a JSON value,
// that are not text: it names their path within data ("" for data itself,
// or when data is malformed before them).
func textPathError(data []byte, off int, lone bool) error {
	trimmed := bytes.TrimLeftFunc(data, unicode.IsSpace)
	at, _, _ := placeOf(trimmed, off-(len(data)-len(trimmed)))
	return app.Validation(at.path, textReason(data, off, lone))
}

// A place is where a token of a JSON text stands: its path, and the
// top-level name and list index on the way to it.
type place struct {
	path  string
	name  string // the top-level field
	index int    // the item of that field's list, or -1
}

// placeOf finds the place of the token that holds byte off of data, a
// JSON text: a name or a value that is not an object or a list. found is
// false when none does (off is past the value); err is the decoder's when
// data is not JSON before off.
func placeOf(data []byte, off int) (at place, found bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e400 is a token too, not an error
	at.index = -1
	at.path, found, err = app.WalkJSON(dec, func(steps []app.JSONStep, _ bool) bool {
		if dec.InputOffset() <= int64(off) {
			return false
		}
		if len(steps) > 0 && steps[0].Member {
			at.name = steps[0].Name
		}
		if len(steps) > 1 && !steps[1].Member {
			at.index = steps[1].Index
		}
		return true
	})
	return at, found, err
}

// numberOutOfRange returns the offset in data, a JSON value, of the first
// number beyond the range of a float64 (1e400), or -1. Only a number with
// an exponent or of more than 300 digits can be: others are not parsed.
// It is for free-form values (template_data, metadata), where
// encoding/json would keep the number as written or as infinity; a typed
// field fails in the decoder and fieldError says why.
func numberOutOfRange(data []byte) int {
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			start, exp := i, false
			for ; i < len(data) && isNumberByte(data[i]); i++ {
				exp = exp || data[i]|0x20 == 'e'
			}
			if exp || i-start > 300 {
				if _, err := strconv.ParseFloat(string(data[start:i]), 64); err != nil {
					return start
				}
			}
			i--
		}
	}
	return -1
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// checkNumbers refuses data, a free-form JSON value, when it holds a
// number out of range, naming it by its path within the value ("a",
// "list[1].b"), which fieldError puts the field's name in front of.
func checkNumbers(data []byte) error {
	off := numberOutOfRange(data)
	if off < 0 {
		return nil
	}
	at, _, _ := placeOf(data, off)
	return app.Validation(at.path, "number out of range")
}
