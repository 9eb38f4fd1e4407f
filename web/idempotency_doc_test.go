package web

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestIdempotencyDocListsEveryWriteRoute holds the list of routes in
// docs/idempotency.md ("Where it applies") to the route table: every
// write route taken with a key honours Idempotency-Key (the middleware
// stores the answer of each; TestWriteRoutesCommitTheAnswerWithTheEffect
// replays them), so each is listed, and nothing else is.
func TestIdempotencyDocListsEveryWriteRoute(t *testing.T) {
	doc, err := os.ReadFile("../docs/idempotency.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Where it applies\n")
	section, _, _ = strings.Cut(section, "Routes answered without a key")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`(POST|PUT|PATCH|DELETE) (/v1/[^`]+)`").FindAllStringSubmatch(section, -1) {
		listed[m[1]+" "+m[2]] = true
	}
	param := regexp.MustCompile(`:([a-z_]+)`)
	var want []string
	for _, rt := range (&Server{}).routes() {
		if rt.Method == http.MethodGet || rt.Public {
			continue
		}
		route := rt.Method + " " + param.ReplaceAllString(rt.Path, "{$1}")
		want = append(want, route)
		if !listed[route] {
			t.Errorf("docs/idempotency.md does not list %s", route)
		}
	}
	for route := range listed {
		if !slices.Contains(want, route) {
			t.Errorf("docs/idempotency.md lists %s, which is not a write route taken with a key", route)
		}
	}
}
