// Package dnstest runs a real DNS server on 127.0.0.1 holding test zones,
// so code that resolves through a configurable server can be tested
// against every answer a zone can give: records, NXDOMAIN, no data,
// SERVFAIL and silence (a timeout).
package dnstest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Server is a DNS server on 127.0.0.1:<random port> (UDP and TCP).
type Server struct {
	Addr string

	udp, tcp *dns.Server

	mu       sync.Mutex
	records  map[string][]dns.RR // by lower-case FQDN
	servfail map[string]bool
	silent   map[string]bool
	signed   map[string]bool // zones whose answers carry the AD bit
	queries  int
}

// Start runs a server until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Listen runs a server until Close, for code outside tests (the bench
// command) that needs a zone of its own.
func Listen() (*Server, error) {
	s := &Server{records: map[string][]dns.RR{}, servfail: map[string]bool{}, silent: map[string]bool{}, signed: map[string]bool{}}
	// UDP and TCP must share a port; the TCP side of a free UDP port may be
	// taken, so try a few.
	var pc net.PacketConn
	var ln net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		if attempt == 20 {
			return nil, err
		}
	}
	s.Addr = pc.LocalAddr().String()
	s.udp = &dns.Server{PacketConn: pc, Handler: s}
	s.tcp = &dns.Server{Listener: ln, Handler: s}
	go s.udp.ActivateAndServe()
	go s.tcp.ActivateAndServe()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() {
	s.udp.Shutdown()
	s.tcp.Shutdown()
}

func key(name string) string { return strings.ToLower(dns.Fqdn(name)) }

// TXT adds one TXT record at name made of the given character-strings
// (several strings model a value split across 255-byte chunks). The
// strings are raw bytes; they are escaped into miekg/dns's presentation
// form here.
func (s *Server) TXT(name string, strs ...string) {
	escaped := make([]string, len(strs))
	for i, str := range strs {
		escaped[i] = escapeTXT(str)
	}
	s.add(&dns.TXT{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: escaped})
}

func escapeTXT(str string) string {
	var b strings.Builder
	for i := 0; i < len(str); i++ {
		c := str[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// LongTXT adds one TXT record holding value split into 255-byte strings,
// as a DNS provider publishes a long DKIM key.
func (s *Server) LongTXT(name, value string) {
	var strs []string
	for len(value) > 255 {
		strs = append(strs, value[:255])
		value = value[255:]
	}
	s.TXT(name, append(strs, value)...)
}

// CNAME adds a CNAME record.
func (s *Server) CNAME(name, target string) {
	s.add(&dns.CNAME{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 60}, Target: dns.Fqdn(target)})
}

// MX adds an MX record.
func (s *Server) MX(name string, pref uint16, host string) {
	s.add(&dns.MX{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeMX, Class: dns.ClassINET, Ttl: 60}, Preference: pref, Mx: dns.Fqdn(host)})
}

// A adds an A or AAAA record.
func (s *Server) A(name, ip string) {
	addr := net.ParseIP(ip)
	hdr := dns.RR_Header{Name: dns.Fqdn(name), Class: dns.ClassINET, Ttl: 60}
	if v4 := addr.To4(); v4 != nil {
		hdr.Rrtype = dns.TypeA
		s.add(&dns.A{Hdr: hdr, A: v4})
		return
	}
	hdr.Rrtype = dns.TypeAAAA
	s.add(&dns.AAAA{Hdr: hdr, AAAA: addr})
}

func (s *Server) add(rr dns.RR) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(rr.Header().Name)
	s.records[k] = append(s.records[k], rr)
}

// TLSA adds a TLSA record (RFC 6698) at name ("_25._tcp.mx.example.com"):
// usage, selector, matching type and the association data in hex.
func (s *Server) TLSA(name string, usage, selector, matchingType uint8, data string) {
	s.add(&dns.TLSA{Hdr: dns.RR_Header{Name: dns.Fqdn(name), Rrtype: dns.TypeTLSA, Class: dns.ClassINET, Ttl: 60},
		Usage: usage, Selector: selector, MatchingType: matchingType, Certificate: data})
}

// Signed marks zone (and every name under it) as DNSSEC-signed: answers
// to queries that ask for it (AD or DO set) carry the AD bit, as from a
// validating resolver (on=false makes them insecure again).
func (s *Server) Signed(zone string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signed[key(zone)] = on
}

// signedName reports whether k is in a signed zone; s.mu is held.
func (s *Server) signedName(k string) bool {
	for name := k; ; {
		if s.signed[name] {
			return true
		}
		dot := strings.IndexByte(name, '.')
		if dot < 0 || dot+1 >= len(name) {
			return false
		}
		name = name[dot+1:]
	}
}

// PTR adds a PTR record for ip (its in-addr.arpa or ip6.arpa name).
func (s *Server) PTR(ip, name string) {
	arpa, err := dns.ReverseAddr(ip)
	if err != nil {
		panic(fmt.Sprintf("dnstest: PTR for %q: %v", ip, err))
	}
	s.add(&dns.PTR{Hdr: dns.RR_Header{Name: arpa, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60}, Ptr: dns.Fqdn(name)})
}

// Wildcard adds a TXT record at *.suffix (long values split as LongTXT
// does): every name under suffix that has no records of its own answers
// it, under the name asked for, as DNS wildcards do (RFC 4592).
func (s *Server) Wildcard(suffix, value string) {
	var strs []string
	for len(value) > 255 {
		strs = append(strs, value[:255])
		value = value[255:]
	}
	escaped := make([]string, 0, len(strs)+1)
	for _, str := range append(strs, value) {
		escaped = append(escaped, escapeTXT(str))
	}
	s.add(&dns.TXT{Hdr: dns.RR_Header{Name: "*." + dns.Fqdn(suffix), Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: escaped})
}

// wildcardFor returns the records of the closest *.<parent> of k, renamed
// to name; nil when there is none.
func (s *Server) wildcardFor(k, name string) []dns.RR {
	for parent := k; ; {
		dot := strings.IndexByte(parent, '.')
		if dot < 0 || dot+1 >= len(parent) {
			return nil
		}
		parent = parent[dot+1:]
		if rrs := s.records["*."+parent]; len(rrs) > 0 {
			out := make([]dns.RR, len(rrs))
			for j, rr := range rrs {
				out[j] = dns.Copy(rr)
				out[j].Header().Name = name
			}
			return out
		}
	}
}

// Remove deletes every record at name (it becomes NXDOMAIN).
func (s *Server) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key(name))
}

// ServFail makes queries for name answer SERVFAIL (on=false restores it).
func (s *Server) ServFail(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servfail[key(name)] = on
}

// Silent makes queries for name go unanswered, so the client times out.
func (s *Server) Silent(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent[key(name)] = on
}

// Queries counts the questions the server has received.
func (s *Server) Queries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries
}

// ServeDNS answers from the zone: matching records, NOERROR with no data
// when the name has records of other types, NXDOMAIN otherwise.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 {
		return
	}
	q := req.Question[0]
	k := key(q.Name)
	s.mu.Lock()
	s.queries++
	silent, servfail, signed := s.silent[k], s.servfail[k], s.signedName(k)
	rrs := append([]dns.RR(nil), s.records[k]...)
	if len(rrs) == 0 {
		rrs = s.wildcardFor(k, q.Name)
	}
	s.mu.Unlock()
	if silent {
		return
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if signed && m.Rcode == dns.RcodeSuccess {
		opt := req.IsEdns0()
		m.AuthenticatedData = req.AuthenticatedData || opt != nil && opt.Do()
	}
	switch {
	case servfail:
		m.Rcode = dns.RcodeServerFailure
	case len(rrs) == 0:
		m.Rcode = dns.RcodeNameError
	default:
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype || q.Qtype == dns.TypeANY {
				m.Answer = append(m.Answer, rr)
			}
		}
		// Like a recursive resolver, chase a CNAME to the records asked for.
		if len(m.Answer) == 0 && q.Qtype != dns.TypeCNAME {
			s.mu.Lock()
			for hops := 0; hops < 8 && len(rrs) == 1; hops++ {
				c, ok := rrs[0].(*dns.CNAME)
				if !ok {
					break
				}
				m.Answer = append(m.Answer, c)
				rrs = s.records[key(c.Target)]
				for _, rr := range rrs {
					if rr.Header().Rrtype == q.Qtype {
						m.Answer = append(m.Answer, rr)
					}
				}
			}
			s.mu.Unlock()
		}
	}
	if _, udp := w.LocalAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size) // sets TC when the answer does not fit
	}
	w.WriteMsg(m)
}
