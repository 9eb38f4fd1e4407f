package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"mailbolt/tlsconf"
)

// TLS settings of serve (docs/tls.md): which certificate, where HTTPS
// listens, and the SIGHUP reload of certificate files.

// tlsEnabled reports whether any certificate is configured.
func (cfg serveConfig) tlsEnabled() bool { return cfg.tlsOptions().Enabled() }

// tlsOptions are the certificate settings for tlsconf.New; the ACME cache
// is the data dir's acme/ directory.
func (cfg serveConfig) tlsOptions() tlsconf.Options {
	return tlsconf.Options{CertFile: cfg.tlsCert, KeyFile: cfg.tlsKey, ACMEDomains: cfg.acmeDomains,
		ACMEEmail: cfg.acmeEmail, ACMEDirectory: cfg.acmeDirectory, RenewBefore: cfg.acmeRenewBefore,
		CacheDir: filepath.Join(cfg.dataDir, "acme")}
}

// validateTLS checks the TLS flags together, before anything is opened.
func (cfg serveConfig) validateTLS() error {
	if err := cfg.tlsOptions().Check(); err != nil {
		return err
	}
	if cfg.httpsAddr != "" && !cfg.tlsEnabled() {
		return errors.New("--https-addr needs a certificate: --tls-cert and --tls-key, or --acme-domains")
	}
	if cfg.httpsAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.httpsAddr); err != nil {
			return fmt.Errorf("--https-addr: %q is not host:port", cfg.httpsAddr)
		}
	}
	if len(cfg.acmeDomains) > 0 {
		u, err := url.Parse(cfg.acmeDirectory)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("--acme-directory: %q is not an https URL", cfg.acmeDirectory)
		}
	}
	if cfg.acmeRenewBefore < 0 {
		return errors.New("--acme-renew-before must not be negative")
	}
	return nil
}

// defaultPublicURL is the base of links in sent mail, and the HTTPS URL
// plain HTTP names, when --public-url is not given: the first ACME domain
// over https (with the HTTPS port unless it is 443), else the HTTPS
// address, else the plain HTTP one. The addresses are the bound ones when
// serving, the flags for doctor (which binds nothing).
func (cfg serveConfig) defaultPublicURL(httpsAddr, httpAddr string) string {
	switch {
	case len(cfg.acmeDomains) > 0:
		host := strings.TrimSuffix(strings.TrimSpace(cfg.acmeDomains[0]), ".")
		if hosts, err := tlsconf.Hosts(cfg.acmeDomains[:1]); err == nil {
			host = hosts[0]
		}
		if p := port(httpsAddr); p != "" && p != "443" {
			host = net.JoinHostPort(host, p)
		}
		return "https://" + host
	case httpsAddr != "":
		return "https://" + httpsAddr
	}
	return "http://" + httpAddr
}

// linkAddr is the listen address links in sent mail are derived from
// when --public-url is not given (none with ACME: the first domain is).
func (cfg serveConfig) linkAddr() (flag, addr string) {
	switch {
	case len(cfg.acmeDomains) > 0:
		return "", ""
	case cfg.httpsAddr != "":
		return "--https-addr", cfg.httpsAddr
	}
	return "--http-addr", cfg.httpAddr
}

// acmePortsFinding warns when ACME is on and the CA can reach neither
// challenge: TLS-ALPN-01 is validated on port 443 and HTTP-01 on port 80.
func (cfg serveConfig) acmePortsFinding() (startupFinding, bool) {
	if len(cfg.acmeDomains) == 0 {
		return startupFinding{}, false
	}
	if port(cfg.httpsAddr) == "443" || port(cfg.httpAddr) == "80" {
		return startupFinding{}, false
	}
	return startupFinding{flag: "--acme-domains", msg: fmt.Sprintf("--acme-domains: neither port 443 (--https-addr %q) "+
		"nor port 80 (--http-addr %q) is bound, and the CA validates TLS-ALPN-01 on 443 and HTTP-01 on 80: "+
		"certificates can be obtained only if something forwards one of them here", cfg.httpsAddr, cfg.httpAddr)}, true
}

func port(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return p
}

// reloadOnHangup reads the certificate files again on each SIGHUP until
// stop is called; a failed reload keeps the certificate in use and says
// why.
func (s *service) reloadOnHangup() (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ch:
				if s.tls == nil {
					s.log.Info("SIGHUP: nothing to reload; no TLS certificate is configured")
					continue
				}
				if s.tls.ACME() {
					s.log.Info("SIGHUP: nothing to reload; ACME certificates are renewed on their own")
					continue
				}
				if err := s.tls.Reload(); err != nil {
					s.log.Error("SIGHUP: TLS certificate not reloaded; the previous one stays in use", "err", err)
				}
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
