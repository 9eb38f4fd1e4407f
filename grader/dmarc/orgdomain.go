package dmarc

import (
	"errors"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// ErrInvalidDomain: a domain name that cannot be put in a query (empty, an
// empty label, too long, characters outside letters, digits, "-" and "_",
// or an IDN that does not convert to A-labels).
var ErrInvalidDomain = errors.New("dmarc: invalid domain name")

// OrgDomain returns the organizational domain of domain (RFC 7489 §3.2):
// its public suffix plus one label, per the Public Suffix List as
// golang.org/x/net/publicsuffix ships it. It returns "" when there is none:
// for a name that is itself a public suffix (including any single label,
// by the list's default rule "*") and for a name that is not a valid domain
// ("", a leading dot, an empty label).
//
// Case is folded and one final dot is ignored. The answer is written like
// the question: A-labels ("xn--…") for an all-ASCII name, U-labels for a
// name that contains any non-ASCII character, as the PSL test vectors
// expect.
func OrgDomain(domain string) string {
	ascii, err := canonical(domain)
	if err != nil {
		return ""
	}
	org := orgDomain(ascii)
	if org == "" || isASCII(domain) {
		return org
	}
	if u, err := idna.Lookup.ToUnicode(org); err == nil {
		return u
	}
	return org
}

// orgDomain is OrgDomain for a name already in canonical form.
func orgDomain(ascii string) string {
	org, err := publicsuffix.EffectiveTLDPlusOne(ascii)
	if err != nil {
		return ""
	}
	return org
}

// orgOrSelf is the organizational domain Evaluate uses: a public suffix
// stands for itself, as §3.2 step 4 has no "x+1"th label to add.
func orgOrSelf(ascii string) string {
	if org := orgDomain(ascii); org != "" {
		return org
	}
	return ascii
}

// canonical returns domain in the form names are compared and queried in:
// lower case, A-labels, no final dot.
func canonical(domain string) (string, error) {
	d := strings.TrimSuffix(domain, ".")
	if !isASCII(d) {
		a, err := idna.Lookup.ToASCII(d)
		if err != nil {
			return "", errors.Join(ErrInvalidDomain, err)
		}
		d = a
	}
	d = strings.ToLower(d)
	if d == "" || len(d) > 253 {
		return "", ErrInvalidDomain
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 {
			return "", ErrInvalidDomain
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", ErrInvalidDomain
			}
		}
	}
	return d, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
