package spf

import (
	"fmt"
	"net/netip"
	"strings"
)

// Qualifier is the prefix of a mechanism: the result it gives when it
// matches (RFC 7208 §4.6.2).
type Qualifier byte

// The four qualifiers; "+" is assumed when none is written.
const (
	QualifierPass     Qualifier = '+'
	QualifierFail     Qualifier = '-'
	QualifierSoftFail Qualifier = '~'
	QualifierNeutral  Qualifier = '?'
)

// Result is what a matching mechanism with this qualifier yields.
func (q Qualifier) Result() Result {
	switch q {
	case QualifierFail:
		return Fail
	case QualifierSoftFail:
		return SoftFail
	case QualifierNeutral:
		return Neutral
	}
	return Pass
}

// Kind names a mechanism (§5).
type Kind string

// The eight mechanisms of §5.
const (
	KindAll     Kind = "all"
	KindInclude Kind = "include"
	KindA       Kind = "a"
	KindMX      Kind = "mx"
	KindPTR     Kind = "ptr"
	KindIP4     Kind = "ip4"
	KindIP6     Kind = "ip6"
	KindExists  Kind = "exists"
)

// Mechanism is one parsed mechanism of a record.
type Mechanism struct {
	Qualifier Qualifier
	Kind      Kind
	// Domain is the domain-spec as written (include, a, mx, ptr, exists);
	// empty for a, mx and ptr means the domain being checked.
	Domain string
	// Net is the network of ip4 and ip6.
	Net netip.Prefix
	// CIDR4 and CIDR6 are the prefix lengths of a and mx (§5.3, §5.4):
	// 32 and 128 unless written.
	CIDR4, CIDR6 int

	spec macroString // Domain, parsed
}

// Record is a parsed v=spf1 record. Unknown modifiers are checked and then
// dropped, as §6 says they must not change the result.
type Record struct {
	Mechanisms []Mechanism
	Redirect   string // domain-spec of redirect= (§6.1), "" when absent
	Exp        string // domain-spec of exp= (§6.2), "" when absent

	redirect, exp macroString
}

// isSPF reports whether a TXT string is a version 1 SPF record: "v=spf1",
// in any case, then a space or the end (§4.5).
func isSPF(txt string) bool {
	return len(txt) >= 6 && strings.EqualFold(txt[:6], "v=spf1") && (len(txt) == 6 || txt[6] == ' ')
}

// Parse checks a whole record against the grammar of §4.6.1 and §12 and
// returns it parsed. Any error wraps ErrSyntax.
func Parse(txt string) (*Record, error) {
	if !isSPF(txt) {
		return nil, fmt.Errorf("%w: record does not start with v=spf1", ErrSyntax)
	}
	r := &Record{}
	// record = version terms *SP; terms = *( 1*SP ( directive / modifier ) ).
	// Only SP separates terms: a tab or line break inside is an error.
	for _, term := range strings.Split(txt[6:], " ") {
		if term == "" {
			continue
		}
		if err := r.parseTerm(term); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Record) parseTerm(term string) error {
	// §4.6.1: a term is a modifier when a name is followed by "=".
	if n := modifierName(term); n > 0 && n < len(term) && term[n] == '=' {
		return r.parseModifier(strings.ToLower(term[:n]), term[n+1:], term)
	}
	m := Mechanism{Qualifier: QualifierPass, CIDR4: 32, CIDR6: 128}
	body := term
	if strings.IndexByte("+-~?", body[0]) >= 0 {
		m.Qualifier = Qualifier(body[0])
		body = body[1:]
	}
	end := strings.IndexAny(body, ":/")
	if end < 0 {
		end = len(body)
	}
	// Mechanism names are case-insensitive (§4.6.1, RFC 5234).
	m.Kind = Kind(strings.ToLower(body[:end]))
	rest := body[end:]
	var err error
	switch m.Kind {
	case KindAll:
		if rest != "" {
			err = fmt.Errorf("%w: %q: all takes no argument (§5.1)", ErrSyntax, term)
		}
	case KindInclude, KindExists:
		// include = "include" ":" domain-spec (§5.2); exists likewise (§5.7).
		if !strings.HasPrefix(rest, ":") {
			err = fmt.Errorf("%w: %q: %s needs :domain", ErrSyntax, term, m.Kind)
			break
		}
		err = m.setDomain(rest[1:], term)
	case KindA, KindMX:
		// A = "a" [ ":" domain-spec ] [ dual-cidr-length ] (§5.3, §5.4).
		if rest, err = m.splitDualCIDR(rest, term); err != nil {
			break
		}
		err = m.optionalDomain(rest, term)
	case KindPTR:
		// PTR = "ptr" [ ":" domain-spec ] (§5.5).
		err = m.optionalDomain(rest, term)
	case KindIP4, KindIP6:
		err = m.setNetwork(rest, term)
	default:
		err = fmt.Errorf("%w: unknown mechanism %q", ErrSyntax, term)
	}
	if err != nil {
		return err
	}
	r.Mechanisms = append(r.Mechanisms, m)
	return nil
}

// modifierName returns the length of the name at the start of term:
// name = ALPHA *( ALPHA / DIGIT / "-" / "_" / "." ) (§4.6.1).
func modifierName(term string) int {
	for i := 0; i < len(term); i++ {
		c := term[i]
		alpha := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if i == 0 && !alpha {
			return 0
		}
		if !alpha && !isDigit(c) && c != '-' && c != '_' && c != '.' {
			return i
		}
	}
	return len(term)
}

func (r *Record) parseModifier(name, value, term string) error {
	switch name {
	case "redirect", "exp":
		// §6: "These two modifiers MUST NOT appear in a record more than
		// once each."
		if (name == "redirect" && r.Redirect != "") || (name == "exp" && r.Exp != "") {
			return fmt.Errorf("%w: %s= appears twice (§6)", ErrSyntax, name)
		}
		// redirect = "redirect" "=" domain-spec; explanation likewise. An
		// empty "exp=" breaks that grammar too, whatever §6.2 says about
		// ignoring an empty domain-spec (the errata discussion settled on
		// PermError; test exp-empty-domain).
		spec, err := parseDomainSpec(value, term)
		if err != nil {
			return err
		}
		if name == "redirect" {
			r.Redirect, r.redirect = value, spec
		} else {
			r.Exp, r.exp = value, spec
		}
		return nil
	}
	// unknown-modifier = name "=" macro-string: checked, then ignored (§6).
	_, err := parseMacroString(value, modifierSyntax)
	return err
}

func (m *Mechanism) setDomain(spec, term string) error {
	ms, err := parseDomainSpec(spec, term)
	if err != nil {
		return err
	}
	m.Domain, m.spec = spec, ms
	return nil
}

// optionalDomain accepts nothing, or ":" and a domain-spec.
func (m *Mechanism) optionalDomain(rest, term string) error {
	switch {
	case rest == "":
		return nil
	case strings.HasPrefix(rest, ":"):
		return m.setDomain(rest[1:], term)
	}
	return fmt.Errorf("%w: %q", ErrSyntax, term)
}

// splitDualCIDR takes dual-cidr-length = [ ip4-cidr-length ] [ "/"
// ip6-cidr-length ] off the end of rest (§5.6).
func (m *Mechanism) splitDualCIDR(rest, term string) (string, error) {
	if i := strings.LastIndex(rest, "//"); i >= 0 && allDigits(rest[i+2:]) {
		n, err := cidrLength(rest[i+2:], 128, term)
		if err != nil {
			return "", err
		}
		m.CIDR6, rest = n, rest[:i]
	}
	if i := strings.LastIndexByte(rest, '/'); i >= 0 && allDigits(rest[i+1:]) {
		n, err := cidrLength(rest[i+1:], 32, term)
		if err != nil {
			return "", err
		}
		m.CIDR4, rest = n, rest[:i]
	}
	return rest, nil
}

// setNetwork reads ":" ip4-network [ ip4-cidr-length ] and its ip6 twin.
func (m *Mechanism) setNetwork(rest, term string) error {
	if !strings.HasPrefix(rest, ":") {
		return fmt.Errorf("%w: %q: %s needs an address", ErrSyntax, term, m.Kind)
	}
	addr, bits := rest[1:], 32
	if m.Kind == KindIP6 {
		bits = 128
	}
	if i := strings.LastIndexByte(addr, '/'); i >= 0 {
		n, err := cidrLength(addr[i+1:], bits, term)
		if err != nil {
			return err
		}
		addr, bits = addr[:i], n
	}
	// netip refuses IPv4 octets with leading zeros, as ip4-network does
	// (§5.6); zones ("%eth0") are no part of ip6-network.
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" || (m.Kind == KindIP4) != ip.Is4() {
		return fmt.Errorf("%w: %q: bad %s address", ErrSyntax, term, m.Kind)
	}
	m.Net = netip.PrefixFrom(ip, bits).Masked()
	return nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// cidrLength reads a prefix length: decimal without leading zeros (as
// ip4-network forbids them, the test suite forbids them here) and at most
// limit (§5.6: "Invalid CIDR is prohibited").
func cidrLength(s string, limit int, term string) (int, error) {
	if !allDigits(s) || len(s) > 3 || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%w: %q: bad prefix length", ErrSyntax, term)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	if n > limit {
		return 0, fmt.Errorf("%w: %q: prefix length over %d", ErrSyntax, term, limit)
	}
	return n, nil
}

// parseDomainSpec checks domain-spec = macro-string domain-end, where
// domain-end = ( "." toplabel [ "." ] ) / macro-expand (§7.1).
func parseDomainSpec(spec, term string) (macroString, error) {
	if spec == "" {
		return nil, fmt.Errorf("%w: %q: empty domain", ErrSyntax, term)
	}
	ms, err := parseMacroString(spec, domainSpecSyntax)
	if err != nil {
		return nil, err
	}
	if ms.endsInMacro() {
		return ms, nil
	}
	last := strings.TrimSuffix(ms[len(ms)-1].text, ".")
	dot := strings.LastIndexByte(last, '.')
	if dot < 0 || !isTopLabel(last[dot+1:]) {
		return nil, fmt.Errorf("%w: %q: domain must end in a top label or a macro", ErrSyntax, term)
	}
	return ms, nil
}

// isTopLabel checks toplabel = ( *alphanum ALPHA *alphanum ) /
// ( 1*alphanum "-" *( alphanum / "-" ) alphanum ): letters, digits and
// inner dashes, not all digits unless it has a dash.
func isTopLabel(l string) bool {
	if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	alpha, dash := false, false
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			alpha = true
		case c == '-':
			dash = true
		case !isDigit(c):
			return false
		}
	}
	return alpha || dash
}
