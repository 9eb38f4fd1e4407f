package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
)

// isFQDN reports whether name is a fully qualified domain name a receiving
// server can look up: at least two labels of letters, digits and hyphens,
// none starting or ending with a hyphen, and a final label that is not all
// digits.
func isFQDN(name string) bool {
	name = strings.TrimSuffix(name, ".")
	labels := strings.Split(name, ".")
	if len(name) > 253 || len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// startupFinding is one thing startupFindings has to say about a
// configuration: refuse marks what makes mail broken (serve refuses it
// unless --dev), the rest only warns. flag names the flag to set.
type startupFinding struct {
	flag   string
	msg    string
	refuse bool
}

// startupChecks refuses, before anything is written, settings that start
// a server whose mail would be broken: an explicit --hostname that is no
// FQDN (every domain would be told to point at it), and links derived from
// an unspecified bind address (every link in sent mail would be dead).
// With --dev those only warn. What is merely doubtful warns.
func (cfg serveConfig) startupChecks(log *slog.Logger) error {
	for _, f := range cfg.startupFindings() {
		switch {
		case f.refuse && !cfg.dev:
			return fmt.Errorf("%s", f.msg)
		case f.refuse:
			log.Warn(f.msg + " (allowed by --dev)")
		default:
			log.Warn(f.msg)
		}
	}
	return nil
}

// startupFindings lists what startupChecks refuses or warns about, in
// order; `mailbolt doctor` reports the same list.
func (cfg serveConfig) startupFindings() []startupFinding {
	var out []startupFinding
	if !isFQDN(cfg.hostname) {
		msg := fmt.Sprintf("--hostname: %q is not a fully qualified domain name such as mta.example.net: "+
			"every sending domain would be told to publish a:%s and a bounces CNAME to it", cfg.hostname, cfg.hostname)
		if cfg.hostnameSet {
			out = append(out, startupFinding{flag: "--hostname", msg: msg, refuse: true})
		} else {
			out = append(out, startupFinding{flag: "--hostname", msg: msg + "; the machine's name was taken because " +
				"--hostname is not set: set it before sending real mail"})
		}
	}
	if f, ok := cfg.acmePortsFinding(); ok {
		out = append(out, f)
	}
	if cfg.publicURL == "" {
		flag, addr := cfg.linkAddr()
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); flag != "" && (host == "" || ip != nil && ip.IsUnspecified()) {
			out = append(out, startupFinding{flag: "--public-url", refuse: true, msg: fmt.Sprintf("--public-url is needed: "+
				"%s %s listens on every address, so the links in sent mail (tracking, unsubscribe, invitations) "+
				"cannot be derived from it; set --public-url to the address recipients reach, such as "+
				"https://mail.example.com", flag, addr)})
		}
		return out
	}
	if u, err := url.Parse(cfg.publicURL); err == nil && u.Scheme == "http" {
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			out = append(out, startupFinding{flag: "--public-url", msg: "--public-url " + cfg.publicURL + " is plain http " +
				"on a host that is not loopback: links in sent mail (unsubscribe, invitations) travel unencrypted; use https"})
		}
	}
	return out
}
