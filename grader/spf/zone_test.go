package spf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	miekg "github.com/miekg/dns"

	"mailbolt/mta/dns"
)

// zone is an in-memory DNS built from the zonedata of a test-suite
// scenario. It answers the way the suite's reference driver (pyspf's
// testspf.py) does:
//
//   - a name absent from the zone is NXDOMAIN; a present name without
//     records of the type asked for is NODATA (both dns.ErrNotFound);
//   - "TIMEOUT" makes a query time out unless a record of the type asked
//     for is listed before it;
//   - SPF (type 99) records are copied as TXT records, after everything
//     else, unless the name lists TXT records of its own ("TXT: NONE"
//     counts, and adds nothing);
//   - CNAMEs are followed; a loop is a server failure.
type zone map[string][]zoneRR

type zoneRR struct {
	typ  string // A, AAAA, MX, PTR, CNAME, TXT, SPF, TIMEOUT
	text string // TXT, SPF: the strings joined; PTR, CNAME: the target
	ip   net.IP
	mx   net.MX
}

var errTimeout = errors.New("i/o timeout (test zone)")

// newZone reads a scenario's zonedata: name → list of {TYPE: value} maps
// or the string "TIMEOUT".
func newZone(data map[string][]any) (zone, error) {
	z := zone{}
	for name, entries := range data {
		var rrs, spf []zoneRR
		ownTXT := false
		for _, entry := range entries {
			if s, ok := entry.(string); ok && s == "TIMEOUT" {
				rrs = append(rrs, zoneRR{typ: "TIMEOUT"})
				continue
			}
			m, ok := entry.(map[string]any)
			if !ok || len(m) != 1 {
				return nil, fmt.Errorf("%s: bad entry %#v", name, entry)
			}
			for typ, v := range m {
				rr, err := zoneRecord(typ, v)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				switch {
				case typ == "TXT":
					ownTXT = true
					if rr.text == "NONE" {
						continue
					}
				case typ == "SPF":
					spf = append(spf, zoneRR{typ: "TXT", text: rr.text})
				}
				rrs = append(rrs, rr)
			}
		}
		if !ownTXT {
			rrs = append(rrs, spf...)
		}
		z[strings.ToLower(name)] = rrs
	}
	return z, nil
}

func zoneRecord(typ string, v any) (zoneRR, error) {
	rr := zoneRR{typ: typ}
	switch typ {
	case "TXT", "SPF":
		switch v := v.(type) {
		case []any:
			for _, s := range v {
				rr.text += fmt.Sprint(s)
			}
		default:
			rr.text = fmt.Sprint(v)
		}
	case "A", "AAAA":
		if rr.ip = net.ParseIP(fmt.Sprint(v)); rr.ip == nil {
			return rr, fmt.Errorf("bad address %v", v)
		}
	case "MX":
		l, ok := v.([]any)
		if !ok || len(l) != 2 {
			return rr, fmt.Errorf("bad MX %v", v)
		}
		pref, _ := l[0].(int)
		rr.mx = net.MX{Pref: uint16(pref), Host: fmt.Sprint(l[1])}
	case "PTR", "CNAME":
		rr.text = fmt.Sprint(v)
	default:
		return rr, fmt.Errorf("unknown record type %s", typ)
	}
	return rr, nil
}

// answer returns the records of type typ at name.
func (z zone) answer(name, typ string) ([]zoneRR, error) {
	for hops := 0; hops < 10; hops++ {
		rrs, ok := z[strings.ToLower(strings.TrimSuffix(name, "."))]
		if !ok {
			return nil, dns.ErrNotFound
		}
		var out []zoneRR
		cname := ""
	scan:
		for _, rr := range rrs {
			switch rr.typ {
			case "TIMEOUT":
				if len(out) == 0 {
					return nil, &dns.TempError{Name: name, Err: errTimeout}
				}
				break scan
			case typ:
				out = append(out, rr)
			case "CNAME":
				cname = rr.text
			}
		}
		if len(out) > 0 {
			return out, nil
		}
		if cname == "" {
			return nil, dns.ErrNotFound
		}
		name = cname
	}
	return nil, &dns.TempError{Name: name, Err: errors.New("CNAME loop (test zone)")}
}

func (z zone) LookupTXT(_ context.Context, name string) ([]string, error) {
	rrs, err := z.answer(name, "TXT")
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.text)
	}
	return out, err
}

func (z zone) lookupIP(name, typ string) ([]net.IP, error) {
	rrs, err := z.answer(name, typ)
	var out []net.IP
	for _, rr := range rrs {
		out = append(out, rr.ip)
	}
	return out, err
}

func (z zone) LookupA(_ context.Context, name string) ([]net.IP, error) {
	return z.lookupIP(name, "A")
}

func (z zone) LookupAAAA(_ context.Context, name string) ([]net.IP, error) {
	return z.lookupIP(name, "AAAA")
}

func (z zone) LookupMX(_ context.Context, name string) ([]*net.MX, error) {
	rrs, err := z.answer(name, "MX")
	var out []*net.MX
	for _, rr := range rrs {
		mx := rr.mx
		if mx.Host == "" {
			mx.Host = "."
		}
		out = append(out, &mx)
	}
	return out, err
}

func (z zone) LookupPTR(_ context.Context, ip net.IP) ([]string, error) {
	arpa, err := miekg.ReverseAddr(ip.String())
	if err != nil {
		return nil, err
	}
	rrs, err := z.answer(arpa, "PTR")
	var out []string
	for _, rr := range rrs {
		out = append(out, strings.TrimSuffix(rr.text, "."))
	}
	return out, err
}
