package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"mailbolt/app"
	"mailbolt/hooks"
	"mailbolt/mta"
	"mailbolt/mta/queue"
	"mailbolt/storage"
	"mailbolt/web"
)

// serveConfig is everything `mailbolt serve` can be told.
type serveConfig struct {
	dataDir       string
	httpAddr      string
	maxBodySize   int64
	ipRateLimit   int
	deprecate     string
	sunset        string
	sweepInterval time.Duration
	logLevel      string
	logFormat     string
	shutdownGrace time.Duration

	dnsServer       string
	dnsTimeout      time.Duration
	hostname        string
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
	smtpRetryBase    time.Duration
	smtpRetryMax     time.Duration
	queueLifetime    time.Duration
	deliveryWorkers  int
	smtpHostConns    int
	smtpConnTimeout  time.Duration
	smtpCmdTimeout   time.Duration
	messageRetention time.Duration

	publicURL  string
	smtpAddr   string
	geoIPDB    string
	systemFrom string
}

func newServeCommand() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API and the background workers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.dataDir, _ = cmd.Flags().GetString("data-dir")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.httpAddr, "http-addr", "127.0.0.1:8080", "address of the HTTP API")
	f.Int64Var(&cfg.maxBodySize, "max-body-size", 10<<20, "largest request body in bytes (413 BODY_TOO_LARGE above it)")
	f.IntVar(&cfg.ipRateLimit, "ip-rate-limit", 20, "requests per second per source IP for requests without a valid key")
	f.StringVar(&cfg.deprecate, "deprecate", "", "mark an API version deprecated (v1)")
	f.StringVar(&cfg.sunset, "sunset", "", "sunset date of the deprecated version, YYYY-MM-DD or RFC 3339; after it the version answers 410")
	f.DurationVar(&cfg.sweepInterval, "sweep-interval", time.Minute, "how often expired records are removed")
	f.StringVar(&cfg.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&cfg.logFormat, "log-format", "json", "json or text")
	f.DurationVar(&cfg.shutdownGrace, "shutdown-grace", 15*time.Second, "how long in-flight requests may finish on shutdown")

	host, _ := os.Hostname()
	f.StringVar(&cfg.dnsServer, "dns-server", "", "DNS server (host:port) for domain checks and MX lookups (default: the first nameserver in /etc/resolv.conf)")
	f.DurationVar(&cfg.dnsTimeout, "dns-timeout", 5*time.Second, "timeout of one DNS query")
	f.StringVar(&cfg.hostname, "hostname", host, "this server's mail host name: target of each domain's return-path CNAME, and its SPF a: mechanism when neither --spf-include nor --sending-ips is set")
	f.StringVar(&cfg.spfInclude, "spf-include", "", "domain whose SPF record lists this server's addresses; sending domains publish include:<it>")
	f.IPSliceVar(&cfg.sendingIPs, "sending-ips", nil, "this server's outbound IP addresses; sending domains publish ip4:/ip6: for each")
	f.StringVar(&cfg.trackingHost, "tracking-host", "", "host name that open and click tracking is served on; sending domains then publish a track.<domain> CNAME to it")
	f.DurationVar(&cfg.domainRecheck, "domain-recheck-interval", 24*time.Hour, "how often each domain's DNS records are checked again")
	f.DurationVar(&cfg.dkimGrace, "dkim-rotation-grace", 7*24*time.Hour, "how long a replaced DKIM record must stay published before it is reported removable")
	f.DurationVar(&cfg.domainCheckTick, "domain-check-tick", time.Minute, "how often the scheduler looks for domains due a check")

	f.BoolVar(&cfg.dev, "dev", false, "development mode: webhooks may target loopback and private addresses and plain http")
	hookDefaults := hooks.DefaultOptions()
	f.DurationVar(&cfg.webhookBaseDelay, "webhook-base-delay", hookDefaults.BaseDelay, "delay before the first webhook retry; doubles per retry, capped at 1h")
	f.DurationVar(&cfg.webhookTimeout, "webhook-timeout", hookDefaults.Timeout, "how long a webhook receiver has to answer")
	f.IntVar(&cfg.webhookMaxRetries, "webhook-max-retries", hookDefaults.MaxRetries, "retries after the first webhook attempt (0: none)")
	f.DurationVar(&cfg.webhookRotation, "webhook-rotation-window", 24*time.Hour, "how long a rotated-out webhook secret keeps signing")
	f.IPNetSliceVar(&cfg.webhookAllow, "webhook-allow-cidrs", nil, "address ranges webhooks may reach even though private or loopback (e.g. 10.0.0.0/8)")
	f.IntVar(&cfg.webhookWorkers, "webhook-workers", hookDefaults.Workers, "webhook requests in flight at once")
	f.IntVar(&cfg.webhookHostConns, "webhook-host-connections", hookDefaults.PerHost, "webhook requests in flight to one receiver host")
	f.DurationVar(&cfg.eventRetention, "event-retention", 30*24*time.Hour, "how long events stay in the history")

	f.StringVar(&cfg.relay, "relay", "", "smarthost host:port that takes all outgoing mail (default: deliver to each recipient domain's MX)")
	f.StringVar(&cfg.relayUser, "relay-username", "", "AUTH PLAIN user name for --relay (sent only over TLS)")
	f.StringVar(&cfg.relayPassword, "relay-password", "", "AUTH PLAIN password for --relay (prefer MAILBOLT_RELAY_PASSWORD)")
	f.BoolVar(&cfg.relayImplicitTLS, "relay-implicit-tls", false, "speak TLS from the first byte to --relay (port 465) instead of STARTTLS")
	f.IntVar(&cfg.mxPort, "mx-port", 25, "TCP port of recipient MX hosts")
	f.DurationVar(&cfg.smtpRetryBase, "smtp-retry-base", 5*time.Minute, "delay before the first retry after a temporary SMTP failure; doubles per retry")
	f.DurationVar(&cfg.smtpRetryMax, "smtp-retry-max", 2*time.Hour, "largest delay between SMTP retries")
	f.DurationVar(&cfg.queueLifetime, "queue-lifetime", 120*time.Hour, "how long a recipient is retried before it soft-bounces")
	f.IntVar(&cfg.deliveryWorkers, "delivery-workers", 64, "messages being delivered at once")
	f.IntVar(&cfg.smtpHostConns, "smtp-host-connections", 10, "SMTP connections open to one destination host at most")
	f.DurationVar(&cfg.smtpConnTimeout, "smtp-connect-timeout", 30*time.Second, "timeout of an SMTP connect and TLS handshake")
	f.DurationVar(&cfg.smtpCmdTimeout, "smtp-command-timeout", 5*time.Minute, "how long an SMTP server has to answer one command")
	f.DurationVar(&cfg.messageRetention, "message-retention", 30*24*time.Hour, "how long messages are kept after their queue lifetime")

	f.StringVar(&cfg.publicURL, "public-url", "", "base URL of tracking and unsubscribe links, as recipients reach this server (default: http://<--http-addr>)")
	f.StringVar(&cfg.smtpAddr, "smtp-addr", "127.0.0.1:2525", "address of the inbound SMTP listener for bounces, complaints and unsubscribe mail")
	f.StringVar(&cfg.geoIPDB, "geoip-db", "", "MaxMind-format database (GeoLite2-City .mmdb) to locate opens and clicks; none by default")
	f.StringVar(&cfg.systemFrom, "system-from", "", "sender address of mail the service sends itself (team invitations); its domain must be verified by some account")
	return cmd
}

func (cfg serveConfig) validate() error {
	if cfg.dnsServer != "" {
		if _, _, err := net.SplitHostPort(cfg.dnsServer); err != nil {
			return fmt.Errorf("--dns-server: %q is not host:port", cfg.dnsServer)
		}
	}
	if cfg.hostname == "" {
		return errors.New("--hostname is required (the system host name is unknown)")
	}
	for name, d := range map[string]time.Duration{"--dns-timeout": cfg.dnsTimeout, "--domain-recheck-interval": cfg.domainRecheck,
		"--dkim-rotation-grace": cfg.dkimGrace, "--domain-check-tick": cfg.domainCheckTick, "--sweep-interval": cfg.sweepInterval,
		"--webhook-base-delay": cfg.webhookBaseDelay, "--webhook-timeout": cfg.webhookTimeout,
		"--webhook-rotation-window": cfg.webhookRotation} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	if cfg.webhookMaxRetries < 0 || cfg.webhookWorkers < 1 || cfg.webhookHostConns < 1 {
		return errors.New("--webhook-max-retries must be 0 or more, --webhook-workers and --webhook-host-connections 1 or more")
	}
	for name, d := range map[string]time.Duration{"--smtp-retry-base": cfg.smtpRetryBase, "--smtp-retry-max": cfg.smtpRetryMax,
		"--queue-lifetime": cfg.queueLifetime, "--smtp-connect-timeout": cfg.smtpConnTimeout,
		"--smtp-command-timeout": cfg.smtpCmdTimeout, "--message-retention": cfg.messageRetention} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive", name)
		}
	}
	if cfg.smtpRetryMax < cfg.smtpRetryBase {
		return errors.New("--smtp-retry-max must not be below --smtp-retry-base")
	}
	if cfg.relay != "" {
		if _, _, err := net.SplitHostPort(cfg.relay); err != nil {
			return fmt.Errorf("--relay: %q is not host:port", cfg.relay)
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
	if _, _, err := net.SplitHostPort(cfg.smtpAddr); err != nil {
		return fmt.Errorf("--smtp-addr: %q is not host:port", cfg.smtpAddr)
	}
	if cfg.systemFrom != "" {
		if _, err := mail.ParseAddress(cfg.systemFrom); err != nil {
			return fmt.Errorf("--system-from: %q is not an email address", cfg.systemFrom)
		}
	}
	if cfg.eventRetention < 8*24*time.Hour {
		return errors.New("--event-retention must be at least 8 days (failed webhook deliveries stay replayable for 7 days after their last attempt)")
	}
	return nil
}

func (cfg serveConfig) webhookOptions(resolver *mta.Resolver) app.WebhookOptions {
	guard := hooks.Guard{AllowPrivate: cfg.dev, AllowHTTP: cfg.dev}
	for _, n := range cfg.webhookAllow {
		if p, err := netip.ParsePrefix(n.String()); err == nil {
			guard.Allow = append(guard.Allow, p)
		}
	}
	dispatch := hooks.DefaultOptions()
	dispatch.BaseDelay, dispatch.Timeout, dispatch.MaxRetries = cfg.webhookBaseDelay, cfg.webhookTimeout, cfg.webhookMaxRetries
	dispatch.Workers, dispatch.PerHost = cfg.webhookWorkers, cfg.webhookHostConns
	return app.WebhookOptions{Guard: guard, RotationWindow: cfg.webhookRotation, Lookup: resolver.LookupIPAddr,
		Dispatch: &dispatch}
}

// deliverer is the SMTP client that live mail leaves through.
func (cfg serveConfig) deliverer(resolver *mta.Resolver, log *slog.Logger) *mta.Deliverer {
	d := &mta.Deliverer{Resolver: resolver, MXPort: cfg.mxPort, HELO: cfg.hostname, ConnectTimeout: cfg.smtpConnTimeout,
		CommandTimeout: cfg.smtpCmdTimeout, MaxConnsPerHost: cfg.smtpHostConns, Logger: log}
	if cfg.relay != "" {
		d.Relay = &mta.Relay{Addr: cfg.relay, Username: cfg.relayUser, Password: cfg.relayPassword,
			ImplicitTLS: cfg.relayImplicitTLS}
	}
	return d
}

func (cfg serveConfig) deliveryOptions(sender queue.Sender) queue.Options {
	return queue.Options{Sender: sender, RetryBase: cfg.smtpRetryBase, RetryMax: cfg.smtpRetryMax,
		QueueLifetime: cfg.queueLifetime, Concurrency: cfg.deliveryWorkers}
}

func (cfg serveConfig) webConfig(log *slog.Logger) (web.Config, error) {
	wc := web.Config{MaxBodyBytes: cfg.maxBodySize, IPRateLimit: cfg.ipRateLimit, Logger: log}
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

// tuneGC lets the heap grow to five times the live data between
// collections (GOGC=400) unless GOGC is set: the service's live heap is
// small (tens of MB), and collecting at every doubling costs a fifth of the
// CPU of a send at full load.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// serve runs the service until ctx ends, then shuts down in order: stop
// accepting (HTTP, socket), stop the workers, close the database.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	log, err := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	tuneGC()
	if err := cfg.validate(); err != nil {
		return err
	}
	wc, err := cfg.webConfig(log)
	if err != nil {
		return err
	}
	gs, err := readGraderSettings(os.LookupEnv)
	if err != nil {
		return err
	}
	gs.web(&wc)
	db, err := storage.Open(cfg.dataDir, storage.Options{})
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("another mailbolt is already running on %s", cfg.dataDir)
	}
	if err != nil {
		return err
	}
	defer db.Close()

	resolver := mta.SystemResolver()
	if cfg.dnsServer != "" {
		resolver = &mta.Resolver{Server: cfg.dnsServer}
	}
	resolver.Timeout = cfg.dnsTimeout
	var geo *app.GeoDB
	if cfg.geoIPDB != "" {
		if geo, err = app.OpenGeoDB(cfg.geoIPDB); err != nil {
			return fmt.Errorf("--geoip-db: %w", err)
		}
		defer geo.Close()
	}
	deliverer := cfg.deliverer(resolver, log)
	defer deliverer.Close()
	a, err := app.New(db, app.Options{Logger: log, SweepInterval: cfg.sweepInterval, DomainCheckTick: cfg.domainCheckTick,
		Domains: app.DomainOptions{Resolver: resolver, Hostname: cfg.hostname, SPFInclude: cfg.spfInclude,
			SendingIPs: cfg.sendingIPs, TrackingHost: cfg.trackingHost, RecheckInterval: cfg.domainRecheck,
			RotationGrace: cfg.dkimGrace},
		EventRetention:   cfg.eventRetention,
		MessageRetention: cfg.messageRetention,
		Delivery:         cfg.deliveryOptions(deliverer),
		PublicURL:        cfg.publicURL,
		GeoDB:            geo,
		SystemFrom:       cfg.systemFrom,
		Grader:           gs.appOptions(resolver, 10*time.Second),
		Webhooks:         cfg.webhookOptions(resolver)})
	if err != nil {
		return err
	}
	boot, err := a.BootstrapIfEmpty()
	if err != nil {
		return fmt.Errorf("create the default account: %w", err)
	}
	if boot != nil {
		fmt.Fprintf(stdout, "First start: created account %q (%s).\n", boot.Account.Name, boot.Account.ID)
		fmt.Fprintln(stdout, "Store these API keys now; they are shown only once.")
		fmt.Fprintln(stdout, "  live key:", boot.LiveKey)
		fmt.Fprintln(stdout, "  test key:", boot.TestKey)
	}

	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.httpAddr, err)
	}
	if cfg.publicURL == "" {
		a.SetPublicURL("http://" + ln.Addr().String())
	}
	smtpLn, err := net.Listen("tcp", cfg.smtpAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("--smtp-addr: listen on %s: %w", cfg.smtpAddr, err)
	}
	inbound := mta.NewInboundServer(a.Inbound(), mta.InboundOptions{Domain: cfg.hostname,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)})
	go inbound.Serve(smtpLn)
	admin, err := web.ListenAdmin(cfg.dataDir, app.LocalAdmin{App: a})
	if errors.Is(err, web.ErrSocketPathTooLong) {
		// Serve anyway; only management commands during serving are lost.
		log.Warn("no management socket: management commands will not work while this server runs", "err", err)
		err = nil
	}
	if err != nil {
		ln.Close()
		inbound.Close()
		return err
	}
	srv := &http.Server{Handler: web.New(a, wc), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 2 * time.Minute, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

	workerCtx, stopWorkers := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	workers.Add(1)
	go func() {
		defer workers.Done()
		a.Run(workerCtx)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "mailbolt %s listening on http://%s (data dir %s)\n", version, ln.Addr(), cfg.dataDir)
	fmt.Fprintf(stdout, "inbound SMTP (bounces, complaints, unsubscribes) on %s\n", smtpLn.Addr())
	log.Info("started", "http_addr", ln.Addr().String(), "smtp_addr", smtpLn.Addr().String(), "data_dir", cfg.dataDir, "version", version)

	select {
	case <-ctx.Done():
	case err = <-serveErr:
		log.Error("http server stopped", "err", err)
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.shutdownGrace)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil {
		log.Warn("http shutdown", "err", serr)
	}
	if serr := inbound.Shutdown(shutdownCtx); serr != nil {
		inbound.Close()
	}
	if admin != nil {
		if serr := admin.Shutdown(shutdownCtx); serr != nil {
			log.Warn("management socket shutdown", "err", serr)
		}
	}
	stopWorkers()
	workers.Wait()
	if cerr := db.Close(); cerr != nil {
		return cerr
	}
	log.Info("stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
