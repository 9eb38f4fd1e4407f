package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/metrics"
	"mailbolt/mta"
	"mailbolt/mta/dns"
	"mailbolt/mta/queue"
	"mailbolt/mta/transport"
	"mailbolt/netguard"
	"mailbolt/storage"
	"mailbolt/tlsconf"
	"mailbolt/web"
)

// serveConfig is everything `mailbolt serve` can be told.
type serveConfig struct {
	// given says whether the flag of that name (without dashes) was
	// given, on the command line or by its MAILBOLT_* variable: serve and
	// doctor set it to their flags' Changed. nil (bench, a config built
	// in code) counts none as given.
	given func(name string) bool

	dataDir       string
	storage       storage.Options // --database and --secret-key-file, as every command opens storage
	databaseConns int
	httpAddr      string
	maxBodySize   int64
	maxMessage    int64
	// inboundMaxSize bounds a message the inbound SMTP listener takes
	// (SIZE and DATA: 552 above it).
	inboundMaxSize int64
	ipRateLimit    int
	deprecate      string
	sunset         string
	// deprecationNotesURL is linked from the deprecation notice.
	deprecationNotesURL string
	sweepInterval       time.Duration
	logLevel            string
	logFormat           string
	shutdownGrace       time.Duration
	// trustedProxies are CIDRs (or bare addresses) whose forwarding
	// headers name the client.
	trustedProxies []string
	readTimeout    time.Duration
	maxConnsPerIP  int

	dnsServer       string
	dnsTimeout      time.Duration
	hostname        string
	hostnameSet     bool // given by flag or environment, not taken from the machine
	spfInclude      string
	sendingIPs      []net.IP
	trackingHost    string
	domainRecheck   time.Duration
	dkimGrace       time.Duration
	domainCheckTick time.Duration

	dev               bool
	webhookBaseDelay  time.Duration
	webhookTimeout    time.Duration
	webhookMaxRetries int
	webhookRotation   time.Duration
	webhookAllow      []net.IPNet
	webhookWorkers    int
	webhookHostConns  int
	eventRetention    time.Duration

	relay            string
	relayUser        string
	relayPassword    string
	relayImplicitTLS bool
	mxPort           int
	mxAllow          []net.IPNet
	mtaSTSPort       int
	tlsRoots         string
	dnssec           bool
	// tlsReportRetry schedules the retries of TLS report uploads that
	// failed (--tls-report-retry-*).
	tlsReportRetry   transport.RetryPolicy
	smtpRetryBase    time.Duration
	smtpRetryMax     time.Duration
	queueLifetime    time.Duration
	deliveryLease    time.Duration
	deliveryWorkers  int
	smtpHostConns    int
	smtpConnTimeout  time.Duration
	smtpCmdTimeout   time.Duration
	messageRetention time.Duration

	publicURL  string
	smtpAddr   string
	geoIPDB    string
	systemFrom string

	// submissionAddr and submissionsAddr are the SMTP submission
	// listeners (STARTTLS and implicit TLS); empty: off.
	submissionAddr  string
	submissionsAddr string

	// metricsAddr is where /metrics is served; empty: nowhere.
	metricsAddr    string
	metricsAddrSet bool // given by flag or environment: failing to bind it stops serve
	logRecipients  bool
	// pprofAddr is where net/http/pprof is served (loopback only);
	// empty, the default: nowhere.
	pprofAddr string
	// memoryLimit is --memory-limit, the Go runtime's soft memory limit.
	memoryLimit memoryLimitFlag

	// TLS (docs/tls.md): HTTPS on httpsAddr, with certificate files or
	// ACME; the same certificate for STARTTLS on the inbound listener.
	httpsAddr       string
	tlsCert         string
	tlsKey          string
	acmeDomains     []string
	acmeEmail       string
	acmeDirectory   string
	acmeRenewBefore time.Duration
}

// defaultServeConfig is what serve runs with when no flag is given; the
// flags take their defaults from it and bench starts from it.
func defaultServeConfig() serveConfig {
	host, _ := os.Hostname()
	ad, wd, md := app.DefaultOptions(), web.DefaultConfig(), mta.DefaultOptions()
	hd, qd := ad.Webhooks.Dispatch, ad.Delivery
	return serveConfig{
		dataDir:           "./data",
		storage:           storage.DefaultOptions(),
		httpAddr:          "127.0.0.1:8080",
		maxBodySize:       wd.MaxBodyBytes,
		maxMessage:        ad.MaxMessageSize,
		inboundMaxSize:    10 << 20,
		ipRateLimit:       wd.IPRateLimit,
		sweepInterval:     ad.SweepInterval,
		logLevel:          "info",
		logFormat:         "json",
		shutdownGrace:     15 * time.Second,
		readTimeout:       wd.ReadTimeout,
		maxConnsPerIP:     wd.MaxConnsPerIP,
		dnsTimeout:        5 * time.Second,
		hostname:          host,
		domainRecheck:     ad.Domains.RecheckInterval,
		dkimGrace:         ad.Domains.RotationGrace,
		domainCheckTick:   ad.DomainCheckTick,
		webhookBaseDelay:  hd.BaseDelay,
		webhookTimeout:    hd.Timeout,
		webhookMaxRetries: hd.MaxRetries,
		webhookRotation:   ad.Webhooks.RotationWindow,
		webhookWorkers:    hd.Workers,
		webhookHostConns:  hd.PerHost,
		eventRetention:    ad.EventRetention,
		mxPort:            md.MXPort,
		mtaSTSPort:        443,
		tlsReportRetry:    transport.DefaultRetryPolicy(),
		smtpRetryBase:     qd.RetryBase,
		smtpRetryMax:      qd.RetryMax,
		queueLifetime:     qd.QueueLifetime,
		deliveryLease:     qd.Lease,
		deliveryWorkers:   qd.Concurrency,
		smtpHostConns:     md.MaxConnsPerHost,
		smtpConnTimeout:   md.ConnectTimeout,
		smtpCmdTimeout:    md.CommandTimeout,
		messageRetention:  ad.MessageRetention,
		smtpAddr:          "127.0.0.1:2525",
		metricsAddr:       metrics.DefaultAddr,
		memoryLimit:       memoryLimitFlag{bytes: defaultMemoryLimit},
		logRecipients:     qd.LogRecipients,
		acmeDirectory:     tlsconf.LetsEncrypt,
	}
}

func newServeCommand() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API and the background workers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.dataDir, _ = cmd.Flags().GetString("data-dir")
			cfg.storage = storageOptions(cmd)
			cfg.given = cmd.Flags().Changed
			cfg.hostnameSet = cmd.Flags().Changed("hostname")
			cfg.metricsAddrSet = cmd.Flags().Changed("metrics-addr")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cfg.addFlags(cmd.Flags())
	return cmd
}

// addFlags registers serve's flags, with their defaults from
// defaultServeConfig, on f: serve and doctor (which checks what serve
// would run with) take the same ones.
func (cfg *serveConfig) addFlags(f *pflag.FlagSet) {
	def := defaultServeConfig()
	f.StringVar(&cfg.httpAddr, "http-addr", def.httpAddr, "address of the HTTP API")
	f.Int64Var(&cfg.maxBodySize, "max-body-size", def.maxBodySize, "largest request body in bytes (413 BODY_TOO_LARGE above it)")
	f.Int64Var(&cfg.maxMessage, "max-message-size", def.maxMessage, "largest message in bytes as built for the wire, and largest template output (422 above it)")
	f.Int64Var(&cfg.inboundMaxSize, "inbound-max-size", def.inboundMaxSize, "largest message in bytes the inbound SMTP listener takes, advertised as its SIZE (552 at MAIL FROM SIZE= or DATA above it)")
	f.IntVar(&cfg.databaseConns, "database-conns", 16, "most connections this node opens to the --database PostgreSQL server")
	f.IntVar(&cfg.ipRateLimit, "ip-rate-limit", def.ipRateLimit, "requests per second per source IP for requests without a valid key")
	f.StringVar(&cfg.deprecate, "deprecate", def.deprecate, "mark an API version deprecated (v1)")
	f.StringVar(&cfg.sunset, "sunset", def.sunset, "sunset date of the deprecated version, YYYY-MM-DD or RFC 3339; after it the version answers 410")
	f.StringVar(&cfg.deprecationNotesURL, "deprecation-notes-url", def.deprecationNotesURL, "migration notes that the deprecation notice to account owners links to")
	f.DurationVar(&cfg.sweepInterval, "sweep-interval", def.sweepInterval, "how often expired records are removed")
	f.StringVar(&cfg.logLevel, "log-level", def.logLevel, "debug, info, warn or error")
	f.StringVar(&cfg.logFormat, "log-format", def.logFormat, "json or text")
	f.DurationVar(&cfg.shutdownGrace, "shutdown-grace", def.shutdownGrace, "how long the work in flight at shutdown may finish: HTTP requests, inbound SMTP sessions, SMTP deliveries and webhook requests")
	f.DurationVar(&cfg.readTimeout, "read-timeout", def.readTimeout, "how long a client has to send one whole HTTP request, headers and body")
	f.IntVar(&cfg.maxConnsPerIP, "max-connections-per-ip", def.maxConnsPerIP, "connections one source IP may hold open on the HTTP and inbound SMTP listeners (--trusted-proxies exempt)")
	f.StringSliceVar(&cfg.trustedProxies, "trusted-proxies", def.trustedProxies, "reverse proxies (CIDRs) whose X-Forwarded-For, Forwarded and X-Forwarded-Proto headers are believed (default none)")

	f.StringVar(&cfg.dnsServer, "dns-server", def.dnsServer, "DNS server (host:port) for domain checks, MX lookups and webhook host names (default: the first nameserver in /etc/resolv.conf)")
	f.DurationVar(&cfg.dnsTimeout, "dns-timeout", def.dnsTimeout, "timeout of one DNS query")
	f.StringVar(&cfg.hostname, "hostname", def.hostname, "this server's mail host name: target of each domain's return-path CNAME, and its SPF a: mechanism when neither --spf-include nor --sending-ips is set")
	f.StringVar(&cfg.spfInclude, "spf-include", def.spfInclude, "domain whose SPF record lists this server's addresses; sending domains publish include:<it>")
	f.IPSliceVar(&cfg.sendingIPs, "sending-ips", def.sendingIPs, "this server's outbound IP addresses; sending domains publish ip4:/ip6: for each")
	f.StringVar(&cfg.trackingHost, "tracking-host", def.trackingHost, "host name that open and click tracking is served on; sending domains then publish a track.<domain> CNAME to it")
	f.DurationVar(&cfg.domainRecheck, "domain-recheck-interval", def.domainRecheck, "how often each domain's DNS records are checked again")
	f.DurationVar(&cfg.dkimGrace, "dkim-rotation-grace", def.dkimGrace, "how long a replaced DKIM record must stay published before it is reported removable")
	f.DurationVar(&cfg.domainCheckTick, "domain-check-tick", def.domainCheckTick, "how often the scheduler looks for domains due a check")

	f.BoolVar(&cfg.dev, "dev", def.dev, "development mode: webhooks and MX hosts may be on loopback and private addresses, webhooks may use plain http, SMTP submission may take loopback logins without TLS")
	f.DurationVar(&cfg.webhookBaseDelay, "webhook-base-delay", def.webhookBaseDelay, "delay before the first webhook retry; doubles per retry, capped at 1h")
	f.DurationVar(&cfg.webhookTimeout, "webhook-timeout", def.webhookTimeout, "how long a webhook receiver has to answer")
	f.IntVar(&cfg.webhookMaxRetries, "webhook-max-retries", def.webhookMaxRetries, "retries after the first webhook attempt (0: none)")
	f.DurationVar(&cfg.webhookRotation, "webhook-rotation-window", def.webhookRotation, "how long a rotated-out webhook secret keeps signing")
	f.IPNetSliceVar(&cfg.webhookAllow, "webhook-allow-cidrs", def.webhookAllow, "address ranges webhooks may reach even though private or loopback (e.g. 10.0.0.0/8)")
	f.IntVar(&cfg.webhookWorkers, "webhook-workers", def.webhookWorkers, "webhook requests in flight at once")
	f.IntVar(&cfg.webhookHostConns, "webhook-host-connections", def.webhookHostConns, "webhook requests in flight to one receiver host")
	f.DurationVar(&cfg.eventRetention, "event-retention", def.eventRetention, "how long events stay in the history")

	f.StringVar(&cfg.relay, "relay", def.relay, "smarthost host:port that takes all outgoing mail (default: deliver to each recipient domain's MX)")
	f.StringVar(&cfg.relayUser, "relay-username", def.relayUser, "AUTH PLAIN user name for --relay (sent only over TLS; needs --relay-password)")
	f.StringVar(&cfg.relayPassword, "relay-password", def.relayPassword, "AUTH PLAIN password for --relay-username (prefer MAILBOLT_RELAY_PASSWORD)")
	f.BoolVar(&cfg.relayImplicitTLS, "relay-implicit-tls", def.relayImplicitTLS, "speak TLS from the first byte to --relay (port 465) instead of STARTTLS")
	f.IntVar(&cfg.mxPort, "mx-port", def.mxPort, "TCP port of recipient MX hosts (not with --relay)")
	f.IntVar(&cfg.mtaSTSPort, "mta-sts-port", def.mtaSTSPort, "TCP port of recipient domains' MTA-STS policy hosts (https://mta-sts.<domain>)")
	f.StringVar(&cfg.tlsRoots, "tls-roots", def.tlsRoots, "PEM file of extra trusted root certificates for MTA-STS policy hosts, MX hosts and the relay (default: the system roots only)")
	f.BoolVar(&cfg.dnssec, "dnssec", def.dnssec, "enforce DANE (TLSA records) for MX hosts in DNSSEC-signed zones, trusting the AD bit of --dns-server, which must then be a loopback address (a local validating resolver)")
	f.DurationVar(&cfg.tlsReportRetry.Base, "tls-report-retry-base", def.tlsReportRetry.Base, "delay before the first retry of a TLS report upload (https: rua) that failed; doubles per retry")
	f.DurationVar(&cfg.tlsReportRetry.Max, "tls-report-retry-max", def.tlsReportRetry.Max, "largest delay between retries of a TLS report upload")
	f.DurationVar(&cfg.tlsReportRetry.Lifetime, "tls-report-retry-lifetime", def.tlsReportRetry.Lifetime, "how long after its first attempt a TLS report upload is retried; then it is given up")
	f.IntVar(&cfg.tlsReportRetry.MaxPending, "tls-report-retry-pending", def.tlsReportRetry.MaxPending, "most TLS report uploads waiting for a retry; one that fails beyond it is given up")
	f.IPNetSliceVar(&cfg.mxAllow, "mx-allow-cidrs", def.mxAllow, "address ranges recipient MX hosts may have even though private or loopback (e.g. 10.0.0.0/8); --relay is never checked")
	f.DurationVar(&cfg.smtpRetryBase, "smtp-retry-base", def.smtpRetryBase, "delay before the first retry after a temporary SMTP failure; doubles per retry")
	f.DurationVar(&cfg.smtpRetryMax, "smtp-retry-max", def.smtpRetryMax, "largest delay between SMTP retries")
	f.DurationVar(&cfg.queueLifetime, "queue-lifetime", def.queueLifetime, "how long a recipient is retried before it soft-bounces")
	f.DurationVar(&cfg.deliveryLease, "delivery-lease", def.deliveryLease, "how long a claimed message is held by one delivery attempt; with several nodes, a stopped node's messages are taken over when it ends")
	f.IntVar(&cfg.deliveryWorkers, "delivery-workers", def.deliveryWorkers, "messages being delivered at once")
	f.IntVar(&cfg.smtpHostConns, "smtp-host-connections", def.smtpHostConns, "SMTP connections open to one destination host at most")
	f.DurationVar(&cfg.smtpConnTimeout, "smtp-connect-timeout", def.smtpConnTimeout, "timeout of an SMTP connect and TLS handshake")
	f.DurationVar(&cfg.smtpCmdTimeout, "smtp-command-timeout", def.smtpCmdTimeout, "how long an SMTP server has to answer one command")
	f.DurationVar(&cfg.messageRetention, "message-retention", def.messageRetention, "how long messages are kept after their queue lifetime")

	f.StringVar(&cfg.publicURL, "public-url", def.publicURL, "base URL of tracking and unsubscribe links, as recipients reach this server (default: https://<first --acme-domains name>, with the --https-addr port unless 443; else https://<--https-addr>; else http://<--http-addr>)")
	f.StringVar(&cfg.smtpAddr, "smtp-addr", def.smtpAddr, "address of the inbound SMTP listener for bounces, complaints and unsubscribe mail")
	f.StringVar(&cfg.submissionAddr, "submission-addr", def.submissionAddr, "address of the SMTP submission listener with STARTTLS (conventionally :587), where apps send with an API key as the password; empty: off")
	f.StringVar(&cfg.submissionsAddr, "submissions-addr", def.submissionsAddr, "address of the SMTP submission listener with TLS from the first byte (conventionally :465); empty: off")
	f.StringVar(&cfg.geoIPDB, "geoip-db", def.geoIPDB, "MaxMind-format database (GeoLite2-City .mmdb) to locate opens and clicks; none by default")
	f.StringVar(&cfg.systemFrom, "system-from", def.systemFrom, "sender address of mail the service sends itself (team invitations); its domain must be verified by some account")
	f.StringVar(&cfg.metricsAddr, "metrics-addr", def.metricsAddr, "address of the Prometheus /metrics endpoint; empty disables it")
	cfg.memoryLimit = def.memoryLimit
	f.Var(&cfg.memoryLimit, "memory-limit", "soft limit of the Go runtime's memory (heap, stacks), e.g. 128MiB or 1GiB; the collector works harder near it; 0 turns it off; when not given, GOMEMLIMIT if set")
	f.StringVar(&cfg.pprofAddr, "pprof-addr", def.pprofAddr, "serve Go's profiler (net/http/pprof) on this loopback address, for performance work; off by default (profiles hold secrets)")
	f.BoolVar(&cfg.logRecipients, "log-recipients", def.logRecipients, "log full recipient addresses in delivery lines (default: only their domain)")

	f.StringVar(&cfg.httpsAddr, "https-addr", def.httpsAddr, "address of the HTTPS API (needs --tls-cert/--tls-key or --acme-domains); with it, --http-addr answers only ACME challenges, health probes and redirects")
	f.StringVar(&cfg.tlsCert, "tls-cert", def.tlsCert, "PEM certificate chain (leaf first) for HTTPS and STARTTLS; read again on SIGHUP")
	f.StringVar(&cfg.tlsKey, "tls-key", def.tlsKey, "PEM private key of --tls-cert; read again on SIGHUP")
	f.StringSliceVar(&cfg.acmeDomains, "acme-domains", def.acmeDomains, "host names (comma list) to obtain certificates for over ACME, cached in the data dir; not with --tls-cert")
	f.StringVar(&cfg.acmeEmail, "acme-email", def.acmeEmail, "contact address of the ACME account (expiry notices)")
	f.StringVar(&cfg.acmeDirectory, "acme-directory", def.acmeDirectory, "ACME directory URL of the certificate authority")
	f.DurationVar(&cfg.acmeRenewBefore, "acme-renew-before", def.acmeRenewBefore, "renew an ACME certificate this long before it expires (at most 720h; default a third of its lifetime, at most 30 days)")
}

// validate checks the flags one by one and together, naming the flag in
// its error. It is the first of preflight's checks (cli_startup.go), which
// serve and doctor both run before anything is written.
func (cfg serveConfig) validate() error {
	if _, err := newLogger(io.Discard, cfg.logLevel, cfg.logFormat); err != nil {
		return err
	}
	if _, err := cfg.proxies(); err != nil {
		return err
	}
	// 0 means the default for these two (webConfig); below it is an error.
	if cfg.maxBodySize < 0 {
		return fmt.Errorf("--max-body-size must be 0 (the default, 10 MiB) or more bytes, not %d", cfg.maxBodySize)
	}
	if cfg.ipRateLimit < 0 {
		return fmt.Errorf("--ip-rate-limit must be 0 (the default, 20) or more requests per second, not %d", cfg.ipRateLimit)
	}
	if cfg.shutdownGrace < 0 {
		return fmt.Errorf("--shutdown-grace must not be negative, not %s", cfg.shutdownGrace)
	}
	if cfg.databaseConns < 0 {
		return fmt.Errorf("--database-conns must not be negative (0 means the default, 16), not %d", cfg.databaseConns)
	}
	if cfg.dnsServer != "" {
		if _, _, err := net.SplitHostPort(cfg.dnsServer); err != nil {
			return fmt.Errorf("--dns-server: %q is not host:port", cfg.dnsServer)
		}
	}
	switch {
	case cfg.hostname == "" && cfg.hostnameSet:
		return errors.New("--hostname was given empty (by the flag or MAILBOLT_HOSTNAME): set it to this server's mail host name, such as mta.example.net")
	case cfg.hostname == "":
		return errors.New("--hostname is required (the system host name is unknown)")
	}
	// Every sending domain is told to publish these as they are: the
	// domain of an SPF include: and a CNAME's target host.
	if cfg.spfInclude != "" && !isRecordFQDN(cfg.spfInclude) {
		return fmt.Errorf("--spf-include: %q is not a fully qualified domain name such as _spf.example.net", cfg.spfInclude)
	}
	if cfg.trackingHost != "" && !isFQDN(cfg.trackingHost) {
		return fmt.Errorf("--tracking-host: %q is not a fully qualified host name such as track.example.net", cfg.trackingHost)
	}
	if cfg.inboundMaxSize < 1024 {
		return errors.New("--inbound-max-size must be at least 1024 bytes")
	}
	if cfg.maxMessage < 1 {
		return errors.New("--max-message-size must be 1 or more bytes")
	}
	for name, d := range map[string]time.Duration{"--dns-timeout": cfg.dnsTimeout, "--domain-recheck-interval": cfg.domainRecheck,
		"--dkim-rotation-grace": cfg.dkimGrace, "--domain-check-tick": cfg.domainCheckTick, "--sweep-interval": cfg.sweepInterval,
		"--webhook-base-delay": cfg.webhookBaseDelay, "--webhook-timeout": cfg.webhookTimeout,
		"--webhook-rotation-window": cfg.webhookRotation, "--read-timeout": cfg.readTimeout} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	if cfg.maxConnsPerIP < 1 {
		return errors.New("--max-connections-per-ip must be 1 or more")
	}
	if cfg.webhookMaxRetries < 0 || cfg.webhookWorkers < 1 || cfg.webhookHostConns < 1 {
		return errors.New("--webhook-max-retries must be 0 or more, --webhook-workers and --webhook-host-connections 1 or more")
	}
	for name, d := range map[string]time.Duration{"--smtp-retry-base": cfg.smtpRetryBase, "--smtp-retry-max": cfg.smtpRetryMax,
		"--queue-lifetime": cfg.queueLifetime, "--smtp-connect-timeout": cfg.smtpConnTimeout,
		"--smtp-command-timeout": cfg.smtpCmdTimeout, "--message-retention": cfg.messageRetention, "--delivery-lease": cfg.deliveryLease,
		"--tls-report-retry-base": cfg.tlsReportRetry.Base, "--tls-report-retry-max": cfg.tlsReportRetry.Max,
		"--tls-report-retry-lifetime": cfg.tlsReportRetry.Lifetime} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	if max := hooks.DefaultOptions().MaxDelay; cfg.webhookBaseDelay > max {
		return fmt.Errorf("--webhook-base-delay must be at most %s (the longest wait between webhook retries), not %s", max, cfg.webhookBaseDelay)
	}
	if cfg.smtpRetryMax < cfg.smtpRetryBase {
		return errors.New("--smtp-retry-max must not be below --smtp-retry-base")
	}
	if cfg.tlsReportRetry.Max < cfg.tlsReportRetry.Base {
		return errors.New("--tls-report-retry-max must not be below --tls-report-retry-base")
	}
	if cfg.tlsReportRetry.Lifetime <= cfg.tlsReportRetry.Base {
		return errors.New("--tls-report-retry-lifetime must be longer than --tls-report-retry-base, or no upload is ever retried")
	}
	if cfg.tlsReportRetry.MaxPending < 1 {
		return errors.New("--tls-report-retry-pending must be 1 or more")
	}
	if cfg.mtaSTSPort < 1 || cfg.mtaSTSPort > 65535 {
		return errors.New("--mta-sts-port must be a TCP port")
	}
	if cfg.relay != "" {
		if _, _, err := net.SplitHostPort(cfg.relay); err != nil {
			return fmt.Errorf("--relay: %q is not host:port", cfg.relay)
		}
		if err := cfg.validateRelay(); err != nil {
			return err
		}
	} else {
		// These shape only the connection to the relay: without one they
		// would do nothing, silently. (--tls-roots also serves MX and
		// MTA-STS hosts.)
		for _, f := range []struct {
			flag string
			set  bool
		}{{"--relay-username", cfg.relayUser != ""}, {"--relay-password", cfg.relayPassword != ""},
			{"--relay-implicit-tls", cfg.relayImplicitTLS}} {
			if f.set {
				return fmt.Errorf("%s needs --relay: without it mail goes to each recipient domain's MX, and %s does nothing", f.flag, f.flag)
			}
		}
	}
	if cfg.dnssec {
		host, _, err := net.SplitHostPort(cfg.dnsServer)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return errors.New("--dnssec needs --dns-server at a loopback address (a validating resolver on this host, such as unbound): the AD bit of a remote resolver could be forged on the path")
		}
	}
	if cfg.tlsRoots != "" {
		if _, err := cfg.rootCAs(); err != nil {
			return err
		}
	}
	if cfg.mxPort < 1 || cfg.mxPort > 65535 || cfg.deliveryWorkers < 1 || cfg.smtpHostConns < 1 {
		return errors.New("--mx-port must be a port number, --delivery-workers and --smtp-host-connections 1 or more")
	}
	if cfg.publicURL != "" {
		u, err := url.Parse(cfg.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("--public-url: %q is not an http(s) base URL such as https://mail.example.com", cfg.publicURL)
		}
	}
	if cfg.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.metricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %q is not host:port (empty disables metrics)", cfg.metricsAddr)
		}
	}
	if cfg.pprofAddr != "" {
		if err := checkPprofAddr(cfg.pprofAddr); err != nil {
			return err
		}
	}
	// The plain-HTTP API's address has no "off": net.Listen would take ""
	// as every address on a random port.
	if _, _, err := net.SplitHostPort(cfg.httpAddr); err != nil {
		return fmt.Errorf("--http-addr: %q is not host:port", cfg.httpAddr)
	}
	if _, _, err := net.SplitHostPort(cfg.smtpAddr); err != nil {
		return fmt.Errorf("--smtp-addr: %q is not host:port", cfg.smtpAddr)
	}
	if cfg.systemFrom != "" {
		if _, err := mail.ParseAddress(cfg.systemFrom); err != nil {
			return fmt.Errorf("--system-from: %q is not an email address", cfg.systemFrom)
		}
	}
	if err := cfg.validateTLS(); err != nil {
		return err
	}
	if err := cfg.validateSubmission(); err != nil {
		return err
	}
	if err := validNotesURL(cfg.deprecationNotesURL); err != nil {
		return err
	}
	if cfg.eventRetention < 8*24*time.Hour {
		return errors.New("--event-retention must be at least 8 days (failed webhook deliveries stay replayable for 7 days after their last attempt)")
	}
	return nil
}

// mxOnlyFlags shape only delivery to recipient domains' MX hosts; with
// --relay all mail goes to the relay instead (mta.Deliverer.Route), so
// each would do nothing, silently. The reason says why, for the error.
var mxOnlyFlags = []struct{ flag, reason string }{
	{"mx-port", "the relay's port is the one in --relay"},
	{"mx-allow-cidrs", "the relay's address is never checked"},
	// STS and DANE are set up only without a relay (deliverer).
	{"mta-sts-port", "recipient domains' MTA-STS policies are not asked for"},
	{"dnssec", "DANE is not applied, the relay checks the recipients' servers"},
	// The relay's sessions make no TLS report counts, and reports are
	// not uploaded (no policy fetcher): a stored retry is given up at
	// once (transport.Reporter.retry).
	{"tls-report-retry-base", "no TLS report is uploaded, so none is retried"},
	{"tls-report-retry-max", "no TLS report is uploaded, so none is retried"},
	{"tls-report-retry-lifetime", "no TLS report is uploaded, so none is retried"},
	{"tls-report-retry-pending", "no TLS report is uploaded, so none is retried"},
}

// validateRelay checks the flags given with --relay: its credentials go
// together, and the flags of MX delivery are not given (by flag or
// variable) with it.
func (cfg serveConfig) validateRelay() error {
	// AUTH PLAIN is sent only when there is a user name (mta dial), and
	// its password is at least one character (RFC 4616 §2: passwd =
	// 1*SAFE): either alone would be ignored or refused by the relay.
	switch {
	case cfg.relayPassword != "" && cfg.relayUser == "":
		return errors.New("--relay-password needs --relay-username: AUTH PLAIN is sent only with a user name, and without one the password would be ignored")
	case cfg.relayUser != "" && cfg.relayPassword == "":
		return errors.New("--relay-username needs --relay-password (better MAILBOLT_RELAY_PASSWORD): AUTH PLAIN sends a user name with a password (RFC 4616), and an empty one is not a password")
	}
	if cfg.given == nil {
		return nil
	}
	for _, f := range mxOnlyFlags {
		if cfg.given(f.flag) {
			return fmt.Errorf("--%s (or %s) does nothing with --relay: all mail goes to the relay, not to recipient domains' MX hosts, and %s; remove it, or --relay", f.flag, envVarOf(f.flag), f.reason)
		}
	}
	return nil
}

// appOptions are the use cases' options: the flags over app.DefaultOptions.
func (cfg serveConfig) appOptions(log *slog.Logger, resolver *dns.Resolver, sender queue.Sender, geo *app.GeoDB,
	gs graderSettings) app.Options {
	o := app.DefaultOptions()
	o.Logger, o.SweepInterval, o.DomainCheckTick = log, cfg.sweepInterval, cfg.domainCheckTick
	o.EventRetention, o.MessageRetention = cfg.eventRetention, cfg.messageRetention
	o.PublicURL, o.GeoDB, o.SystemFrom = cfg.publicURL, geo, cfg.systemFrom
	o.MaxMessageSize = cfg.maxMessage
	d := &o.Domains
	d.Resolver, d.Hostname, d.SPFInclude, d.SendingIPs = resolver, cfg.hostname, cfg.spfInclude, cfg.sendingIPs
	d.TrackingHost, d.RecheckInterval, d.RotationGrace = cfg.trackingHost, cfg.domainRecheck, cfg.dkimGrace
	q := &o.Delivery
	q.Sender, q.RetryBase, q.RetryMax = sender, cfg.smtpRetryBase, cfg.smtpRetryMax
	q.QueueLifetime, q.Concurrency, q.Lease = cfg.queueLifetime, cfg.deliveryWorkers, cfg.deliveryLease
	q.ShutdownGrace, o.Webhooks.Dispatch.ShutdownGrace = cfg.shutdownGrace, cfg.shutdownGrace
	q.LogRecipients = cfg.logRecipients
	o.Grader = gs.appOptions(o.Grader, resolver)

	w := &o.Webhooks
	w.RotationWindow = cfg.webhookRotation
	h := &w.Dispatch
	// One resolver for the URL check at create and every connection.
	h.Guard, h.Lookup = hooks.Guard{AllowPrivate: cfg.dev, AllowHTTP: cfg.dev}, resolver.LookupIPAddr
	h.Guard.Allow = prefixes(cfg.webhookAllow)
	h.BaseDelay, h.Timeout, h.MaxRetries = cfg.webhookBaseDelay, cfg.webhookTimeout, cfg.webhookMaxRetries
	h.Workers, h.PerHost = cfg.webhookWorkers, cfg.webhookHostConns
	return o
}

// rootCAs are the roots that verify MTA-STS policy hosts, MX hosts and the
// relay: the system's, with --tls-roots added; nil without --tls-roots.
func (cfg serveConfig) rootCAs() (*x509.CertPool, error) {
	if cfg.tlsRoots == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(cfg.tlsRoots)
	if err != nil {
		return nil, fmt.Errorf("--tls-roots: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-roots: %s holds no PEM certificate", cfg.tlsRoots)
	}
	return pool, nil
}

// deliverer is the SMTP client that live mail leaves through, with the
// MTA-STS policy source and TLS report counter it uses (nil with --relay).
func (cfg serveConfig) deliverer(db *storage.DB, resolver *dns.Resolver, log *slog.Logger, onTLS func(mta.TLSOutcome)) (*mta.Deliverer, *transport.STS, error) {
	roots, err := cfg.rootCAs()
	if err != nil {
		return nil, nil, err
	}
	o := mta.DefaultOptions()
	o.Resolver, o.MXPort, o.HELO, o.Logger = resolver, cfg.mxPort, cfg.hostname, log
	o.RootCAs, o.OnTLS = roots, onTLS
	var sts *transport.STS
	if cfg.relay == "" {
		// Policy hosts are the recipient domain's word, like webhook URLs:
		// the webhook guard, loosened the same ways.
		sts = transport.NewSTS(transport.STSOptions{DB: db, Resolver: resolver, Port: cfg.mtaSTSPort, RootCAs: roots,
			Guard: netguard.Policy{AllowPrivate: cfg.dev, Allow: prefixes(cfg.webhookAllow)}, Logger: log})
		o.STS = sts
		if cfg.dnssec {
			o.DANE = resolver
		}
	}
	o.ConnectTimeout, o.CommandTimeout, o.MaxConnsPerHost = cfg.smtpConnTimeout, cfg.smtpCmdTimeout, cfg.smtpHostConns
	// MX hosts are the recipient domain's word, like webhook URLs are the
	// tenant's: the same guard, loosened the same ways. The relay is the
	// operator's own choice and is not checked.
	o.MXGuard = netguard.Policy{AllowPrivate: cfg.dev, Allow: prefixes(cfg.mxAllow)}
	if cfg.relay != "" {
		o.Relay = &mta.Relay{Addr: cfg.relay, Username: cfg.relayUser, Password: cfg.relayPassword,
			ImplicitTLS: cfg.relayImplicitTLS}
		if roots != nil {
			o.Relay.TLSConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		}
	}
	d, err := mta.NewDeliverer(o)
	return d, sts, err
}

// prefixes are the ranges of a CIDR list flag (pflag has parsed them).
func prefixes(nets []net.IPNet) []netip.Prefix {
	var out []netip.Prefix
	for _, n := range nets {
		if p, err := netip.ParsePrefix(n.String()); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// proxies parses --trusted-proxies: CIDR ranges, or single addresses.
func (cfg serveConfig) proxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range cfg.trustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("--trusted-proxies: %q is not a CIDR range such as 10.0.0.0/8 or an address", s)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 { // peers are compared as IPv4
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (cfg serveConfig) webConfig(log *slog.Logger) (web.Config, error) {
	wc := web.DefaultConfig()
	wc.Logger = log
	if cfg.maxBodySize > 0 { // 0: the default
		wc.MaxBodyBytes = cfg.maxBodySize
	}
	if cfg.ipRateLimit > 0 { // 0: the default
		wc.IPRateLimit = cfg.ipRateLimit
	}
	wc.ReadTimeout, wc.MaxConnsPerIP = cfg.readTimeout, cfg.maxConnsPerIP
	wc.Dev = cfg.dev
	var err error
	if wc.TrustedProxies, err = cfg.proxies(); err != nil {
		return wc, err
	}
	switch cfg.deprecate {
	case "":
		if cfg.sunset != "" {
			return wc, errors.New("--sunset needs --deprecate v1")
		}
		return wc, nil
	case "v1":
		wc.Deprecated = true
	default:
		return wc, fmt.Errorf("--deprecate: unknown API version %q (this server has v1)", cfg.deprecate)
	}
	if cfg.sunset != "" {
		t, err := time.Parse("2006-01-02", cfg.sunset)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, cfg.sunset); err != nil {
				return wc, fmt.Errorf("--sunset: %q is not a date such as 2027-06-30", cfg.sunset)
			}
		}
		wc.Sunset = t.UTC()
	}
	return wc, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not json or text", format)
}

// serve runs the service until ctx ends, then shuts it down (see
// service.run for the order).
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	log, err := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	tuneGC(ctx)
	s, err := startService(cfg, log, nil)
	if err != nil {
		return err
	}
	// SIGHUP is taken before anything says the server listens: its default
	// action would stop the process.
	stopReload := s.reloadOnHangup()
	defer stopReload()
	if c := s.db.PreMigrationCopy(); c != "" {
		fmt.Fprintf(stdout, "The database schema was migrated; the file as it was before is kept at %s (restore it with the previous mailbolt to roll back).\n", c)
	}
	if s.db.SecretKeyCreated() {
		fmt.Fprintf(stdout, "Created the secret key file %s: keep a copy of it with your backups; without it the secrets in mailbolt.db cannot be opened.\n", s.db.SecretKeyFile())
	}
	if b := s.boot; b != nil {
		fmt.Fprintf(stdout, "First start: created account %q (%s).\n", b.Account.Name, b.Account.ID)
		fmt.Fprintln(stdout, "Store these API keys now; they are shown only once.")
		fmt.Fprintln(stdout, "  live key:", b.LiveKey)
		fmt.Fprintln(stdout, "  test key:", b.TestKey)
		fmt.Fprintln(stdout, "Dashboard: the owner sets an email and password at this link (it works once, for 24 hours):")
		fmt.Fprintln(stdout, "  "+s.app.PasswordURL(b.OwnerLink))
	}
	if s.httpsLn != nil {
		fmt.Fprintf(stdout, "mailbolt %s listening on https://%s (data dir %s)\n", version, s.httpsLn.Addr(), cfg.dataDir)
		fmt.Fprintf(stdout, "plain HTTP on http://%s: ACME challenges, health probes and redirects only\n", s.httpLn.Addr())
	} else {
		fmt.Fprintf(stdout, "mailbolt %s listening on http://%s (data dir %s)\n", version, s.httpLn.Addr(), cfg.dataDir)
	}
	fmt.Fprintf(stdout, "inbound SMTP (bounces, complaints, unsubscribes, inbound domains) on %s\n", s.smtpLn.Addr())
	for _, l := range s.submission {
		fmt.Fprintf(stdout, "SMTP submission (%s) on %s\n", l.name[2:], l.ln.Addr())
	}
	if s.metricsLn != nil {
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", s.metricsLn.Addr())
	}
	if s.pprofLn != nil {
		fmt.Fprintf(stdout, "profiler on http://%s/debug/pprof/\n", s.pprofLn.Addr())
	}
	return s.run(ctx)
}
