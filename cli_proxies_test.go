package main

import (
	"net/http"
	"net/netip"
	"slices"
	"testing"
)

func TestTrustedProxiesFlag(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.0/8,nope"} {
		if _, err := run(t, "serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
			"--trusted-proxies", bad); err == nil {
			t.Errorf("--trusted-proxies %q accepted", bad)
		}
	}
	cfg := defaultServeConfig()
	cfg.trustedProxies = []string{"10.1.2.3/8", "2001:db8::1", "192.0.2.7", "::ffff:198.51.100.0/120"}
	got, err := cfg.proxies()
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::1/128"),
		netip.MustParsePrefix("192.0.2.7/32"), netip.MustParsePrefix("198.51.100.0/24")}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("proxies %v, %v", got, err)
	}

	// Behind the (loopback) proxy, each forwarded client has its own
	// per-IP budget; without the flag, the header buys nothing.
	status := func(base, xff string) int {
		req, _ := http.NewRequest("GET", base+"/v1/openapi.json", nil)
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	base, _, _ := startServe(t, t.TempDir(), "--ip-rate-limit", "1", "--trusted-proxies", "127.0.0.1,::1")
	if a, b := status(base, "192.0.2.1"), status(base, "192.0.2.2"); a != 200 || b != 200 {
		t.Errorf("behind a trusted proxy: %d, %d", a, b)
	}
	base, _, _ = startServe(t, t.TempDir(), "--ip-rate-limit", "1")
	// Three requests within at most two one-second windows: one is over.
	if a, b, c := status(base, "192.0.2.1"), status(base, "192.0.2.2"), status(base, "192.0.2.3"); a != 200 || (b != 429 && c != 429) {
		t.Errorf("untrusted peer: %d, %d, %d", a, b, c)
	}
}
