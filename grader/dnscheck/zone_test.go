package dnscheck

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"mailbolt/mta/dnstest"
)

// zone is a loopback DNS server for these tests: mta/dnstest's records,
// plus what dnstest does not serve — PTR records and a wildcard TXT —
// answered here and everything else handed to the dnstest.Server's
// handler. It adds nothing to dnstest itself.
type zone struct {
	*dnstest.Server
	Addr string

	mu       sync.Mutex
	ptr      map[string][]string // reverse name → PTR targets
	wildcard map[string]string   // suffix ("._domainkey.example.com.") → TXT text
	explicit map[string]bool     // names under a wildcard that dnstest answers
}

func startZone(t testing.TB) *zone {
	t.Helper()
	z := &zone{Server: dnstest.Start(t), ptr: map[string][]string{}, wildcard: map[string]string{}, explicit: map[string]bool{}}
	var pc net.PacketConn
	var ln net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		if attempt == 20 {
			t.Fatal(err)
		}
	}
	z.Addr = pc.LocalAddr().String()
	udp := &dns.Server{PacketConn: pc, Handler: z}
	tcp := &dns.Server{Listener: ln, Handler: z}
	go udp.ActivateAndServe()
	go tcp.ActivateAndServe()
	t.Cleanup(func() {
		udp.Shutdown()
		tcp.Shutdown()
	})
	return z
}

// PTR adds a PTR record for ip.
func (z *zone) PTR(ip, name string) {
	arpa, err := dns.ReverseAddr(ip)
	if err != nil {
		panic(err)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.ptr[arpa] = append(z.ptr[arpa], dns.Fqdn(name))
}

// Wildcard makes every TXT query under suffix answer text, except names
// given to Explicit.
func (z *zone) Wildcard(suffix, text string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.wildcard["."+dns.Fqdn(strings.ToLower(suffix))] = text
}

// Explicit exempts name from the wildcard (an explicit record wins).
func (z *zone) Explicit(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.explicit[dns.Fqdn(strings.ToLower(name))] = true
}

func (z *zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) == 1 {
		q := req.Question[0]
		name := strings.ToLower(q.Name)
		z.mu.Lock()
		ptrs, isPTR := z.ptr[name]
		var text string
		var wild bool
		if q.Qtype == dns.TypeTXT && !z.explicit[name] {
			for suffix, t := range z.wildcard {
				if strings.HasSuffix(name, suffix) {
					text, wild = t, true
				}
			}
		}
		z.mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		switch {
		case q.Qtype == dns.TypePTR && isPTR:
			for _, p := range ptrs {
				m.Answer = append(m.Answer, &dns.PTR{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60}, Ptr: p})
			}
			w.WriteMsg(m)
			return
		case q.Qtype == dns.TypePTR:
			m.Rcode = dns.RcodeNameError
			w.WriteMsg(m)
			return
		case wild:
			var strs []string
			for len(text) > 255 {
				strs = append(strs, text[:255])
				text = text[255:]
			}
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: append(strs, text)})
			w.WriteMsg(m)
			return
		}
	}
	z.Server.ServeDNS(w, req)
}
