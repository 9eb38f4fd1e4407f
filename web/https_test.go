package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPlainHTTPWithHTTPSOn: what the plain-HTTP address answers once the
// API is served over HTTPS (docs/tls.md), checked against the OpenAPI
// document like every other answer.
func TestPlainHTTPWithHTTPSOn(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	api := e.srv.Config.Handler.(*Server)
	const httpsURL = "https://mail.mailbolt.test"
	plain := httptest.NewServer(api.PlainHTTP(httpsURL + "/"))
	defer plain.Close()

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/account", nil},
		{"POST", "/v1/messages", map[string]any{"from": "a@b.test", "to": []string{"c@d.test"}, "subject": "s", "text": "t"}},
		{"DELETE", "/v1/webhooks/x", nil},
		{"GET", "/v1/team/accept/token", nil},
		{"GET", "/elsewhere", nil},
	} {
		r := doRequest(t, plain.URL, c.method, c.path, e.key, c.body).want(t, http.StatusForbidden, "HTTPS_REQUIRED")
		if got := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["https_url"]; got != httpsURL {
			t.Errorf("%s %s: https_url %v", c.method, c.path, got)
		}
		if r.Header.Get("Location") != "" || r.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s %s: Location %q, HSTS %q", c.method, c.path, r.Header.Get("Location"), r.Header.Get("Strict-Transport-Security"))
		}
	}

	// Probes and the links in sent mail are served as usual.
	for _, p := range []string{"/healthz", "/readyz"} {
		status := func(base string) int {
			resp, err := http.Get(base + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got, want := status(plain.URL), status(e.srv.URL); got != want || got == http.StatusForbidden {
			t.Errorf("GET %s over plain HTTP: %d, directly %d", p, got, want)
		}
	}
	doRequest(t, plain.URL, "GET", "/v1/u/not-a-token", "", nil).want(t, http.StatusNotFound, "NOT_FOUND")

	// Behind a listed proxy that terminated TLS, the API is served.
	trusted := newEnv(t, configWith(func(c *Config) { c.TrustedProxies = LoopbackProxies }))
	behind := httptest.NewServer(trusted.srv.Config.Handler.(*Server).PlainHTTP(httpsURL))
	defer behind.Close()
	doRequest(t, behind.URL, "GET", "/v1/account", trusted.key, nil, "X-Forwarded-Proto", "https").want(t, http.StatusOK)
	doRequest(t, behind.URL, "GET", "/v1/account", trusted.key, nil, "X-Forwarded-Proto", "http").want(t, http.StatusForbidden, "HTTPS_REQUIRED")
	doRequest(t, plain.URL, "GET", "/v1/account", e.key, nil, "X-Forwarded-Proto", "https").want(t, http.StatusForbidden, "HTTPS_REQUIRED")

	// Dashboard pages redirect; other methods on them do not.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/", "/dashboard", "/dashboard/messages?page=2"} {
		resp, err := client.Get(plain.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != httpsURL+p {
			t.Errorf("GET %s: %d to %q", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, err := client.Post(plain.URL+"/dashboard/x", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
		t.Errorf("POST /dashboard/x: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestHSTS: every answer through HSTS carries the header, errors too.
func TestHSTS(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	secure := httptest.NewTLSServer(HSTS(e.srv.Config.Handler))
	defer secure.Close()
	for _, p := range []string{"/v1/account", "/v1/nothing", "/healthz"} {
		req, _ := http.NewRequest("GET", secure.URL+p, nil)
		req.Header.Set("X-API-Key", e.key)
		resp, err := secure.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Strict-Transport-Security"); got != HSTSValue {
			t.Errorf("GET %s (%d): Strict-Transport-Security %q", p, resp.StatusCode, got)
		}
	}
}
