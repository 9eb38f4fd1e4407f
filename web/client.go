package web

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Who a request comes from. Per-IP rate limits, the grader's per-IP limit
// and the ip and geo of opens and clicks all key on it, so it is decided
// once, here, in ServeHTTP:
//
//   - The TCP peer is the client unless it is a trusted proxy
//     (Config.TrustedProxies). A header from any other peer is ignored: it
//     would let a client pick its own rate-limit bucket or forge the
//     address an open is recorded from.
//   - Behind trusted proxies the client is the rightmost address of the
//     forwarding chain that is not itself a trusted proxy. Each proxy
//     appends the address it took the request from, so everything to the
//     left of that entry was written by the client and proves nothing.
//     X-Forwarded-For is read when present, else Forwarded (RFC 7239 for=).
//   - X-Forwarded-Proto counts only from a trusted proxy; the request's
//     scheme is kept for what needs it (Secure cookies, HSTS).

// LoopbackProxies are the ranges trusted when GRADER_TRUST_FORWARDED_FOR
// is set without a list of trusted proxies: a proxy on the same host.
var LoopbackProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// clientKey carries the request's client on its context.
type clientKey struct{}

// client is who a request comes from.
type client struct {
	addr   netip.Addr // the client; invalid when RemoteAddr is not an address
	peer   netip.Addr // the TCP peer
	scheme string     // "https" or "http" as the client used it
}

// trustedProxies are the ranges whose forwarding headers count.
func (cfg Config) trustedProxies() []netip.Prefix {
	if len(cfg.TrustedProxies) == 0 && cfg.TrustForwardedFor {
		return LoopbackProxies
	}
	return cfg.TrustedProxies
}

func trusted(list []netip.Prefix, a netip.Addr) bool {
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// resolveClient decides who r comes from (see above).
func resolveClient(r *http.Request, proxies []netip.Prefix) client {
	c := client{scheme: "http"}
	if r.TLS != nil {
		c.scheme = "https"
	}
	c.peer = parseHostAddr(r.RemoteAddr)
	c.addr = c.peer
	if !c.peer.IsValid() || !trusted(proxies, c.peer) {
		return c
	}
	if proto := lastListItem(r.Header.Values("X-Forwarded-Proto")); strings.EqualFold(proto, "https") || strings.EqualFold(proto, "http") {
		c.scheme = strings.ToLower(proto)
	}
	var chain []string
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		chain = splitList(xff)
	} else {
		chain = forwardedFor(r.Header.Values("Forwarded"))
	}
	// Walk from the right: each trusted hop vouches for the entry to its
	// left. Stop at the first address that is not a trusted proxy, or keep
	// the last trusted hop when an entry cannot be read ("unknown", an
	// obfuscated name, garbage): it was not written by a trusted proxy.
	for i := len(chain) - 1; i >= 0; i-- {
		a := parseHostAddr(chain[i])
		if !a.IsValid() {
			break
		}
		c.addr = a
		if !trusted(proxies, a) {
			break
		}
	}
	return c
}

// parseHostAddr reads "1.2.3.4", "2001:db8::1", "[2001:db8::1]" and either
// with a port; IPv4-mapped IPv6 becomes IPv4 and zones are dropped. The
// zero Addr when s is none of those.
func parseHostAddr(s string) netip.Addr {
	s = strings.TrimSpace(s)
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}

// splitList splits comma-separated header values, in order, over all the
// header's lines.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			out = append(out, strings.TrimSpace(item))
		}
	}
	return out
}

func lastListItem(values []string) string {
	items := splitList(values)
	if len(items) == 0 {
		return ""
	}
	return items[len(items)-1]
}

// forwardedFor lists the for= node of each element of RFC 7239 Forwarded
// headers, in order; an element without one gives "".
func forwardedFor(values []string) []string {
	var out []string
	for _, elem := range splitList(values) {
		node := ""
		for pair := range strings.SplitSeq(elem, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "for") {
				node = strings.Trim(strings.TrimSpace(v), `"`)
			}
		}
		out = append(out, node)
	}
	return out
}

// clientOf is the client ServeHTTP resolved for r.
func clientOf(r *http.Request) client {
	if c, ok := r.Context().Value(clientKey{}).(client); ok {
		return c
	}
	return resolveClient(r, nil)
}

func withClient(r *http.Request, c client) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), clientKey{}, c))
}

// clientIP is the client's address as text: the key of per-IP limits and
// the ip of tracking events. RemoteAddr itself when it holds no address
// (a test transport, a unix socket).
func clientIP(r *http.Request) string {
	if c := clientOf(r); c.addr.IsValid() {
		return c.addr.String()
	}
	return r.RemoteAddr
}

// requestScheme is "https" when the client reached the server over TLS,
// directly or through a trusted proxy that said so, else "http".
func requestScheme(r *http.Request) string { return clientOf(r).scheme }
