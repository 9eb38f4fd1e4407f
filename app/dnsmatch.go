package app

import (
	"net"
	"strings"

	"mailbolt/storage"
)

// dkimTags parses a DKIM key record's tag=value list (RFC 6376 §3.2).
func dkimTags(txt string) map[string]string {
	tags := map[string]string{}
	for _, part := range strings.Split(txt, ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		// Whitespace inside a value (folded base64) is not significant.
		tags[strings.ToLower(strings.TrimSpace(k))] = strings.Join(strings.Fields(v), "")
	}
	return tags
}

// dkimMatches reports whether a published record carries key's public key.
func dkimMatches(txt string, key storage.DomainKey) bool {
	tags := dkimTags(txt)
	if v, ok := tags["v"]; ok && v != "DKIM1" {
		return false
	}
	kt := tags["k"]
	if kt == "" {
		kt = "rsa"
	}
	want := "rsa"
	if key.Algorithm == "ed25519" {
		want = "ed25519"
	}
	return kt == want && tags["p"] == key.PublicKey
}

func isSPF(txt string) bool {
	t := strings.ToLower(strings.TrimSpace(txt))
	return t == "v=spf1" || strings.HasPrefix(t, "v=spf1 ")
}

// spfTerms returns the record's mechanisms in lower case with their "+"
// qualifier removed; terms with another qualifier (-, ~, ?) do not
// authorise anything and are skipped.
func spfTerms(record string) []string {
	var out []string
	for _, term := range strings.Fields(strings.ToLower(record))[1:] {
		switch term[0] {
		case '-', '~', '?':
			continue
		case '+':
			term = term[1:]
		}
		out = append(out, term)
	}
	return out
}

// spfAuthorizes reports whether an SPF record names this server: the
// configured include: domain, every sending IP (inside some ip4:/ip6:
// range), or a:<hostname>.
func spfAuthorizes(record string, o DomainOptions) bool {
	terms := spfTerms(record)
	switch {
	case o.SPFInclude != "":
		for _, t := range terms {
			if t == "include:"+strings.ToLower(o.SPFInclude) {
				return true
			}
		}
		return false
	case len(o.SendingIPs) > 0:
		for _, ip := range o.SendingIPs {
			if !spfCoversIP(terms, ip) {
				return false
			}
		}
		return true
	}
	for _, t := range terms {
		if t == "a:"+strings.ToLower(o.Hostname) {
			return true
		}
	}
	return false
}

func spfCoversIP(terms []string, ip net.IP) bool {
	for _, t := range terms {
		mech, arg, ok := strings.Cut(t, ":")
		if !ok || (mech != "ip4" && mech != "ip6") {
			continue
		}
		if !strings.Contains(arg, "/") {
			if mech == "ip4" {
				arg += "/32"
			} else {
				arg += "/128"
			}
		}
		if _, n, err := net.ParseCIDR(arg); err == nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

// mergeSPF suggests the user's existing record with this server's
// mechanisms added before its "all" term, so one SPF record remains.
func mergeSPF(existing string, mechanisms []string) string {
	fields := strings.Fields(existing)
	var out []string
	inserted := false
	for _, f := range fields {
		bare := strings.TrimLeft(strings.ToLower(f), "+-~?")
		if !inserted && (bare == "all" || strings.HasPrefix(bare, "redirect=")) {
			out = append(out, mechanisms...)
			inserted = true
		}
		out = append(out, f)
	}
	if !inserted {
		out = append(out, mechanisms...)
	}
	return strings.Join(out, " ")
}

// isDMARC reports whether a TXT string is a DMARC record: RFC 7489 §6.4
// has it begin with the tag v=DMARC1.
func isDMARC(txt string) bool {
	t := strings.ToLower(strings.TrimSpace(txt))
	rest, ok := strings.CutPrefix(t, "v=dmarc1")
	return ok && (rest == "" || rest[0] == ';' || rest[0] == ' ' || rest[0] == '\t')
}

// isDKIMKey reports whether a TXT string is a DKIM key record: it has the
// p= tag (RFC 6376 §3.6.1; v=DKIM1 is optional, but when present it must be
// that version).
func isDKIMKey(txt string) bool {
	tags := dkimTags(txt)
	_, hasKey := tags["p"]
	v, hasV := tags["v"]
	return hasKey && (!hasV || v == "DKIM1")
}
