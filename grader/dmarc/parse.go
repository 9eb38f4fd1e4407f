package dmarc

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Parse errors.
var (
	// ErrNotDMARC: the text does not begin with a "v=DMARC1" tag, so it is
	// not a DMARC record at all; discovery drops it (§6.6.3 steps 2, 4).
	ErrNotDMARC = errors.New("dmarc: not a v=DMARC1 record")
	// ErrInvalidRecord: a DMARC record without a valid p tag, or with an
	// invalid sp tag, and no valid rua URI to fall back on (§6.6.3 step 6.2).
	ErrInvalidRecord = errors.New("dmarc: invalid DMARC record")
)

// Parse reads a DMARC TXT record (§6.3, grammar in §6.4).
//
// The record must begin with "v=DMARC1" (after optional white space; "v"
// in any case, "DMARC1" exactly, as the ABNF writes it), or Parse returns
// ErrNotDMARC. A missing or invalid p, or an invalid sp, gives
// ErrInvalidRecord unless rua holds a valid URI, in which case the record
// reads as p=none (§6.6.3 step 6; Record.PolicyFallback). Any other syntax
// error drops just its tag, which keeps its default, and adds a warning
// (§6.3: "Syntax errors in the remainder of the record SHOULD be discarded
// in favor of default values"). Unknown tags are ignored (§6.3); of a
// repeated tag the first occurrence counts. Tag names and keyword values
// are case-insensitive (ABNF quoted strings, RFC 5234 §2.3).
func Parse(txt string) (*Record, error) {
	rest, ok := cutVersion(txt)
	if !ok {
		return nil, ErrNotDMARC
	}
	rec := defaultRecord()
	warn := func(format string, args ...any) {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf(format, args...))
	}
	junk, rest, _ := strings.Cut(rest, ";")
	if junk = trimWSP(junk); junk != "" {
		// "v=DMARC1 p=reject", missing its ";" (§6.4 dmarc-sep).
		warn("text after v=DMARC1 before the first \";\" ignored: %q", junk)
	}

	var pBad, spBad string // why p or sp is unusable; "" when fine
	pBad = "p tag missing"
	seen := map[string]bool{}
	for _, term := range strings.Split(rest, ";") {
		term = trimWSP(term)
		if term == "" {
			continue // empty term, e.g. after a final ";"
		}
		name, value, ok := strings.Cut(term, "=")
		name, value = strings.ToLower(trimWSP(name)), trimWSP(value)
		if !ok || !isTagName(name) {
			warn("term %q is not tag=value; ignored", term)
			continue
		}
		if seen[name] {
			warn("tag %s repeated; the first one counts", name)
			continue
		}
		first := len(seen) == 0
		seen[name] = true
		switch name {
		case "p":
			// §6.3: v and p "MUST appear in that order". A p further on is
			// still clearly the domain's policy; honour it and say so.
			if !first {
				warn("p should directly follow v=DMARC1 (§6.3)")
			}
			if rec.Policy, ok = parsePolicy(value); ok {
				pBad = ""
			} else {
				pBad = fmt.Sprintf("p=%q is not none, quarantine or reject", value)
			}
		case "sp":
			if rec.SubdomainPolicy, ok = parsePolicy(value); !ok {
				spBad = fmt.Sprintf("sp=%q is not none, quarantine or reject", value)
			}
		case "np":
			// RFC 9091 §4.1; it gives no special rule for errors, so §6.3's
			// general one: drop the tag.
			if rec.NonexistentPolicy, ok = parsePolicy(value); !ok {
				warn("np=%q is not none, quarantine or reject; ignored", value)
			}
		case "adkim", "aspf":
			a := Alignment(strings.ToLower(value))
			if a != Relaxed && a != Strict {
				warn("%s=%q is not r or s; using r", name, value)
				a = Relaxed
			}
			if name == "adkim" {
				rec.DKIMAlignment = a
			} else {
				rec.SPFAlignment = a
			}
		case "pct":
			if n, ok := parsePercent(value); ok {
				rec.Percent = n
			} else {
				warn("pct=%q is not an integer from 0 to 100; using 100", value)
			}
		case "rua", "ruf":
			var uris []ReportURI
			for _, u := range strings.Split(value, ",") {
				if uri, ok := parseURI(trimWSP(u)); ok {
					uris = append(uris, uri)
				} else {
					warn("%s: %q is not a URI with a scheme and an optional !size; ignored", name, trimWSP(u))
				}
			}
			if name == "rua" {
				rec.AggregateReports = uris
			} else {
				rec.FailureReports = uris
			}
		case "fo":
			if opts, ok := parseColonList(value, isFailureOption); ok {
				rec.FailureOptions = opts
			} else {
				warn("fo=%q is not a list of 0, 1, d and s; using 0", value)
			}
		case "rf":
			if formats, ok := parseColonList(value, isKeyword); ok {
				rec.ReportFormats = formats
			} else {
				warn("rf=%q is not a list of format names; using afrf", value)
			}
		case "ri":
			if n, err := strconv.ParseUint(value, 10, 32); err == nil {
				rec.ReportInterval = time.Duration(n) * time.Second
			} else {
				warn("ri=%q is not a number of seconds; using 86400", value)
			}
		case "v":
			warn("v repeated; ignored")
		}
	}

	// §6.6.3 step 6.
	if pBad != "" || spBad != "" {
		why := strings.Trim(pBad+"; "+spBad, "; ")
		if len(rec.AggregateReports) == 0 {
			return nil, fmt.Errorf("%w: %s, and no valid rua URI", ErrInvalidRecord, why)
		}
		rec.Policy, rec.SubdomainPolicy, rec.NonexistentPolicy = PolicyNone, "", ""
		rec.PolicyFallback = true
		warn("%s; read as p=none because rua is valid (§6.6.3)", why)
	}
	return &rec, nil
}

// cutVersion checks that txt begins with the dmarc-version term (§6.4:
// "v" *WSP "=" *WSP "DMARC1") and returns what follows it.
func cutVersion(txt string) (string, bool) {
	s := trimLeftWSP(txt)
	if s == "" || s[0] != 'v' && s[0] != 'V' {
		return "", false
	}
	s = trimLeftWSP(s[1:])
	if s == "" || s[0] != '=' {
		return "", false
	}
	s = trimLeftWSP(s[1:])
	rest, ok := strings.CutPrefix(s, "DMARC1")
	if !ok || rest != "" && rest[0] != ';' && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return rest, true
}

func parsePolicy(v string) (Policy, bool) {
	switch p := Policy(strings.ToLower(v)); p {
	case PolicyNone, PolicyQuarantine, PolicyReject:
		return p, true
	}
	return "", false
}

// parsePercent reads pct: 1*3DIGIT with a value of at most 100 (§6.4).
func parsePercent(v string) (int, bool) {
	if len(v) < 1 || len(v) > 3 || !isDigits(v) {
		return 0, false
	}
	n, _ := strconv.Atoi(v)
	return n, n <= 100
}

// parseURI reads a dmarc-uri (§6.4): URI [ "!" 1*DIGIT [ "k" / "m" / "g"
// / "t" ] ]. The URI must be absolute (have a scheme) and be plain ASCII
// without white space; "," and "!" inside it must be percent-encoded (§6.2).
func parseURI(s string) (ReportURI, bool) {
	addr, size, hasSize := strings.Cut(s, "!")
	if addr == "" {
		return ReportURI{}, false
	}
	for i := 0; i < len(addr); i++ {
		if addr[i] <= ' ' || addr[i] >= 0x7f {
			return ReportURI{}, false
		}
	}
	if u, err := url.Parse(addr); err != nil || u.Scheme == "" {
		return ReportURI{}, false
	}
	uri := ReportURI{Address: addr}
	if hasSize {
		shift := 0
		if n := len(size); n > 0 {
			switch size[n-1] {
			case 'k', 'K':
				shift = 10
			case 'm', 'M':
				shift = 20
			case 'g', 'G':
				shift = 30
			case 't', 'T':
				shift = 40
			}
			if shift > 0 {
				size = size[:n-1]
			}
		}
		n, err := strconv.ParseUint(size, 10, 64)
		if err != nil || !isDigits(size) || n > ^uint64(0)>>shift {
			return ReportURI{}, false
		}
		uri.MaxSize = n << shift
	}
	return uri, true
}

// parseColonList reads a ":"-separated list (fo, rf), lower-cased; every
// element must pass valid.
func parseColonList(v string, valid func(string) bool) ([]string, bool) {
	parts := strings.Split(v, ":")
	for i, p := range parts {
		parts[i] = strings.ToLower(trimWSP(p))
		if !valid(parts[i]) {
			return nil, false
		}
	}
	return parts, true
}

func isFailureOption(s string) bool { return s == "0" || s == "1" || s == "d" || s == "s" }

// isKeyword: Keyword of RFC 5321 §4.1.2, letters and digits with inner
// hyphens, as §6.4 uses for rf.
func isKeyword(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

func isTagName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// trimWSP removes WSP (space and tab, RFC 5234 B.1) from both ends.
func trimWSP(s string) string { return strings.Trim(s, " \t") }

func trimLeftWSP(s string) string { return strings.TrimLeft(s, " \t") }
