package spf

import (
	"fmt"
	"strings"
)

// Macro strings (RFC 7208 §7.1):
//
//	macro-string = *( macro-expand / macro-literal )
//	macro-expand = ( "%{" macro-letter transformers *delimiter "}" )
//	               / "%%" / "%_" / "%-"
//	macro-literal = %x21-24 / %x26-7E   ; visible characters except "%"
//	transformers = *DIGIT [ "r" ]
//	delimiter    = "." / "-" / "+" / "," / "/" / "_" / "="

type tokenKind uint8

const (
	literal tokenKind = iota // text copied as it stands
	escape                   // %%, %_ or %-: a macro-expand with a fixed value
	macro                    // %{...}
)

// token is one piece of a parsed macro string.
type token struct {
	kind tokenKind
	text string // literal and escape: the text it stands for

	letter  byte   // macro: the letter, lower case
	url     bool   // macro: written in upper case, so URL-escaped (§7.3)
	digits  int    // macro: keep this many right-hand parts; 0 keeps all
	reverse bool   // macro: reverse the parts first
	delims  string // macro: characters to split on; "" means "."
}

// macroString is a parsed macro string, ready to expand.
type macroString []token

// macroSyntax says which variant of the grammar a string follows.
type macroSyntax struct {
	letters string // the macro letters allowed, lower case
	space   bool   // SP is a literal (explain-string, §6.2)
}

var (
	// c, r and t are allowed only in explanation text (§7.1).
	domainSpecSyntax = macroSyntax{letters: "slodiphv"}
	explainSyntax    = macroSyntax{letters: "slodiphvcrt", space: true}
	// Unknown modifiers are never expanded, only checked (§6).
	modifierSyntax = macroSyntax{letters: "slodiphvcrt"}
)

const delimiters = ".-+,/_="

// parseMacroString checks s against the grammar and splits it into tokens.
func parseMacroString(s string, syn macroSyntax) (macroString, error) {
	var out macroString
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, token{kind: literal, text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '%':
			if i+1 == len(s) {
				return nil, fmt.Errorf("%w: %q ends with a lone %%", ErrSyntax, s)
			}
			var t token
			switch s[i+1] {
			case '%':
				t = token{kind: escape, text: "%"}
				i += 2
			case '_':
				t = token{kind: escape, text: " "}
				i += 2
			case '-':
				t = token{kind: escape, text: "%20"}
				i += 2
			case '{':
				end := strings.IndexByte(s[i+2:], '}')
				if end < 0 {
					return nil, fmt.Errorf("%w: unclosed macro in %q", ErrSyntax, s)
				}
				var err error
				if t, err = parseMacro(s[i+2:i+2+end], syn); err != nil {
					return nil, err
				}
				i += 2 + end + 1
			default:
				// §7.1: "A '%' character not followed by a '{', '%', '-', or
				// '_' character is a syntax error."
				return nil, fmt.Errorf("%w: invalid macro %q in %q", ErrSyntax, s[i:i+2], s)
			}
			flush()
			out = append(out, t)
		case c >= 0x21 && c <= 0x7e, c == ' ' && syn.space:
			lit.WriteByte(c)
			i++
		default:
			return nil, fmt.Errorf("%w: character %q not allowed in %q", ErrSyntax, c, s)
		}
	}
	flush()
	return out, nil
}

// parseMacro reads the inside of "%{...}".
func parseMacro(body string, syn macroSyntax) (token, error) {
	if body == "" {
		return token{}, fmt.Errorf("%w: empty macro %%{}", ErrSyntax)
	}
	t := token{kind: macro}
	c := body[0]
	lower := c
	if 'A' <= c && c <= 'Z' {
		lower = c + ('a' - 'A')
		t.url = true
	}
	if strings.IndexByte(syn.letters, lower) < 0 {
		return token{}, fmt.Errorf("%w: macro letter %q not allowed here", ErrSyntax, c)
	}
	t.letter = lower
	i := 1
	if i < len(body) && isDigit(body[i]) {
		n := 0
		for ; i < len(body) && isDigit(body[i]); i++ {
			n = n*10 + int(body[i]-'0')
			if n > 1000 { // more parts than any name can have
				n = 1000
			}
		}
		if n == 0 {
			// §7.3: "If a DIGIT is specified, the value MUST be nonzero."
			return token{}, fmt.Errorf("%w: zero part count in %%{%s}", ErrSyntax, body)
		}
		t.digits = n
	}
	if i < len(body) && (body[i] == 'r' || body[i] == 'R') {
		t.reverse = true
		i++
	}
	for j := i; j < len(body); j++ {
		if strings.IndexByte(delimiters, body[j]) < 0 {
			return token{}, fmt.Errorf("%w: bad transformer or delimiter in %%{%s}", ErrSyntax, body)
		}
	}
	t.delims = body[i:]
	return t, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// endsInMacro reports whether the last token is a macro-expand, which may
// stand in for the top label of a domain-spec (§7.1, domain-end).
func (ms macroString) endsInMacro() bool {
	return len(ms) > 0 && ms[len(ms)-1].kind != literal
}

// expand writes the string out, asking value for each macro letter.
func (ms macroString) expand(value func(letter byte) string) string {
	var b strings.Builder
	for _, t := range ms {
		if t.kind == macro {
			b.WriteString(t.transform(value(t.letter)))
		} else {
			b.WriteString(t.text)
		}
	}
	return b.String()
}

// transform applies the transformers of §7.3: split on the delimiters,
// optionally reverse, keep the right-most parts, join with dots, and
// URL-escape when the letter was upper case.
func (t token) transform(v string) string {
	delims := t.delims
	if delims == "" {
		delims = "."
	}
	var parts []string
	start := 0
	for i := 0; i < len(v); i++ {
		if strings.IndexByte(delims, v[i]) >= 0 {
			parts = append(parts, v[start:i])
			start = i + 1
		}
	}
	parts = append(parts, v[start:])
	if t.reverse {
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
	}
	if t.digits > 0 && t.digits < len(parts) {
		parts = parts[len(parts)-t.digits:]
	}
	out := strings.Join(parts, ".")
	if t.url {
		out = urlEscape(out)
	}
	return out
}

// urlEscape escapes every byte outside the URI "unreserved" set (§7.3,
// RFC 3986 §2.3) as %XX with upper-case hex digits.
func urlEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
