package main

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"mailbolt/app"
	"mailbolt/metrics"
	"mailbolt/mta"
	"mailbolt/mta/dns"
	"mailbolt/mta/inbound"
	"mailbolt/mta/queue"
	"mailbolt/mta/transport"
	"mailbolt/storage"
	"mailbolt/tlsconf"
	"mailbolt/web"
)

// service is Mailbolt put together: the database, the use cases and their
// workers, the SMTP client, and the listeners. startService is the one
// place that builds it, for serve and for bench alike; run is the one
// place that starts and stops it.
type service struct {
	cfg       serveConfig
	log       *slog.Logger
	db        *storage.DB
	geo       *app.GeoDB
	deliverer *mta.Deliverer
	sts       *transport.STS     // nil with --relay
	tlsCounts *transport.Counter // TLS report counts
	reporter  *transport.Reporter
	app       *app.App
	httpLn    net.Listener
	smtpLn    net.Listener
	http      *http.Server
	tls       *tlsconf.Source // nil: no certificate configured
	httpsLn   net.Listener    // nil: no --https-addr
	https     *http.Server
	inbound   *inbound.Server
	admin     *web.AdminServer
	metrics   *metrics.Metrics
	metricsLn net.Listener // nil: no metrics endpoint
	metricsHS *http.Server
	pprofLn   net.Listener // nil: no --pprof-addr
	pprofHS   *http.Server
	// boot is the account and keys a first start created; nil otherwise.
	boot *app.Bootstrap

	// submission are the SMTP submission listeners (cli_submission.go).
	submission []*submissionListener
}

// startService checks cfg (preflight), binds every port, opens the
// database and builds every component, but serves nothing yet: run does.
// The order is the promise that a start which fails writes nothing: a
// setting serve refuses (a --sunset too, judged from the announcements
// read read-only: checkSunset), a file that does not load or a port it
// cannot bind stops it before the data dir, the key file or the database
// is created, and before an older database is migrated. The default account
// of a first start is created last, so a start that fails prints no keys
// and keeps none. hold, when not nil, wraps the SMTP client the queue sends
// through (bench holds delivery with it). On error everything opened so far
// is closed again.
func startService(cfg serveConfig, log *slog.Logger, hold func(queue.Sender) queue.Sender) (_ *service, err error) {
	p, err := cfg.preflight(log, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	s := &service{cfg: cfg, log: log, tls: p.tls, geo: p.geo}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := cfg.startupChecks(log); err != nil {
		return nil, err
	}
	wc, gs := p.web, p.grader
	if err := cfg.checkSunset(wc, time.Now()); err != nil {
		return nil, err
	}

	applyMemoryLimit(cfg.memoryLimit)
	if err := s.listen(); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(s)
	wc.Observe = s.metrics.Request
	dbOpts := cfg.storage
	dbOpts.DatabaseConns = cfg.databaseConns
	dbOpts.Logger = log
	dbOpts.CommitObserver = s.metrics.Commit
	s.db, err = storage.Open(cfg.dataDir, dbOpts)
	if errors.Is(err, storage.ErrLocked) {
		return nil, fmt.Errorf("another mailbolt is already running on %s", cfg.dataDir)
	}
	if err != nil {
		return nil, openFailed(cfg.dataDir, err)
	}
	if c := s.db.PreMigrationCopy(); c != "" {
		log.Warn("database schema migrated; the file as it was before is kept for a rollback", "copy", c)
	}
	if s.db.SecretKeyCreated() {
		log.Info("created the secret key file; keep a copy of it with your backups", "file", s.db.SecretKeyFile())
	}
	resolver := dns.SystemResolver()
	if cfg.dnsServer != "" {
		resolver = &dns.Resolver{Server: cfg.dnsServer}
	}
	resolver.Timeout = cfg.dnsTimeout
	s.tlsCounts = transport.NewCounter(s.db, nil)
	onTLS := func(o mta.TLSOutcome) {
		result := o.Failure
		if result == "" {
			result = "success"
		}
		s.metrics.TLSSession(o.Policy, result)
		s.tlsCounts.Add(o.Domain, o.Policy, o.Failure)
		if o.Failure != "" {
			log.Info("TLS failure", "domain", o.Domain, "mx", o.MX, "policy", o.Policy, "policy_id", o.PolicyID, "result", o.Failure, "detail", o.Detail)
		}
	}
	if s.deliverer, s.sts, err = cfg.deliverer(s.db, resolver, log, onTLS); err != nil {
		return nil, err
	}
	var sender queue.Sender = s.deliverer
	if hold != nil {
		sender = hold(sender)
	}
	ao := cfg.appOptions(log, resolver, sender, s.geo, gs)
	observe(s.metrics, &ao)
	s.app, err = app.New(s.db, ao)
	if err != nil {
		return nil, err
	}
	s.reporter = cfg.tlsReporter(s.db, resolver, s.sts, s.app, log)
	if err := announceDeprecation(s.app, cfg, wc, log); err != nil {
		return nil, err
	}

	s.serveSubmissionOn(wc)
	if s.boot, err = s.app.BootstrapIfEmpty(); err != nil {
		return nil, fmt.Errorf("create the default account: %w", err)
	}
	if cfg.publicURL == "" {
		s.app.SetPublicURL(cfg.defaultPublicURL(s.httpsAddr(), s.httpLn.Addr().String()))
	}
	ib := inbound.Options{Domain: cfg.hostname, MaxMessageSize: cfg.inboundMaxSize,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	if s.tls != nil {
		ib.TLSConfig = s.tls.Config() // STARTTLS with the same certificate
	}
	s.inbound = inbound.NewServer(s.app.Inbound(), ib)
	s.admin, err = web.ListenAdmin(cfg.dataDir, app.LocalAdmin{App: s.app, Server: true})
	if errors.Is(err, web.ErrSocketPathTooLong) {
		// Serve anyway; only management commands during serving are lost.
		log.Warn("no management socket: management commands will not work while this server runs", "err", err)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	api, err := web.New(s.app, wc)
	if err != nil {
		return nil, err
	}
	// One source IP may hold only so many connections on either listener;
	// trusted proxies, which carry many clients, are exempt.
	s.httpLn = web.LimitConns(s.httpLn, wc.MaxConnsPerIP, wc.TrustedProxies, web.TooManyConnections)
	s.smtpLn = web.LimitConns(s.smtpLn, wc.MaxConnsPerIP, wc.TrustedProxies, tooManySMTPConnections)
	s.http = s.httpServer(api, wc)
	if s.httpsLn != nil {
		s.httpsLn = web.LimitConns(s.httpsLn, wc.MaxConnsPerIP, wc.TrustedProxies, web.TooManyConnections)
		s.https = s.httpServer(web.HSTS(api), wc)
		s.https.TLSConfig = s.tls.Config()
		s.http.Handler = api.PlainHTTP(s.httpsURL())
	}
	if s.tls != nil {
		// HTTP-01 challenges on the plain-HTTP address.
		s.http.Handler = s.tls.HTTPHandler(s.http.Handler)
	}
	return s, nil
}

// listen binds every port serve listens on. startService calls it before
// it opens the database, so a port that cannot be bound stops the start
// with nothing written. A port taken by a server on the same data dir is
// said to be that.
func (s *service) listen() (err error) {
	cfg := s.cfg
	bind := func(flag, addr string) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln, nil
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			if _, derr := web.DialAdmin(cfg.dataDir); derr == nil {
				return nil, fmt.Errorf("another mailbolt is already running on %s (%s: listen on %s: %w)", cfg.dataDir, flag, addr, err)
			}
		}
		return nil, fmt.Errorf("%s: listen on %s: %w", flag, addr, err)
	}
	if s.httpLn, err = bind("--http-addr", cfg.httpAddr); err != nil {
		return err
	}
	if cfg.httpsAddr != "" {
		if s.httpsLn, err = bind("--https-addr", cfg.httpsAddr); err != nil {
			return err
		}
	}
	if s.smtpLn, err = bind("--smtp-addr", cfg.smtpAddr); err != nil {
		return err
	}
	if s.metricsLn, err = listenMetrics(cfg, s.log); err != nil {
		return err
	}
	if err := s.listenSubmission(); err != nil {
		return err
	}
	if s.pprofLn, err = listenPprof(cfg); err != nil {
		return err
	}
	return nil
}

// maxHeaderBytes caps a request's header (net/http's default, 1 MiB; it
// reads 4 KiB more before it refuses). net/http answers a request over it
// with a 431 of its own in text/plain, before any handler runs: outside
// the error envelope, as docs/errors.md says. The cap has to be applied
// while the header is read, so a handler cannot take that answer over
// without a second, higher cap that would answer the same way.
const maxHeaderBytes = http.DefaultMaxHeaderBytes

// httpServer is the http.Server the API is served by, on either address.
func (s *service) httpServer(h http.Handler, wc web.Config) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: min(10*time.Second, wc.ReadTimeout),
		ReadTimeout: wc.ReadTimeout, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: httpErrorLog(s.log)}
}

// httpErrorLog is what net/http logs (a panic in a handler, a failed
// accept) at warn, except failed TLS handshakes: scanners and clients
// that give up make them all day on a public port, so they go at debug.
func httpErrorLog(l *slog.Logger) *stdlog.Logger {
	return stdlog.New(logLineFunc(func(line string) {
		level := slog.LevelWarn
		if strings.HasPrefix(line, "http: TLS handshake error") {
			level = slog.LevelDebug
		}
		l.Log(context.Background(), level, line)
	}), "", 0)
}

// logLineFunc takes each line a log.Logger writes, without its newline.
type logLineFunc func(string)

func (f logLineFunc) Write(p []byte) (int, error) {
	f(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// httpsURL is the base URL of the HTTPS API that the plain-HTTP address
// points to: --public-url when it is https, else its default.
func (s *service) httpsURL() string {
	if u, err := url.Parse(s.cfg.publicURL); err == nil && u.Scheme == "https" {
		return strings.TrimSuffix(s.cfg.publicURL, "/")
	}
	return s.cfg.defaultPublicURL(s.httpsAddr(), "")
}

// httpsAddr is the bound HTTPS address, "" when HTTPS is off.
func (s *service) httpsAddr() string {
	if s.httpsLn == nil {
		return ""
	}
	return s.httpsLn.Addr().String()
}

// tooManySMTPConnections answers an inbound SMTP connection over the
// per-IP cap: 421 tells the client to try again later (RFC 5321 §3.8).
var tooManySMTPConnections = []byte("421 4.7.0 Too many connections from your address, try again later\r\n")

// close releases what startService opened, in reverse order; for a
// service that never ran.
func (s *service) close() {
	if s.admin != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		s.admin.Shutdown(ctx)
	}
	if s.smtpLn != nil {
		s.smtpLn.Close()
	}
	s.closeSubmission()
	if s.metricsLn != nil {
		s.metricsLn.Close()
	}
	if s.pprofLn != nil {
		s.pprofLn.Close()
	}
	if s.httpLn != nil {
		s.httpLn.Close()
	}
	if s.httpsLn != nil {
		s.httpsLn.Close()
	}
	if s.deliverer != nil {
		s.deliverer.Close()
	}
	if s.geo != nil {
		s.geo.Close()
	}
	if s.db != nil {
		s.db.Close()
	}
}

// run serves until ctx ends or the HTTP server fails, then shuts down:
// stop accepting (HTTP, inbound SMTP, the management socket) and stop the
// workers taking new work (deliveries, webhooks) at once; let what is in
// flight in all of them finish within the one --shutdown-grace and wait for
// it (deliveries and webhook requests still out then are cut off and put
// back); close the SMTP client's connections, close the database. It
// always closes the service.
func (s *service) run(ctx context.Context) error {
	workerCtx, stopWorkers := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	workers.Go(func() { s.app.Run(workerCtx) })
	workers.Go(func() { s.transportLoop(workerCtx) })
	if s.sts != nil {
		workers.Go(func() { s.sts.Run(workerCtx, time.Hour) })
	}
	workers.Go(func() { s.reporter.Run(workerCtx, time.Hour) })
	workers.Go(func() { s.reporter.RunRetries(workerCtx) })
	go s.inbound.Serve(s.smtpLn)
	s.serveSubmission()
	serveErr := make(chan error, 2)
	go func() { serveErr <- s.http.Serve(s.httpLn) }()
	httpsAddr := ""
	if s.https != nil {
		go func() { serveErr <- s.https.ServeTLS(s.httpsLn, "", "") }()
		httpsAddr = s.httpsLn.Addr().String()
	}
	metricsAddr := ""
	if s.metricsLn != nil {
		s.metricsHS = metricsServer(s.metrics, s.log)
		go s.metricsHS.Serve(s.metricsLn)
		metricsAddr = s.metricsLn.Addr().String()
	}
	if s.pprofLn != nil {
		s.pprofHS = pprofServer()
		go s.pprofHS.Serve(s.pprofLn)
		s.log.Warn("profiler served: it exposes memory contents, keep it on loopback and turn it off when done",
			"pprof_addr", s.pprofLn.Addr().String())
	}
	s.log.Info("started", "http_addr", s.httpLn.Addr().String(), "https_addr", httpsAddr, "smtp_addr", s.smtpLn.Addr().String(),
		"metrics_addr", metricsAddr, "data_dir", s.cfg.dataDir, "version", version)
	if len(s.submission) > 0 {
		s.log.Info("smtp submission listening", s.submissionAddrs()...)
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		s.log.Error("http server stopped", "err", err)
	}
	s.log.Info("shutting down")
	s.app.BeginShutdown() // /readyz answers 503 from now on
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.shutdownGrace)
	defer cancel()
	// The workers stop claiming now; their own ShutdownGrace, the same
	// --shutdown-grace, runs from here alongside the listeners'.
	stopWorkers()
	var httpDone sync.WaitGroup
	if s.https != nil {
		httpDone.Go(func() {
			if serr := s.https.Shutdown(shutdownCtx); serr != nil {
				s.log.Warn("https shutdown", "err", serr)
			}
		})
	}
	if serr := s.http.Shutdown(shutdownCtx); serr != nil {
		s.log.Warn("http shutdown", "err", serr)
	}
	httpDone.Wait()
	if s.metricsHS != nil {
		s.metricsHS.Shutdown(shutdownCtx)
	}
	if s.pprofHS != nil {
		s.pprofHS.Close() // a profile being taken is cut short
	}
	if serr := s.inbound.Shutdown(shutdownCtx); serr != nil {
		s.inbound.Close()
	}
	s.shutdownSubmission(shutdownCtx)
	if s.admin != nil {
		if serr := s.admin.Shutdown(shutdownCtx); serr != nil {
			s.log.Warn("management socket shutdown", "err", serr)
		}
	}
	workers.Wait()
	s.deliverer.Close()
	if ferr := s.tlsCounts.Flush(); ferr != nil {
		s.log.Warn("TLS report counts not saved", "err", ferr)
	}
	if s.geo != nil {
		s.geo.Close()
	}
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = cerr
	}
	s.log.Info("stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// transportLoop writes the TLS report counts every minute (the cached
// MTA-STS policies are refreshed every hour by STS.Run beside it).
func (s *service) transportLoop(ctx context.Context) {
	flush := time.NewTicker(time.Minute)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			if err := s.tlsCounts.Flush(); err != nil {
				s.log.Warn("TLS report counts not saved", "err", err)
			}
		}
	}
}

// tlsReporter sends the daily TLS reports: by mail from --system-from
// through the queue, or uploaded through the guard.
func (cfg serveConfig) tlsReporter(db *storage.DB, resolver *dns.Resolver, sts *transport.STS, a *app.App, log *slog.Logger) *transport.Reporter {
	contact := ""
	if cfg.systemFrom != "" {
		if addr, err := mail.ParseAddress(cfg.systemFrom); err == nil {
			contact = "mailto:" + addr.Address
		}
	}
	o := transport.ReporterOptions{DB: db, Resolver: resolver, Uploads: sts, Org: cfg.hostname, Contact: contact,
		Retry: cfg.tlsReportRetry, Logger: log}
	if cfg.systemFrom != "" {
		o.Mail = func(to string, r transport.Report) error {
			subject := fmt.Sprintf("Report Domain: %s Submitter: %s Report-ID: <%s>", r.Domain(), r.OrganizationName, r.ReportID)
			_, err := a.SendSystemRaw(to, subject, "TLS report (RFC 8460), attached as application/tlsrpt+gzip.", []string{"tls-report"},
				func(from, messageID string, date time.Time) ([]byte, error) {
					return r.Message(from, to, messageID, date)
				})
			return err
		}
	}
	return transport.NewReporter(o)
}
