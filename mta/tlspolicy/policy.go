package tlspolicy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Policy modes (RFC 8461 §3.2).
const (
	ModeEnforce = "enforce"
	ModeTesting = "testing"
	ModeNone    = "none"
)

// MaxPolicySize bounds the policy file a sender reads (RFC 8461 §3.3 asks
// senders to bound it; 64 KiB is far above any real policy).
const MaxPolicySize = 64 << 10

// MaxMaxAge is the largest max_age a policy may give (31557600 s, about a
// year; RFC 8461 §3.2).
const MaxMaxAge = 31557600 * time.Second

// Policy is an MTA-STS policy file, served at
// https://mta-sts.<domain>/.well-known/mta-sts.txt (RFC 8461 §3.2).
type Policy struct {
	Mode   string        // enforce, testing or none
	MX     []string      // host patterns: "mx.example.com" or "*.example.com", lower case
	MaxAge time.Duration // how long the policy may be cached
	// ID is the id of the MTA-STS record the policy was fetched under;
	// set by whoever fetched it, not part of the file.
	ID string
}

// ParsePolicy parses a policy file: "key: value" lines separated by CRLF
// or LF. version must be STSv1; mode and max_age must appear once; mx may
// repeat and is needed unless the mode is none. Unknown keys are ignored.
func ParsePolicy(body []byte) (*Policy, error) {
	if len(body) > MaxPolicySize {
		return nil, fmt.Errorf("MTA-STS policy: larger than %d bytes", MaxPolicySize)
	}
	p := &Policy{}
	var version, mode, maxAge bool
	for n, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("MTA-STS policy: line %d %q is not \"key: value\"", n+1, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "version":
			if version {
				return nil, errors.New("MTA-STS policy: version appears twice")
			}
			if v != "STSv1" {
				return nil, fmt.Errorf("MTA-STS policy: version %q is not STSv1", v)
			}
			version = true
		case "mode":
			if mode {
				return nil, errors.New("MTA-STS policy: mode appears twice")
			}
			if v != ModeEnforce && v != ModeTesting && v != ModeNone {
				return nil, fmt.Errorf("MTA-STS policy: mode %q is not enforce, testing or none", v)
			}
			p.Mode, mode = v, true
		case "max_age":
			if maxAge {
				return nil, errors.New("MTA-STS policy: max_age appears twice")
			}
			secs, err := strconv.ParseUint(v, 10, 64)
			if err != nil || len(v) > 10 {
				return nil, fmt.Errorf("MTA-STS policy: max_age %q is not a number of seconds", v)
			}
			p.MaxAge, maxAge = time.Duration(min(secs, uint64(MaxMaxAge/time.Second)))*time.Second, true
		case "mx":
			pat := strings.ToLower(strings.TrimSuffix(v, "."))
			if !validPattern(pat) {
				return nil, fmt.Errorf("MTA-STS policy: mx %q is not a host name or *.domain", v)
			}
			p.MX = append(p.MX, pat)
		}
	}
	switch {
	case !version:
		return nil, errors.New("MTA-STS policy: no version line")
	case !mode:
		return nil, errors.New("MTA-STS policy: no mode line")
	case !maxAge:
		return nil, errors.New("MTA-STS policy: no max_age line")
	case len(p.MX) == 0 && p.Mode != ModeNone:
		return nil, errors.New("MTA-STS policy: no mx line")
	}
	return p, nil
}

func validPattern(p string) bool {
	p = strings.TrimPrefix(p, "*.")
	if p == "" || len(p) > 253 || !strings.Contains(p, ".") {
		return false
	}
	for _, label := range strings.Split(p, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Matches reports whether an MX host name matches one of the policy's mx
// patterns (RFC 8461 §4.1): exactly, or for "*.example.com" a name of one
// more label (mx.example.com, not a.b.example.com nor example.com).
func (p *Policy) Matches(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, pat := range p.MX {
		if rest, ok := strings.CutPrefix(pat, "*."); ok {
			dot := strings.IndexByte(host, '.')
			if dot > 0 && host[dot+1:] == rest {
				return true
			}
			continue
		}
		if host == pat {
			return true
		}
	}
	return false
}

// String is the policy as a policy file, in canonical form.
func (p *Policy) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: STSv1\r\nmode: %s\r\n", p.Mode)
	for _, mx := range p.MX {
		fmt.Fprintf(&b, "mx: %s\r\n", mx)
	}
	fmt.Fprintf(&b, "max_age: %d\r\n", int64(p.MaxAge/time.Second))
	return b.String()
}
