package web

import (
	"crypto/tls"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"mailbolt/app"
)

func TestResolveClient(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:f::/48")}
	cases := []struct {
		name, peer string
		hdr        []string
		proxies    []netip.Prefix
		client     string
		scheme     string
	}{
		{"no proxies: headers ignored", "198.51.100.9:4000",
			[]string{"X-Forwarded-For", "203.0.113.7", "Forwarded", "for=203.0.113.8", "X-Forwarded-Proto", "https"}, nil, "198.51.100.9", "http"},
		{"untrusted peer spoofs", "198.51.100.9:4000",
			[]string{"X-Forwarded-For", "203.0.113.7, 10.0.0.2", "X-Forwarded-Proto", "https"}, proxies, "198.51.100.9", "http"},
		{"untrusted peer spoofs Forwarded", "[2001:db8:1::5]:4000",
			[]string{"Forwarded", "for=10.0.0.1"}, proxies, "2001:db8:1::5", "http"},
		{"one trusted proxy", "10.0.0.1:4000",
			[]string{"X-Forwarded-For", "203.0.113.7", "X-Forwarded-Proto", "https"}, proxies, "203.0.113.7", "https"},
		{"client-written entries to the left do not count", "10.0.0.1:4000",
			[]string{"X-Forwarded-For", "1.1.1.1, 2.2.2.2, 203.0.113.7"}, proxies, "203.0.113.7", "http"},
		{"a chain of trusted proxies", "10.0.0.1:4000",
			[]string{"X-Forwarded-For", "1.1.1.1, 203.0.113.7, 10.9.9.9, [2001:db8:f::1]"}, proxies, "203.0.113.7", "http"},
		{"several header lines, in order", "10.0.0.1:4000",
			[]string{"X-Forwarded-For", "1.1.1.1", "X-Forwarded-For", "203.0.113.7, 10.0.0.3"}, proxies, "203.0.113.7", "http"},
		{"every hop trusted: the leftmost", "10.0.0.1:4000",
			[]string{"X-Forwarded-For", "10.0.0.3, 10.0.0.2"}, proxies, "10.0.0.3", "http"},
		{"unreadable entry: the last trusted hop", "10.0.0.1:4000",
			[]string{"X-Forwarded-For", "203.0.113.7, unknown, 10.0.0.2"}, proxies, "10.0.0.2", "http"},
		{"empty entry", "10.0.0.1:4000",
			[]string{"X-Forwarded-For", "203.0.113.7,"}, proxies, "10.0.0.1", "http"},
		{"no header from a trusted peer", "10.0.0.1:4000", nil, proxies, "10.0.0.1", "http"},
		{"Forwarded, RFC 7239 example", "10.0.0.1:4000",
			[]string{"Forwarded", `for=192.0.2.60;proto=http;by=203.0.113.43, for="[2001:db8:cafe::17]:4711"`}, proxies, "2001:db8:cafe::17", "http"},
		{"Forwarded through a trusted hop", "10.0.0.1:4000",
			[]string{"Forwarded", `for=192.0.2.60, For="10.1.1.1:80"`}, proxies, "192.0.2.60", "http"},
		{"Forwarded obfuscated node", "10.0.0.1:4000",
			[]string{"Forwarded", `for=192.0.2.60, for=_hidden`}, proxies, "10.0.0.1", "http"},
		{"X-Forwarded-For wins over Forwarded", "10.0.0.1:4000",
			[]string{"Forwarded", "for=192.0.2.60", "X-Forwarded-For", "203.0.113.7"}, proxies, "203.0.113.7", "http"},
		{"IPv4-mapped peer", "[::ffff:10.0.0.1]:4000",
			[]string{"X-Forwarded-For", "::ffff:203.0.113.7"}, proxies, "203.0.113.7", "http"},
		{"proto: the nearest proxy's word", "10.0.0.1:4000",
			[]string{"X-Forwarded-Proto", "https, http"}, proxies, "10.0.0.1", "http"},
		{"proto: nonsense ignored", "10.0.0.1:4000",
			[]string{"X-Forwarded-Proto", "gopher"}, proxies, "10.0.0.1", "http"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/account", nil)
		r.RemoteAddr = c.peer
		for i := 0; i+1 < len(c.hdr); i += 2 {
			r.Header.Add(c.hdr[i], c.hdr[i+1])
		}
		got := resolveClient(r, c.proxies)
		if got.addr.String() != c.client || got.scheme != c.scheme {
			t.Errorf("%s: client %s %s, want %s %s", c.name, got.addr, got.scheme, c.client, c.scheme)
		}
	}

	// TLS straight to the server is https whatever a header says.
	r := httptest.NewRequest("GET", "/v1/account", nil)
	r.TLS = &tls.ConnectionState{}
	r.Header.Set("X-Forwarded-Proto", "http")
	if got := resolveClient(r, nil); got.scheme != "https" {
		t.Errorf("TLS request: scheme %s", got.scheme)
	}
}

// GRADER_TRUST_FORWARDED_FOR without --trusted-proxies trusts a proxy on
// the same host only; it used to trust the first entry from any peer.
func TestTrustForwardedForMeansLoopbackOnly(t *testing.T) {
	cfg := configWith(func(c *Config) { c.TrustForwardedFor = true })
	for peer, want := range map[string]string{
		"127.0.0.1:5000":     "203.0.113.7",
		"[::1]:5000":         "203.0.113.7",
		"198.51.100.9:5000":  "198.51.100.9",
		"[2001:db8::9]:5000": "2001:db8::9",
	} {
		r := httptest.NewRequest("GET", "/v1/grader/check", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", "192.0.2.1, 203.0.113.7")
		if got := resolveClient(r, cfg.trustedProxies()).addr.String(); got != want {
			t.Errorf("peer %s: client %s, want %s", peer, got, want)
		}
	}
	// An explicit list replaces the loopback default.
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("X-Forwarded-For", "203.0.113.7")
	if got := resolveClient(r, cfg.trustedProxies()).addr.String(); got != "127.0.0.1" {
		t.Errorf("loopback trusted beside --trusted-proxies: %s", got)
	}
}

// Over HTTP: a spoofed header buys no fresh per-IP budget from an
// untrusted peer; behind a trusted proxy every client has its own, for the
// API's per-IP limit and the grader's alike.
func TestForwardedClientKeysLimits(t *testing.T) {
	get := func(e *env, xff string) reply {
		return e.public("GET", "/v1/openapi.json", "", "", "X-Forwarded-For", xff)
	}
	e := newEnv(t, configWith(func(c *Config) { c.IPRateLimit = 1 }))
	get(e, "192.0.2.1").want(t, 200)
	get(e, "192.0.2.2").want(t, 429, "RATE_LIMIT_EXCEEDED")

	loop := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	e = newEnv(t, configWith(func(c *Config) { c.IPRateLimit, c.TrustedProxies = 1, loop }))
	get(e, "192.0.2.1").want(t, 200)
	get(e, "192.0.2.2").want(t, 200)
	// A client that writes someone else's address to the left is still itself.
	get(e, "192.0.2.2, 192.0.2.1").want(t, 429, "RATE_LIMIT_EXCEEDED")
	get(e, "192.0.2.3, 127.0.0.1").want(t, 200) // through a second trusted hop

	g := newGraderEnv(t, configWith(func(c *Config) { c.GraderRateLimit, c.TrustedProxies = 1, loop }), nil)
	check := func(xff string) reply {
		return g.do("POST", "/v1/grader/check", "", map[string]any{"domain": "good.test"}, "X-Forwarded-For", xff)
	}
	check("192.0.2.1").want(t, 200)
	check("192.0.2.2").want(t, 200)
	check("192.0.2.9, 192.0.2.1").want(t, 429, "RATE_LIMITED")
}

// Opens and clicks record the forwarded client behind a trusted proxy, and
// the peer otherwise.
func TestForwardedClientInTracking(t *testing.T) {
	for _, c := range []struct {
		proxies []netip.Prefix
		want    string
	}{
		{nil, "127.0.0.1"},
		{[]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, "203.0.113.7"},
	} {
		sink := &captureSender{}
		e := newEnvWith(t, configWith(func(cfg *Config) { cfg.TrustedProxies = c.proxies }), func(o *app.Options) {
			o.PublicURL = "https://mail.acme.test"
			o.Delivery.Sender = sink
		})
		e.runWorkers()
		e.verifiedDomain("acme.test")
		e.do("POST", "/v1/messages", e.key, map[string]any{"from": "news@acme.test", "to": []string{"ann@dest.test"},
			"subject": "Hi", "html": trackedHTML, "tracking": map[string]bool{"opens": true}}).want(t, 202)
		deadline := time.Now().Add(10 * time.Second)
		for len(sink.sent()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("not sent")
			}
			time.Sleep(20 * time.Millisecond)
		}
		tok := openTokenRe.FindStringSubmatch(htmlOf(t, sink.sent()[0].Data))
		e.public("GET", "/v1/t/o/"+tok[1], "", "", "X-Forwarded-For", "203.0.113.7").want(t, 200)
		opens := e.eventsOf(e.key, app.EventOpened)
		if len(opens) != 1 || opens[0]["context"].(map[string]any)["ip"] != c.want {
			t.Errorf("proxies %v: opens %v, want ip %s", c.proxies, opens, c.want)
		}
	}
}
