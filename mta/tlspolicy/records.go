package tlspolicy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Record version tags.
const (
	STSVersion    = "v=STSv1"
	TLSRPTVersion = "v=TLSRPTv1"
)

// ErrNoRecord means none of the TXT strings is a record of the version
// asked for.
var ErrNoRecord = errors.New("tlspolicy: no record of this version")

// Select picks the record of a version among the TXT strings found at a
// name: the strings that start with the version tag (case-insensitive)
// followed by ';', a space or the end. Exactly one is a record (RFC 8461
// §3.1, RFC 8460 §3: several mean none); ErrNoRecord when none does, an
// error naming the count when several do.
func Select(txts []string, version string) (string, error) {
	var found []string
	for _, t := range txts {
		t = strings.TrimSpace(t)
		if len(t) >= len(version) && strings.EqualFold(t[:len(version)], version) &&
			(len(t) == len(version) || t[len(version)] == ';' || t[len(version)] == ' ') {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return "", ErrNoRecord
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d records start with %s: a domain publishes one", len(found), version)
}

// fields splits "k=v; k=v" into ordered pairs; the first must be the
// version tag.
func fields(rec, version string) ([][2]string, error) {
	var out [][2]string
	for i, part := range strings.Split(rec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("field %q has no '='", part)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if i == 0 {
			if !strings.EqualFold(k+"="+v, version) {
				return nil, fmt.Errorf("the record does not start with %s", version)
			}
			continue
		}
		if k == "" {
			return nil, fmt.Errorf("field %q has no name", part)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// STSRecord is the MTA-STS TXT record at _mta-sts.<domain> (RFC 8461 §3.1).
type STSRecord struct {
	// ID changes whenever the policy changes: 1 to 32 letters and digits.
	ID string
}

// ParseSTSRecord parses an MTA-STS record ("v=STSv1; id=20240101T000000").
func ParseSTSRecord(rec string) (STSRecord, error) {
	fs, err := fields(rec, STSVersion)
	if err != nil {
		return STSRecord{}, fmt.Errorf("MTA-STS record: %v", err)
	}
	var r STSRecord
	for _, f := range fs {
		if f[0] != "id" {
			continue // extension fields are ignored (§3.1)
		}
		if r.ID != "" {
			return STSRecord{}, errors.New("MTA-STS record: id appears twice")
		}
		if !validID(f[1]) {
			return STSRecord{}, fmt.Errorf("MTA-STS record: id %q is not 1 to 32 letters and digits", f[1])
		}
		r.ID = f[1]
	}
	if r.ID == "" {
		return STSRecord{}, errors.New("MTA-STS record: no id field")
	}
	return r, nil
}

func validID(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// TLSRPTRecord is the TLS-RPT TXT record at _smtp._tls.<domain>
// (RFC 8460 §3).
type TLSRPTRecord struct {
	// RUA are the report addresses, each a mailto: or an https: URI.
	RUA []*url.URL
}

// ParseTLSRPTRecord parses a TLS-RPT record
// ("v=TLSRPTv1; rua=mailto:tls@example.com"). URIs of other schemes are
// skipped; a record with no usable address is an error.
func ParseTLSRPTRecord(rec string) (TLSRPTRecord, error) {
	fs, err := fields(rec, TLSRPTVersion)
	if err != nil {
		return TLSRPTRecord{}, fmt.Errorf("TLS-RPT record: %v", err)
	}
	var r TLSRPTRecord
	seen := false
	for _, f := range fs {
		if f[0] != "rua" {
			continue
		}
		if seen {
			return TLSRPTRecord{}, errors.New("TLS-RPT record: rua appears twice")
		}
		seen = true
		for _, s := range strings.Split(f[1], ",") {
			s = strings.TrimSpace(s)
			u, err := url.Parse(s)
			if err != nil {
				return TLSRPTRecord{}, fmt.Errorf("TLS-RPT record: rua %q: %v", s, err)
			}
			switch strings.ToLower(u.Scheme) {
			case "mailto":
				addr := u.Opaque
				if addr == "" {
					addr = u.Path
				}
				if at := strings.LastIndexByte(addr, '@'); at <= 0 || at == len(addr)-1 {
					return TLSRPTRecord{}, fmt.Errorf("TLS-RPT record: rua %q is not an address", s)
				}
				r.RUA = append(r.RUA, u)
			case "https":
				if u.Host == "" {
					return TLSRPTRecord{}, fmt.Errorf("TLS-RPT record: rua %q has no host", s)
				}
				r.RUA = append(r.RUA, u)
			}
		}
	}
	if !seen {
		return TLSRPTRecord{}, errors.New("TLS-RPT record: no rua field")
	}
	if len(r.RUA) == 0 {
		return TLSRPTRecord{}, errors.New("TLS-RPT record: rua names no mailto: or https: address")
	}
	return r, nil
}

// MailtoAddress is the address of a mailto: URI of a TLS-RPT record.
func MailtoAddress(u *url.URL) string {
	addr := u.Opaque
	if addr == "" {
		addr = u.Path
	}
	if i := strings.IndexByte(addr, '?'); i >= 0 {
		addr = addr[:i]
	}
	if s, err := url.PathUnescape(addr); err == nil {
		addr = s
	}
	return addr
}
