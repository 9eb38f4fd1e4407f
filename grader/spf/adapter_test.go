package spf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	miekg "github.com/miekg/dns"

	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
)

// overDNS are suite cases run through *dns.Resolver against a real DNS
// server (mta/dns/dnstest), to prove the adapter: TXT records split into
// strings, A, AAAA, MX and null MX, PTR, NXDOMAIN against NODATA, and
// timeouts. Cases whose zones need what dnstest cannot serve are left out:
// CNAME chains, a TIMEOUT for one record type only, and (until
// dns.Resolver.LookupTXT returns raw bytes rather than miekg's escaped
// presentation text) non-ASCII records.
var overDNS = map[string]bool{
	"both": true, "txtonly": true, "alltimeout": true, // Record lookup
	"nospace1": true, "empty": true, "multitxt2": true, "case-insensitive": true, "nospf": true, // Selecting records
	"nolocalpart": true, "toolonglabel": true, "null-text": true, // Initial processing
	"a-dual-cidr-ip4-match": true, "a-dual-cidr-ip6-match": true, "a-cidr6-0-ip4mapped": true, "a-nxdomain": true,
	"mx-multi-ip1": true, "mx-empty": true, "mx-implicit": true, "mx-cidr6-0-ip6": true,
	"include-fail": true, "include-temperror": true, "include-none": true,
	"redirect-cancels-prior-exp": true, "exp-dns-error": true, "exp-multiple-txt": true,
	"exists-dnserr": true, "exists-ip6only": true,
	"void-over-limit": true, "void-at-limit": true, "mx-limit": true, "include-at-limit": true,
	"exp-txt-macro-char": true, "macro-multiple-delimiters": true, "upper-macro": true,
	"ptr-match-target": true, "ptr-match-ip6": true, "ptr-case-change": true, "p-macro-ip4-valid": true,
}

func TestMTAResolverOverDNS(t *testing.T) {
	ran := 0
	for _, s := range loadSuite(t, rfc7208Suite) {
		var names []string
		for name := range s.Tests {
			if overDNS[name] {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		addr := serveScenario(t, s.Zonedata)
		r := &dns.Resolver{Server: addr, Timeout: 300 * time.Millisecond}
		for _, name := range names {
			ran++
			t.Run(name, func(t *testing.T) {
				if why := s.Tests[name].run(r); why != "" {
					t.Error(why)
				}
			})
		}
	}
	if ran != len(overDNS) {
		t.Errorf("ran %d cases, listed %d", ran, len(overDNS))
	}
}

// TestMTAResolverOutcomes checks the three lookup outcomes end to end:
// NXDOMAIN and NODATA both spend a void lookup, SERVFAIL is TempError.
func TestMTAResolverOutcomes(t *testing.T) {
	s := dnstest.Start(t)
	s.TXT("two.example.com", "v=spf1 a:nx.example.com a:nodata.example.com -all")
	s.TXT("three.example.com", "v=spf1 a:nx.example.com a:nodata.example.com a:nx2.example.com -all")
	s.TXT("nodata.example.com", "not spf")
	s.TXT("broken.example.com", "v=spf1 a:sf.example.com -all")
	s.ServFail("sf.example.com", true)
	r := &dns.Resolver{Server: s.Addr, Timeout: time.Second}
	ip := net.ParseIP("192.0.2.1")
	for _, tc := range []struct {
		domain string
		want   Result
		err    error
	}{
		{"two.example.com", Fail, nil},
		{"three.example.com", PermError, ErrTooManyVoidLookups},
		{"broken.example.com", TempError, ErrDNS},
		{"nodata.example.com", None, nil},
		{"nx.example.com", None, nil},
	} {
		res, _, err := Check(context.Background(), r, ip, tc.domain, "", "helo.example.com")
		if res != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: got %s, %v; want %s, %v", tc.domain, res, err, tc.want, tc.err)
		}
	}
	// The resolver's error is kept for diagnosis.
	_, _, err := Check(context.Background(), r, ip, "broken.example.com", "", "h")
	if !dns.IsTemporary(err) {
		t.Errorf("temperror does not wrap the dns.TempError: %v", err)
	}
}

// serveScenario starts a dnstest server holding the zone, and returns the
// address to query. dnstest has no PTR records, so when the zone has some
// a small front server answers PTR queries and hands every other query to
// dnstest's own handler.
func serveScenario(t *testing.T, data map[string][]any) string {
	t.Helper()
	s := dnstest.Start(t)
	ptrs := map[string][]string{}
	for name, entries := range data {
		var spf [][]string
		ownTXT := false
		for _, entry := range entries {
			if e, ok := entry.(string); ok && e == "TIMEOUT" {
				s.Silent(name, true)
				continue
			}
			for typ, v := range entry.(map[string]any) {
				switch typ {
				case "A", "AAAA":
					s.A(name, fmt.Sprint(v))
				case "MX":
					l := v.([]any)
					s.MX(name, uint16(l[0].(int)), fmt.Sprint(l[1]))
				case "PTR":
					k := strings.ToLower(miekg.Fqdn(name))
					ptrs[k] = append(ptrs[k], fmt.Sprint(v))
				case "TXT":
					ownTXT = true
					if strs := txtStrings(v); len(strs) != 1 || strs[0] != "NONE" {
						s.TXT(name, strs...)
					}
				case "SPF":
					spf = append(spf, txtStrings(v))
				}
			}
		}
		if !ownTXT {
			for _, strs := range spf {
				s.TXT(name, strs...)
			}
		}
	}
	if len(ptrs) == 0 {
		return s.Addr
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := &miekg.Server{PacketConn: pc, Handler: miekg.HandlerFunc(func(w miekg.ResponseWriter, req *miekg.Msg) {
		q := req.Question[0]
		targets, ok := ptrs[strings.ToLower(q.Name)]
		if q.Qtype != miekg.TypePTR || !ok {
			s.ServeDNS(w, req)
			return
		}
		m := new(miekg.Msg)
		m.SetReply(req)
		for _, target := range targets {
			m.Answer = append(m.Answer, &miekg.PTR{Hdr: miekg.RR_Header{Name: q.Name, Rrtype: miekg.TypePTR, Class: miekg.ClassINET, Ttl: 60}, Ptr: miekg.Fqdn(target)})
		}
		w.WriteMsg(m)
	})}
	go front.ActivateAndServe()
	t.Cleanup(func() { front.Shutdown() })
	return pc.LocalAddr().String()
}

func txtStrings(v any) []string {
	l, ok := v.([]any)
	if !ok {
		return []string{fmt.Sprint(v)}
	}
	out := make([]string, 0, len(l))
	for _, s := range l {
		out = append(out, fmt.Sprint(s))
	}
	return out
}
