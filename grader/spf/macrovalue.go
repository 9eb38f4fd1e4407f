package spf

import (
	"context"
	"strconv"
	"strings"
)

// macroValue returns the values of the macro letters (RFC 7208 §7.3) for an
// evaluation whose current domain is domain.
func (e *evaluator) macroValue(ctx context.Context, domain string) func(byte) string {
	return func(letter byte) string {
		switch letter {
		case 's':
			return e.sender
		case 'l':
			return e.local
		case 'o':
			return e.senderDomain
		case 'd':
			return domain
		case 'i':
			return dotted(e.ip.String(), e.ip.Is6(), e.ip.As16())
		case 'p':
			return e.validatedName(ctx, domain)
		case 'v':
			if e.ip.Is6() {
				return "ip6"
			}
			return "in-addr"
		case 'h':
			return e.helo
		case 'c':
			// §7.3: "c" is the address as people write it (RFC 5952 for
			// IPv6), unlike "i".
			return e.ip.String()
		case 'r':
			return e.cfg.receiver
		case 't':
			return strconv.FormatInt(e.cfg.now().Unix(), 10)
		}
		return ""
	}
}

// dotted is the "i" macro: dotted quad for IPv4, and for IPv6 the 32
// nibbles separated by dots (§7.3), as in ip6.arpa names. The nibbles are
// written in upper case: the RFC's example (§7.4) is lower case, DNS does
// not care, and the OpenSPF test suite (v-macro-ip6) and pyspf — which
// show the value in explanations — use upper case.
func dotted(v4 string, v6 bool, b [16]byte) string {
	if !v6 {
		return v4
	}
	const hex = "0123456789ABCDEF"
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte('.')
		}
		s.WriteByte(hex[c>>4])
		s.WriteByte('.')
		s.WriteByte(hex[c&15])
	}
	return s.String()
}

// validatedName is the "p" macro (§7.3): a reverse name of ip that
// resolves back to it, preferring the current domain, then a name below
// it, then any; "unknown" when there is none or the DNS fails. The RFC
// discourages the macro; its lookups do not count toward the limits.
func (e *evaluator) validatedName(ctx context.Context, domain string) string {
	if !e.pDone {
		e.pDone = true
		if names, err := e.lookupPTR(ctx); err == nil {
			if len(names) > ptrLimit {
				names = names[:ptrLimit]
			}
			for _, n := range names {
				if e.validates(ctx, n) {
					e.pNames = append(e.pNames, strings.TrimSuffix(n, "."))
				}
			}
		}
	}
	if len(e.pNames) == 0 {
		return "unknown"
	}
	for _, n := range e.pNames {
		if strings.EqualFold(n, domain) {
			return n
		}
	}
	for _, n := range e.pNames {
		if inDomain(n, domain) {
			return n
		}
	}
	return e.pNames[0]
}
