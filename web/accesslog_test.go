package web

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Link tokens (open, click, unsubscribe, invitation) are credentials: a
// log line that held one would let whoever reads the log replay it. The
// access log names the route pattern and the request id, never the path.
func TestAccessLogNamesRoutesNotTokens(t *testing.T) {
	var buf syncLog
	var mu sync.Mutex
	observed := map[string]string{} // method route status -> ""
	e := newEnv(t, configWith(func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		c.IPRateLimit = 100000
		// The request metric is fed the same route as the log.
		c.Observe = func(route, method string, status int, d time.Duration) {
			mu.Lock()
			observed[method+" "+route] = fmt.Sprint(status)
			mu.Unlock()
		}
	}))
	inv := e.do("POST", "/v1/team/invite", e.key, `{"email":"ann@example.com","role":"viewer"}`).want(t, 201).json(t)
	invToken, _ := inv["accept_token"].(string)
	if invToken == "" {
		t.Fatalf("no accept_token in %v", inv)
	}

	const fake = "SECRETtok3nXYZ0123456789abcdefghij"
	type probe struct{ method, path, route string }
	var probes []probe
	// Every public route with a token, from the route table, so a token
	// route added later is covered too.
	for _, rt := range (&Server{}).routes() {
		if !rt.Public || !strings.Contains(rt.Path, ":token") {
			continue
		}
		probes = append(probes, probe{rt.Method, strings.Replace(rt.Path, ":token", fake, 1), rt.Path})
		if strings.HasPrefix(rt.Path, "/v1/team/accept/") {
			probes = append(probes, probe{rt.Method, strings.Replace(rt.Path, ":token", invToken, 1), rt.Path})
		}
	}
	if len(probes) < 7 {
		t.Fatalf("only %d token routes found: %v", len(probes), probes)
	}
	// Paths no route takes may carry a token as well.
	probes = append(probes,
		probe{"GET", "/v1/t/c/" + fake + "/more", unmatchedRoute},
		probe{"DELETE", "/v1/u/" + fake, unmatchedRoute},
		probe{"GET", "/" + fake, unmatchedRoute})

	for i, p := range probes {
		reqID := "tok-probe-" + string(rune('a'+i))
		e.public(p.method, p.path, formType, "List-Unsubscribe=One-Click", "X-Request-Id", reqID)
		line := logLine(t, &buf, reqID)
		if line["route"] != p.route || line["method"] != p.method {
			t.Errorf("%s %s: route %v, method %v; want %s", p.method, p.path, line["route"], line["method"], p.route)
		}
		if _, ok := line["account"]; ok {
			t.Errorf("%s %s, sent without a key, logged account %q", p.method, p.path, line["account"])
		}
		mu.Lock()
		if st, ok := observed[p.method+" "+p.route]; !ok || st != fmt.Sprint(line["status"]) {
			t.Errorf("%s %s: not observed as %s %s with status %v (%v)", p.method, p.path, p.method, p.route, line["status"], observed)
		}
		mu.Unlock()
	}
	// The health probes are routes of their own, without an account; a
	// method they do not take matches none.
	for i, p := range []probe{{"GET", "/healthz", "/healthz"}, {"HEAD", "/readyz", "/readyz"}, {"POST", "/healthz", unmatchedRoute}} {
		reqID := "health-probe-" + string(rune('a'+i))
		req, _ := http.NewRequest(p.method, e.srv.URL+p.path, nil)
		req.Header.Set("X-Request-Id", reqID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		line := logLine(t, &buf, reqID)
		if _, ok := line["account"]; line["route"] != p.route || ok {
			t.Errorf("%s %s: logged route %v, account %v; want route %s and no account", p.method, p.path, line["route"], line["account"], p.route)
		}
		mu.Lock()
		if _, ok := observed[p.method+" "+p.route]; !ok {
			t.Errorf("%s %s: not observed as route %s (%v)", p.method, p.path, p.route, observed)
		}
		mu.Unlock()
	}
	for k := range observed {
		if strings.Contains(k, fake) || strings.Contains(k, invToken) {
			t.Errorf("a token reached the request metric: %s", k)
		}
	}
	for _, tok := range []string{fake, invToken} {
		if strings.Contains(buf.String(), tok) {
			t.Fatalf("a token is in the log:\n%s", buf.String())
		}
	}
}

// logLine is the access log line of the request with id reqID.
func logLine(t *testing.T, buf *syncLog, reqID string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) == nil && line["msg"] == "request" && line["request_id"] == reqID {
			return line
		}
	}
	t.Fatalf("no access log line for %s in:\n%s", reqID, buf.String())
	return nil
}
