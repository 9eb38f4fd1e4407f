package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	miekg "github.com/miekg/dns"
)

// ErrNotFound means the name does not exist or has no record of the type
// asked for: the zone's answer is "nothing here".
var ErrNotFound = errors.New("dns: no such record")

// TempError is a lookup that failed without an answer (timeout, SERVFAIL,
// REFUSED, network error). Retrying later may succeed.
type TempError struct {
	Name string
	Err  error
}

func (e *TempError) Error() string { return fmt.Sprintf("dns lookup of %s failed: %v", e.Name, e.Err) }
func (e *TempError) Unwrap() error { return e.Err }

// IsTemporary reports whether err is a lookup failure rather than an answer.
func IsTemporary(err error) bool {
	var t *TempError
	return errors.As(err, &t)
}

// Resolver looks records up by asking one DNS server directly.
type Resolver struct {
	// Server is host:port of the DNS server to ask.
	Server string
	// Timeout bounds each exchange; 5 s when zero.
	Timeout time.Duration
}

// SystemResolver asks the first nameserver in /etc/resolv.conf, falling
// back to 127.0.0.1:53.
func SystemResolver() *Resolver {
	cfg, err := miekg.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(cfg.Servers) == 0 {
		return &Resolver{Server: "127.0.0.1:53"}
	}
	return &Resolver{Server: net.JoinHostPort(cfg.Servers[0], cfg.Port)}
}

// exchange sends one query, retrying over TCP when the UDP answer is
// truncated.
func (r *Resolver) exchange(ctx context.Context, name string, qtype uint16) ([]miekg.RR, error) {
	rrs, _, err := r.exchangeAD(ctx, name, qtype, false)
	return rrs, err
}

// exchangeAD is exchange that, with ad, asks for and reports the AD bit of
// the answer (RFC 6840 §5.7): the resolver validated it with DNSSEC.
func (r *Resolver) exchangeAD(ctx context.Context, name string, qtype uint16, ad bool) ([]miekg.RR, bool, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	fqdn := miekg.Fqdn(name)
	m := new(miekg.Msg)
	m.SetQuestion(fqdn, qtype)
	m.SetEdns0(4096, ad)
	m.AuthenticatedData = ad
	c := &miekg.Client{Timeout: timeout}
	in, _, err := c.ExchangeContext(ctx, m, r.Server)
	if err == nil && in.Truncated {
		c.Net = "tcp"
		in, _, err = c.ExchangeContext(ctx, m, r.Server)
	}
	if err != nil {
		return nil, false, &TempError{Name: name, Err: err}
	}
	// With ad, a missing name or record is reported with the AD bit too:
	// a DNSSEC-validated denial (RFC 7672 §2.2.1 needs it for an implicit
	// MX).
	secure := ad && in.AuthenticatedData
	switch in.Rcode {
	case miekg.RcodeSuccess:
	case miekg.RcodeNameError:
		return nil, secure, ErrNotFound
	default:
		return nil, false, &TempError{Name: name, Err: fmt.Errorf("server answered %s", miekg.RcodeToString[in.Rcode])}
	}
	// Follow a CNAME chain inside the answer (e.g. a DKIM key delegated to
	// a provider): records of the alias targets count as the name's own.
	names := map[string]bool{strings.ToLower(fqdn): true}
	for changed := true; changed; {
		changed = false
		for _, rr := range in.Answer {
			if c, ok := rr.(*miekg.CNAME); ok && qtype != miekg.TypeCNAME && names[strings.ToLower(c.Hdr.Name)] && !names[strings.ToLower(c.Target)] {
				names[strings.ToLower(c.Target)] = true
				changed = true
			}
		}
	}
	var out []miekg.RR
	for _, rr := range in.Answer {
		if rr.Header().Rrtype == qtype && names[strings.ToLower(rr.Header().Name)] {
			out = append(out, rr)
		}
	}
	if len(out) == 0 {
		return nil, secure, ErrNotFound
	}
	return out, secure, nil
}

// LookupTXT returns each TXT record at name with its strings joined, as
// SPF (RFC 7208 §3.3) and DKIM (RFC 6376 §3.6.2.2) read them.
func (r *Resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	rrs, err := r.exchange(ctx, name, miekg.TypeTXT)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		var b strings.Builder
		for _, part := range rr.(*miekg.TXT).Txt {
			b.WriteString(unescapeTXT(part))
		}
		out = append(out, b.String())
	}
	return out, nil
}

// unescapeTXT turns a character-string from miekg/dns's presentation form
// (\", \\, \DDD for bytes outside printable ASCII) back into its bytes.
func unescapeTXT(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b = append(b, s[i])
			continue
		}
		if i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
			n := int(s[i+1]-'0')*100 + int(s[i+2]-'0')*10 + int(s[i+3]-'0')
			if n <= 255 {
				b = append(b, byte(n))
				i += 3
				continue
			}
		}
		b = append(b, s[i+1])
		i++
	}
	return string(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// LookupCNAME returns the target of the CNAME at name, without the final dot.
func (r *Resolver) LookupCNAME(ctx context.Context, name string) (string, error) {
	rrs, err := r.exchange(ctx, name, miekg.TypeCNAME)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(rrs[0].(*miekg.CNAME).Target, "."), nil
}
