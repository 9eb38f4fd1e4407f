// Package tlsconf holds the server certificate that every TLS listener of
// Mailbolt presents (HTTPS, STARTTLS on the inbound SMTP listener, the
// submission listeners): either a certificate and key read from PEM files
// and read again on Reload (serve calls it on SIGHUP), or certificates
// obtained and renewed over ACME (golang.org/x/crypto/acme/autocert),
// cached in a directory. Either way it hands out one *tls.Config whose
// GetCertificate picks the current certificate at each handshake, so a
// reload or a renewal reaches new connections without touching open ones.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
	"golang.org/x/net/idna"
)

// LetsEncrypt is the ACME directory used when Options.ACMEDirectory is
// empty: Let's Encrypt's production service.
const LetsEncrypt = autocert.DefaultACMEDirectory

// Options say where certificates come from: CertFile and KeyFile, or
// ACMEDomains — one of the two, never both.
type Options struct {
	// CertFile and KeyFile are PEM files: the certificate chain, leaf
	// first, and its private key (--tls-cert, --tls-key).
	CertFile, KeyFile string

	// ACMEDomains are the host names certificates are obtained for
	// (--acme-domains); the first is the one --public-url defaults to.
	ACMEDomains []string
	// ACMEEmail is the account's contact address, where the CA writes
	// about expiry and problems (--acme-email); may be empty.
	ACMEEmail string
	// ACMEDirectory is the CA's directory URL (--acme-directory); empty
	// is LetsEncrypt.
	ACMEDirectory string
	// CacheDir keeps the ACME account key and the certificates across
	// restarts; created (0700) if missing. Required with ACMEDomains.
	CacheDir string
	// RenewBefore is how long before expiry a certificate is renewed;
	// zero is autocert's default (a third of its lifetime, at most 30
	// days).
	RenewBefore time.Duration
	// HTTPClient talks to the CA; nil is http.DefaultClient. Tests set
	// one that trusts their own CA.
	HTTPClient *http.Client

	Logger *slog.Logger // nil discards
}

// Enabled reports whether o configures any certificate at all.
func (o Options) Enabled() bool {
	return o.CertFile != "" || o.KeyFile != "" || len(o.ACMEDomains) > 0
}

// Check refuses settings that do not go together: files and ACME
// domains, or one file without the other.
func (o Options) Check() error {
	files := o.CertFile != "" || o.KeyFile != ""
	switch {
	case files && len(o.ACMEDomains) > 0:
		return errors.New("--tls-cert/--tls-key and --acme-domains are mutually exclusive: give either certificate files or the domains to obtain certificates for")
	case files && (o.CertFile == "" || o.KeyFile == ""):
		return errors.New("--tls-cert and --tls-key go together: give both files")
	}
	return nil
}

// Source is where the certificate of every TLS listener comes from.
type Source struct {
	opts    Options
	log     *slog.Logger
	current atomic.Pointer[tls.Certificate] // files only
	acme    *autocert.Manager               // ACME only
	hosts   []string                        // ACME only: the domains, as ASCII
	config  *tls.Config
	mu      sync.Mutex // serializes Reload
}

// New checks o and, for files, reads them (a certificate that cannot be
// loaded stops serve before anything listens). ACME obtains nothing
// until a client asks for one of the domains.
func New(o Options) (*Source, error) {
	s := &Source{opts: o, log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	switch {
	case o.CertFile != "":
		if err := s.Reload(); err != nil {
			return nil, err
		}
	case len(o.ACMEDomains) > 0:
		m, hosts, err := newManager(o)
		if err != nil {
			return nil, err
		}
		s.acme, s.hosts = m, hosts
	default:
		return nil, errors.New("tlsconf: no certificate configured (--tls-cert/--tls-key or --acme-domains)")
	}
	s.config = s.build()
	return s, nil
}

func newManager(o Options) (*autocert.Manager, []string, error) {
	if o.CacheDir == "" {
		return nil, nil, errors.New("tlsconf: ACME needs a cache directory")
	}
	hosts, err := Hosts(o.ACMEDomains)
	if err != nil {
		return nil, nil, err
	}
	dir := o.ACMEDirectory
	if dir == "" {
		dir = LetsEncrypt
	}
	return &autocert.Manager{
		Prompt:      autocert.AcceptTOS,
		Cache:       autocert.DirCache(o.CacheDir),
		HostPolicy:  autocert.HostWhitelist(hosts...),
		RenewBefore: o.RenewBefore,
		Email:       o.ACMEEmail,
		Client:      &acme.Client{DirectoryURL: dir, HTTPClient: o.HTTPClient, UserAgent: "mailbolt"},
	}, hosts, nil
}

// Hosts checks the ACME domains and gives them in ASCII (IDNA) form,
// without a trailing dot: the names certificates are obtained for.
func Hosts(domains []string) ([]string, error) {
	var hosts []string
	for _, d := range domains {
		h, err := idna.Lookup.ToASCII(strings.TrimSuffix(strings.TrimSpace(d), "."))
		if err != nil || h == "" || !strings.Contains(h, ".") || strings.ContainsAny(h, ":/*") {
			return nil, fmt.Errorf("--acme-domains: %q is not a host name such as mail.example.com", d)
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// Domains are the ACME domains in ASCII (IDNA) form; nil for files.
func (s *Source) Domains() []string { return slices.Clone(s.hosts) }

// ACME reports whether certificates come from an ACME CA.
func (s *Source) ACME() bool { return s.acme != nil }

// build makes the one configuration every listener starts from: TLS 1.2
// at least (the spec's transport rule), 1.3 whenever the client has it
// (Go always picks the highest version both sides speak), and for 1.2
// only forward-secret AEAD suites (ECDHE with AES-GCM or ChaCha20-Poly1305:
// no CBC, no RC4, no 3DES, no static RSA key exchange). TLS 1.3's suites
// are all strong and not configurable.
func (s *Source) build() *tls.Config {
	c := &tls.Config{
		MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
	if s.acme != nil {
		c.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName == "" {
				// A client that sends no SNI (an MTA's STARTTLS, a
				// connection by IP address) gets the first domain's.
				h := *hello
				h.ServerName = s.hosts[0]
				hello = &h
			}
			return s.acme.GetCertificate(hello)
		}
		// TLS-ALPN-01: the CA's validation handshake asks for this
		// protocol and gets the challenge certificate.
		c.NextProtos = []string{acme.ALPNProto}
	} else {
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.current.Load(), nil }
	}
	return c
}

// Config is a fresh copy of the server configuration, for one listener
// to adjust (an HTTPS server adds "h2" and "http/1.1" to NextProtos); the
// certificate it presents follows Reload and renewals.
func (s *Source) Config() *tls.Config { return s.config.Clone() }

// HTTPHandler serves ACME HTTP-01 challenges
// (/.well-known/acme-challenge/…) on the plain-HTTP listener and hands
// every other request to fallback. With certificate files it is fallback.
func (s *Source) HTTPHandler(fallback http.Handler) http.Handler {
	if s.acme == nil {
		return fallback
	}
	h := s.acme.HTTPHandler(fallback)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// autocert checks the Host header against the domains as is; a
		// CA validating on another port than 80 (a forwarded port, a
		// test CA) sends host:port.
		if host, _, err := net.SplitHostPort(r.Host); err == nil && strings.HasPrefix(r.URL.Path, "/.well-known/acme-challenge/") {
			r = r.Clone(r.Context())
			r.Host = host
		}
		h.ServeHTTP(w, r)
	})
}

// Reload reads the certificate files again and, if they hold a valid
// pair, presents it from the next handshake on; connections already open
// keep theirs. On error the certificate in use stays. With ACME it does
// nothing: autocert renews on its own.
func (s *Source) Reload() error {
	if s.acme != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cert, err := tls.LoadX509KeyPair(s.opts.CertFile, s.opts.KeyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("--tls-cert: %w", err)
		}
	}
	s.current.Store(&cert)
	s.log.Info("TLS certificate loaded", "file", s.opts.CertFile, "subject", cert.Leaf.Subject.String(),
		"names", cert.Leaf.DNSNames, "not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	if time.Until(cert.Leaf.NotAfter) < 0 {
		s.log.Warn("TLS certificate has expired", "file", s.opts.CertFile, "not_after", cert.Leaf.NotAfter)
	}
	return nil
}

// Certificate is the certificate files currently presented; nil with
// ACME (each domain has its own).
func (s *Source) Certificate() *x509.Certificate {
	if c := s.current.Load(); c != nil {
		return c.Leaf
	}
	return nil
}
