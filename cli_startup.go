package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"mailbolt/app"
	"mailbolt/tlsconf"
	"mailbolt/web"
)

// isFQDN reports whether name is a fully qualified domain name a receiving
// server can look up: at least two labels of letters, digits and hyphens,
// none starting or ending with a hyphen, and a final label that is not all
// digits.
func isFQDN(name string) bool { return fqdn(name, false) }

// isRecordFQDN is isFQDN for a domain that names DNS records rather than a
// host, such as the domain of an SPF include: its labels may also hold
// underscores (RFC 2181 §11), as in _spf.example.net.
func isRecordFQDN(name string) bool { return fqdn(name, true) }

func fqdn(name string, underscore bool) bool {
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
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || underscore && c == '_') {
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
		// An address that is not host:port is validate's to refuse, not
		// one that listens on every address.
		flag, addr := cfg.linkAddr()
		host, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); flag != "" && err == nil && (host == "" || ip != nil && ip.IsUnspecified()) {
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

// preflight is what serve's start-up checks give once every setting has
// passed them: the HTTP API's configuration with the GRADER_* settings,
// and the files the flags name, loaded (the certificate, the GeoIP
// database). Nothing is written or bound yet.
type preflight struct {
	web    web.Config
	grader graderSettings
	tls    *tlsconf.Source // nil: no certificate configured
	geo    *app.GeoDB      // nil: no --geoip-db
}

// close releases what preflight opened, for a start that goes no further
// (and for doctor, which only checks).
func (p *preflight) close() {
	if p.geo != nil {
		p.geo.Close()
	}
}

// preflight runs every check of serve's settings that needs no database
// and no port: the flags (validate), the GRADER_* variables read through
// lookupEnv, and the files the flags name, which must load. serve runs it
// before it writes or binds anything, so a refused setting leaves the data
// dir untouched; doctor runs the same, so what serve refuses doctor fails.
// The start-up findings (startupFindings) are the other half: serve
// refuses or warns, doctor reports each.
func (cfg serveConfig) preflight(log *slog.Logger, lookupEnv func(string) (string, bool)) (_ *preflight, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	wc, err := cfg.webConfig(log)
	if err != nil {
		return nil, err
	}
	gs, err := readGraderSettings(lookupEnv)
	if err != nil {
		return nil, err
	}
	gs.web(&wc)
	p := &preflight{web: wc, grader: gs}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if cfg.tlsEnabled() {
		to := cfg.tlsOptions()
		to.Logger = log
		if p.tls, err = tlsconf.New(to); err != nil {
			return nil, err
		}
	}
	if cfg.geoIPDB != "" {
		if p.geo, err = app.OpenGeoDB(cfg.geoIPDB); err != nil {
			return nil, fmt.Errorf("--geoip-db: %w", err)
		}
	}
	return p, nil
}
