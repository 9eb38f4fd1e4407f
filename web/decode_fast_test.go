package web

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"mailbolt/app"
)

// decodeBoth runs the one-pass path and the careful path on body and
// fails when they differ in the error or in the value decoded.
func decodeBoth(t testing.TB, body string) {
	t.Helper()
	var fast, careful messageRequest
	errFast := decodeStrict([]byte(body), &fast)
	var errCareful error
	if trimmed := bytes.TrimSpace([]byte(body)); len(trimmed) == 0 || trimmed[0] != '{' {
		errCareful = app.Validation("body", "must be a JSON object")
	} else if off, lone := checkText([]byte(body)); off >= 0 {
		errCareful = textError([]byte(body), off, lone, &careful)
	} else {
		errCareful = decodeCareful(trimmed, &careful)
	}
	if (errFast == nil) != (errCareful == nil) || (errFast != nil && errFast.Error() != errCareful.Error()) {
		t.Fatalf("body %q: one pass says %v, careful says %v", body, errFast, errCareful)
	}
	if errFast == nil && !reflect.DeepEqual(fast, careful) {
		t.Fatalf("body %q: one pass decoded %+v, careful %+v", body, fast, careful)
	}
}

func TestDecodeStrictOnePassAgreesWithCareful(t *testing.T) {
	for _, body := range []string{
		`{}`,
		` { } `,
		`{"from":"a@b.test","to":["c@d.test"],"subject":"hi","text":"x"}`,
		`{"from":"a@b.test","to":"c@d.test","attachments":[{"filename":"a.txt","content":"eA=="}],"tracking":{"opens":true}}`,
		`{"from":"a\"b@b.test","metadata":{"k":["}",{"x":"]"}]},"tags":["a,b","c}"]}`,
		`{"template_data":{"a":[1,2,{"b":null}],"c":"\\"}"},"template_version":3,"require_tls":true}`,
		`{"From":"a@b.test"}`,                          // a name in another case
		`{"from":"a@b.test","from":"c@d.test"}`,        // repeated
		`{"fr\u006fm":"a@b.test"}`,                     // an escaped name
		`{"subject":null}`,                             // null where a pointer may be nil
		`{"from":null}`,                                // null where it may not
		`{"unsubscribe":null}`,                         // a pointer that takes no null
		`{"metadata":null}`,                            // an optional object
		`{"from":1}`,                                   // wrong type
		`{"template_version":"3"}`,                     // wrong type
		`{"from":"a@b.test"} {}`,                       // trailing data
		`{"from":"a@b.test",}`,                         // trailing comma
		`{"from" "a@b.test"}`,                          // no colon
		`{"from":"a@b.test"`,                           // cut short
		`{"attachments":[{"filename":"a","bogus":1}]}`, // unknown nested name
		`{"tracking":{"opens":true,"opens":false}}`,    // repeated nested name
		`{"to":["a@b.test",]}`,
		`{"send_at":"tomorrow"}`,
		`{"send_at":123}`,
		`{"tags":["a",5],"headers":{"X-Foo":5}}`,
		`{"attachments":[{"filename":"a"},{"filename":5}]}`,
		`{"headers":{"X-A":"1"},"unknown":2}`,
		`{"headers":{"X-A":"1","X-A":"2"}}`,
		`{"headers":{"X-A":null}}`,
	} {
		decodeBoth(t, body)
	}
}

func FuzzDecodeStrictOnePass(f *testing.F) {
	for _, s := range []string{`{"from":"a@b.test","to":["c@d.test"]}`, `{"tracking":{"opens":null}}`, `{"metadata":{"a":"}"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		decodeBoth(t, body)
	})
}

func BenchmarkDecodeStrict(b *testing.B) {
	body := []byte(`{"from":"bench@bench.test","to":["rcpt@d3.sink.test"],"subject":"bench message 123","text":"` +
		strings.Repeat("the quick brown fox jumps over the lazy dog\\n", 45) + `","tags":["bench"],"metadata":{"run":"1"}}`)
	headers := []byte(`{"from":"bench@bench.test","to":["rcpt@d3.sink.test"],"subject":"bench message 123","text":"hello",` +
		`"headers":{"X-Campaign":"november","X-Entity-Ref-ID":"a1b2c3","X-Priority":"3","In-Reply-To":"<x@bench.test>"}}`)
	// escapes: \u escapes, surrogate pairs among them, which the check for
	// lone surrogates reads one by one; attachment: a 192 KiB attachment,
	// decoded a second time as a nested object.
	escapes := []byte(`{"from":"bench@bench.test","to":["rcpt@d3.sink.test"],"subject":"caf\u00e9 \ud83d\ude00 123","html":"` +
		strings.Repeat(`<p class=\"x\">caf\u00e9 \ud83c\udf89 na\u00efve<\/p>\n`, 45) + `","tags":["bench"]}`)
	attachment := []byte(`{"from":"bench@bench.test","to":["rcpt@d3.sink.test"],"subject":"bench message 123","text":"hello",` +
		`"attachments":[{"filename":"a.bin","content":"` + strings.Repeat("QUJD", 48<<10) + `"}]}`)
	for _, path := range []string{"one-pass", "careful", "headers", "escapes", "attachment"} {
		b.Run(path, func(b *testing.B) {
			body := body
			switch path {
			case "headers":
				body = headers
			case "escapes":
				body = escapes
			case "attachment":
				body = attachment
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				var m messageRequest
				var err error
				if path == "careful" {
					err = decodeCareful(body, &m)
				} else {
					err = decodeStrict(body, &m)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// timeoutReader fails as a read past the connection's read deadline does.
type timeoutReader struct{}

func (timeoutReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

// A body that does not arrive in time is 408 REQUEST_TIMEOUT (retry), not
// 400 (fix the request), and no error text of the connection reaches the
// client.
func TestReadBodyTimeoutIs408(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/messages", io.MultiReader(strings.NewReader(`{"from":`), timeoutReader{}))
	_, err := readBody(r, 1<<20)
	if e := app.AsError(err); e == nil || e.Code != app.CodeRequestTimeout || e.Status() != 408 {
		t.Fatalf("a body past the read deadline: %v, want 408 REQUEST_TIMEOUT", err)
	}
	r = httptest.NewRequest("POST", "/v1/messages", io.MultiReader(strings.NewReader(`{"from":`), iotest.ErrReader(errors.New("read tcp 127.0.0.1:8080->127.0.0.1:5555: connection reset"))))
	_, err = readBody(r, 1<<20)
	if e := app.AsError(err); e == nil || e.Code != app.CodeValidation || strings.Contains(e.Message, "127.0.0.1") {
		t.Fatalf("a body broken off: %v, want 400 without the connection's addresses", err)
	}
}
