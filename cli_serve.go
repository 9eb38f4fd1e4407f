package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"mailbolt/app"
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
	return cmd
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

// serve runs the service until ctx ends, then shuts down in order: stop
// accepting (HTTP, socket), stop the workers, close the database.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	log, err := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	wc, err := cfg.webConfig(log)
	if err != nil {
		return err
	}
	db, err := storage.Open(cfg.dataDir, storage.Options{})
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("another mailbolt is already running on %s", cfg.dataDir)
	}
	if err != nil {
		return err
	}
	defer db.Close()

	a := app.New(db, app.Options{Logger: log, SweepInterval: cfg.sweepInterval})
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
	admin, err := web.ListenAdmin(cfg.dataDir, web.LocalAdmin{App: a})
	if err != nil {
		ln.Close()
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
	log.Info("started", "http_addr", ln.Addr().String(), "data_dir", cfg.dataDir, "version", version)

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
	if serr := admin.Shutdown(shutdownCtx); serr != nil {
		log.Warn("management socket shutdown", "err", serr)
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
