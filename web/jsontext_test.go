package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"mailbolt/app"
)

// TestCheckText: checkText finds bytes that are not UTF-8 and \u escapes
// of surrogates that are not paired, where they start, and nothing in
// text that only looks like them.
func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		body string
		off  int
		lone bool
	}{
		{`{"subject":"hello"}`, -1, false},
		{`{"subject":"café ☕ 😀"}`, -1, false},
		{`{"subject":"caf\u00e9 \u2615"}`, -1, false},
		{`{"subject":"\ud83d\ude00"}`, -1, false},             // a pair
		{`{"subject":"\uD83D\uDE00\uDbFf\udFfF"}`, -1, false}, // pairs, any case
		{`{"subject":"\\ud800"}`, -1, false},                  // an escaped backslash, then text
		{`{"subject":"\\\\ud800 \\\ud83d\ude00"}`, -1, false},
		{`{"subject":"\u0064\ud7ff\ue000"}`, -1, false}, // next to the range
		{`{"subject":"a\"\\\/\b\f\n\r\t"}`, -1, false},
		{"{\"subject\":\"\xff\xfe\"}", 12, false},
		{"{\"subject\":\"ok \xe2\x82\"}", 15, false},     // cut short
		{"{\"subject\":\"\xc0\x80\"}", 12, false},        // overlong
		{"{\"subject\":\"\xed\xa0\x80\"}", 12, false},    // a surrogate encoded as UTF-8
		{"{\"sub\x80ject\":\"x\"}", 5, false},            // in a name
		{`{"subject":"\ud800"}`, 12, true},               // a high half alone
		{`{"subject":"\udc00\ud800"}`, 12, true},         // a low half first
		{`{"subject":"x\uD800\u0041"}`, 13, true},        // a high half, then no low half
		{`{"subject":"\ud83d\ud83d\ude00"}`, 12, true},   // two high halves
		{`{"subject":"\ud83d\ude00\ude00"}`, 24, true},   // a low half over
		{`{"subject":"\ud83d"}`, 12, true},               // at the end of the string
		{`{"subject":"\\\ud800"}`, 14, true},             // after an escaped backslash
		{`{"subject":"\\\\\ud800"}`, 16, true},           // after two
		{`{"subject":"\ud83d\\ude00"}`, 12, true},        // a high half, then a backslash
		{`{"a":"\\","subject":"\udfff"}`, 21, true},      // a string that ends in a backslash before it
		{`{"subject":"\ud83d\`, 12, true},                // cut short
		{`{"subject":"\ud83d\u`, 12, true},               // cut short
		{"{\"a\":\"\xff\",\"b\":\"\\ud800\"}", 6, false}, // the first problem
	} {
		off, lone := checkText([]byte(c.body))
		if off != c.off || lone != c.lone {
			t.Errorf("%q: checkText = %d, %v; want %d, %v", c.body, off, lone, c.off, c.lone)
		}
	}
}

// TestDecodeStrictRefusesBadText: a body with invalid UTF-8 or a lone
// surrogate is 400 VALIDATION_ERROR naming the field that holds it, at any
// depth, and an item of a batch or an import by details.index too; a body
// malformed before the problem gets the syntax error.
func TestDecodeStrictRefusesBadText(t *testing.T) {
	lone := `must not contain a lone UTF-16 surrogate (\ud800): a character above U+FFFF is sent as UTF-8 or as a pair of escapes such as \ud83d\ude00`
	for _, c := range []struct {
		body   string
		v      func() any
		field  string
		reason string
		index  any
	}{
		{`{"subject":"\ud800"}`, msg, "subject", lone, nil},
		{"{\"subject\":\"x\xff\xfe\"}", msg, "subject", "must be valid UTF-8", nil},
		{"  \n{\"to\":[\"a@b.test\",\"\xffb@c.test\"]}", msg, "to[1]", "must be valid UTF-8", nil},
		{`{"attachments":[{"filename":"a"},{"filename":"\ud800.txt"}]}`, msg, "attachments[1].filename", lone, nil},
		{`{"headers":{"X-A":"1","X-B":"\ud800"}}`, msg, "headers.X-B", lone, nil},
		{`{"metadata":{"order":{"id":["1","\ud800"]}}}`, msg, "metadata.order.id[1]", lone, nil},
		{`{"template_data":{"name":"\ud800"}}`, msg, "template_data.name", lone, nil},
		{"{\"sub\xffject\":\"x\"}", msg, "sub\uFFFDject", "must be valid UTF-8", nil},
		{`{"messages":[{"subject":"a"},{"subject":"\ud800"}]}`, func() any { return new(batchRequest) }, "messages[1].subject", lone, 1},
		{`{"messages":[{"tags":["a","\ud800"]}]}`, func() any { return new(batchRequest) }, "messages[0].tags[1]", lone, 0},
		{`{"suppressions":[{"recipient":"a@b.test"},{"recipient":"\ud800@b.test"}]}`, func() any { return new(importSuppressionsRequest) }, "suppressions[1].recipient", lone, 1},
		{`{"messages":[{"subject":"a"}],"messages":"\ud800"}`, func() any { return new(batchRequest) }, "messages", lone, nil},            // past the list: no index
		{`{"suppressions":[{"recipient":"a@b.test"}]} "\ud800"`, func() any { return new(importSuppressionsRequest) }, "body", lone, nil}, // past the value
		{`{"subject":"a" "b":"\ud800"}`, msg, "body", "invalid JSON at byte 15: invalid character '\"' after object key:value pair", nil},
	} {
		err := decodeStrict([]byte(c.body), c.v())
		e := app.AsError(err)
		if e == nil || e.Code != app.CodeValidation {
			t.Errorf("%q: %v, want VALIDATION_ERROR", c.body, err)
			continue
		}
		if e.Details["field"] != c.field || e.Details["reason"] != c.reason || e.Details["index"] != c.index {
			t.Errorf("%q: field %q reason %q index %v; want %q %q %v", c.body, e.Details["field"], e.Details["reason"], e.Details["index"], c.field, c.reason, c.index)
		}
	}
	// Text that is fine still decodes, pairs and escaped backslashes whole.
	var m messageRequest
	if err := decodeStrict([]byte(`{"subject":"\ud83d\ude00 \\ud800 caf\u00e9"}`), &m); err != nil || *m.Subject != `😀 \ud800 café` {
		t.Fatalf("good text: %v, %q", err, *m.Subject)
	}
}

func msg() any { return new(messageRequest) }

// FuzzCheckText holds checkText to what encoding/json does: a JSON text
// it accepts decodes with no U+FFFD in any name or string, and one it
// refuses has a U+FFFD that encoding/json made up (bodies that write
// U+FFFD themselves are left out).
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":["\\ud800",{"\udc00":1}]}`, `{"a":"\uD83D\uDE00\\"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(strings.ToLower(body), "fffd") || strings.ContainsRune(body, utf8.RuneError) {
			return
		}
		made := false
		dec := json.NewDecoder(strings.NewReader(body))
		for {
			tok, err := dec.Token()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					return // not JSON: the decoder's error comes first or after
				}
				break
			}
			if s, ok := tok.(string); ok && strings.ContainsRune(s, utf8.RuneError) {
				made = true
			}
		}
		if off, _ := checkText([]byte(body)); (off >= 0) != made {
			t.Fatalf("%q: checkText says %d, encoding/json made U+FFFD: %v", body, off, made)
		}
	})
}

// TestNumberOutOfRange: only a number past a float64's range is found,
// never one inside a string, and where it starts.
func TestNumberOutOfRange(t *testing.T) {
	for _, c := range []struct {
		value string
		off   int
	}{
		{`{"a":1,"b":-2.5e10,"c":1e308,"d":1e-400,"e":12345678901234567890}`, -1},
		{`{"s":"1e400","t":"\"1e400"}`, -1},
		{`{"a":1e400}`, 5},
		{`{"a":[true,null,-1E+999]}`, 16},
		{`[1,{"b":1e400}]`, 8},
		{`{"a":1` + strings.Repeat("0", 400) + `}`, 5},
		{`{"a":0.` + strings.Repeat("0", 400) + `1}`, -1},
	} {
		if off := numberOutOfRange([]byte(c.value)); off != c.off {
			t.Errorf("%s: %d, want %d", c.value, off, c.off)
		}
	}
	if e := app.AsError(checkNumbers([]byte(`{"a":{"b":[1,-1e999]}}`))); e == nil || e.Details["field"] != "a.b[1]" || e.Details["reason"] != "number out of range" {
		t.Errorf("checkNumbers: %v", e)
	}
}

// BenchmarkCheckText measures decodeStrict's text check alone: ASCII
// with escapes but no \u, and escapes of which some are surrogate pairs.
func BenchmarkCheckText(b *testing.B) {
	plain := bytes.Repeat([]byte(`{"text":"the quick brown fox jumps over the lazy dog\n"}`), 1000)
	escapes := bytes.Repeat([]byte(`{"html":"<p class=\"x\">caf\u00e9 \ud83c\udf89<\/p>\n"}`), 1000)
	for _, c := range []struct {
		name string
		body []byte
	}{{"plain", plain}, {"surrogate-pairs", escapes}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for range b.N {
				if off, _ := checkText(c.body); off >= 0 {
					b.Fatal(off)
				}
			}
		})
	}
}
