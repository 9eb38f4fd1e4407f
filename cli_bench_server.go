package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"mailbolt/mta/dns/dnstest"
)

// remoteBench is what `mailbolt bench --server` is told on top of the
// in-process bench's --messages, --size, --concurrency, --timeout and
// --json: the server to drive, how to send through it, and where to see
// what it delivered.
type remoteBench struct {
	server    string
	key       string
	from      string
	sink      string
	serverPID int
	domains   int
}

func (rb *remoteBench) addFlags(f *pflag.FlagSet) {
	f.StringVar(&rb.server, "server", "", "drive an already running server at this base URL (http://host:port) from this process, instead of one in-process")
	f.StringVar(&rb.key, "key", "", "with --server: API key to send with (prefer MAILBOLT_KEY)")
	f.StringVar(&rb.from, "from", "", "with --server: sender address, on a domain the key's account has verified")
	f.StringVar(&rb.sink, "sink", "", "with --server: address of the `mailbolt bench sink` the server relays to, to count deliveries")
	f.IntVar(&rb.serverPID, "server-pid", 0, "with --server: the server's process id, to report its CPU time per message from /proc")
	f.IntVar(&rb.domains, "to-domains", 16, "with --server: recipient domains the messages are spread over")
}

func (rb remoteBench) validate() error {
	u, err := url.Parse(rb.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server: %q is not a base URL such as http://127.0.0.1:8080", rb.server)
	}
	if rb.key == "" || rb.from == "" {
		return errors.New("--server needs --key and --from (see `mailbolt bench setup`)")
	}
	if rb.domains < 1 {
		return errors.New("--to-domains must be 1 or more")
	}
	return nil
}

// remoteReport is what a run against a running server measured.
// Durations are in milliseconds, rates in messages per second, CPU times
// in seconds.
type remoteReport struct {
	Server      string `json:"server"`
	Messages    int    `json:"messages"`
	Size        int    `json:"size"`
	Concurrency int    `json:"concurrency"`
	Domains     int    `json:"to_domains"`
	LoadBefore  string `json:"load_before"` // /proc/loadavg when the run began
	LoadAfter   string `json:"load_after"`

	Accepted       int      `json:"accepted"`
	Failed         int      `json:"failed"`
	NotSent        int      `json:"not_sent"`
	Errors         []string `json:"errors,omitempty"`
	AcceptSeconds  float64  `json:"accept_seconds"`
	AcceptedPerSec float64  `json:"accepted_per_sec"`
	AcceptP50      float64  `json:"accept_p50_ms"`
	AcceptP99      float64  `json:"accept_p99_ms"`
	AcceptMax      float64  `json:"accept_max_ms"`
	// ServerAcceptCPU is the server's CPU time while accepting (delivery
	// runs alongside); 0 without --server-pid.
	ServerAcceptCPU float64 `json:"server_accept_cpu_seconds"`

	Observed        bool    `json:"deliveries_observed"` // --sink given
	Delivered       int     `json:"delivered"`
	Duplicates      int     `json:"duplicates"`
	Signed          int     `json:"dkim_signed"`
	WireBytes       int     `json:"wire_bytes"`
	DeliverSeconds  float64 `json:"deliver_seconds"` // first request to last delivery
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	ServerCPU       float64 `json:"server_cpu_seconds"` // first request to last delivery
	CPUPerMessage   float64 `json:"server_cpu_per_message_ms"`

	// The server's memory at the end, from /proc/PID/status, in MiB
	// (with --server-pid): peak resident (VmHWM), resident, and of it
	// anonymous (Go's heap and stacks) and file pages (the database's
	// mapping).
	ServerPeakRSS float64 `json:"server_peak_rss_mb,omitempty"`
	ServerRSS     float64 `json:"server_rss_mb,omitempty"`
	ServerAnon    float64 `json:"server_rss_anon_mb,omitempty"`
	ServerFile    float64 `json:"server_rss_file_mb,omitempty"`

	TimedOut bool `json:"timed_out"`
	Complete bool `json:"complete"`
}

// runRemoteBench drives a running server: it posts cfg.messages messages
// from cfg.concurrency clients and, given a sink, waits until the sink has
// received as many messages as were accepted.
func runRemoteBench(ctx context.Context, cfg benchConfig, logw io.Writer) (*remoteReport, error) {
	rb := cfg.remote
	alg, _ := cfg.alg()
	rep := &remoteReport{Server: rb.server, Messages: cfg.messages, Size: cfg.size, Concurrency: cfg.concurrency,
		Domains: rb.domains, Observed: rb.sink != ""}
	var before sinkCounts
	if rb.sink != "" {
		var err error
		if before, err = sinkCount(rb.sink); err != nil {
			return nil, fmt.Errorf("--sink: %w", err)
		}
	}
	cpu := func() time.Duration {
		if rb.serverPID == 0 {
			return 0
		}
		d, err := procCPU(rb.serverPID)
		if err != nil {
			return 0
		}
		return d
	}
	if rb.serverPID != 0 {
		if _, err := procCPU(rb.serverPID); err != nil {
			return nil, err
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	fmt.Fprintf(logw, "bench: %d messages of about %d bytes from %d clients to %s...\n", cfg.messages, cfg.size, cfg.concurrency, rb.server)
	var delivered atomic.Int64
	prog := startProgress(logw, func(elapsed time.Duration) string {
		return benchStatus(0, delivered.Load(), cfg.messages, elapsed)
	})
	defer prog.Done("")

	rep.LoadBefore = loadAvg()
	cpu0 := cpu()
	start := time.Now()
	lat, acc, failed, failures := postAll(runCtx, cfg, strings.TrimSuffix(rb.server, "/"), alg)
	rep.AcceptSeconds = time.Since(start).Seconds()
	rep.ServerAcceptCPU = (cpu() - cpu0).Seconds()
	rep.Accepted, rep.Failed, rep.Errors = acc, failed, failures
	rep.NotSent = cfg.messages - acc - failed
	if acc > 0 {
		rep.AcceptedPerSec = float64(acc) / rep.AcceptSeconds
	}
	rep.AcceptP50, rep.AcceptP99, rep.AcceptMax = percentiles(lat)

	end := time.Now()
	if rb.sink != "" {
		var now sinkCounts
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
	wait:
		for {
			n, err := sinkCount(rb.sink)
			if err != nil {
				return rep, fmt.Errorf("--sink: %w", err)
			}
			now = n
			delivered.Store(n.Messages - before.Messages)
			if int(n.Messages-before.Messages) >= acc {
				break
			}
			select {
			case <-runCtx.Done():
				break wait
			case <-tick.C:
			}
		}
		end = time.Now()
		rep.Delivered = int(now.Messages - before.Messages)
		rep.Duplicates = rep.Delivered - int(now.Distinct-before.Distinct)
		rep.Signed = int(now.Signed - before.Signed)
		if rep.Delivered > 0 {
			rep.WireBytes = int((now.Bytes - before.Bytes) / int64(rep.Delivered))
		}
		rep.DeliverSeconds = end.Sub(start).Seconds()
		rep.DeliveredPerSec = float64(rep.Delivered) / rep.DeliverSeconds
	}
	rep.ServerCPU = (cpu() - cpu0).Seconds()
	if n := max(rep.Delivered, rep.Accepted); rb.serverPID != 0 && n > 0 {
		rep.CPUPerMessage = 1000 * rep.ServerCPU / float64(n)
	}
	rep.LoadAfter = loadAvg()
	if rb.serverPID != 0 {
		m := procMemory(rb.serverPID)
		rep.ServerPeakRSS, rep.ServerRSS, rep.ServerAnon, rep.ServerFile = m["VmHWM"], m["VmRSS"], m["RssAnon"], m["RssFile"]
	}
	rep.TimedOut = runCtx.Err() != nil
	rep.Complete = !rep.TimedOut && rep.Accepted == cfg.messages &&
		(rb.sink == "" || rep.Delivered == rep.Accepted && rep.Duplicates == 0)
	prog.Done(fmt.Sprintf("bench: %s accepted, %s delivered in %s", formatCount(int64(rep.Accepted)),
		formatCount(int64(rep.Delivered)), formatElapsed(time.Since(start))))
	return rep, nil
}

// postAll is sendAll for a server in another process: the same bodies,
// from the flags' --from, to recipients spread over --to-domains domains.
func postAll(ctx context.Context, cfg benchConfig, base, alg string) ([]time.Duration, int, int, []string) {
	rb := cfg.remote
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns: 2 * cfg.concurrency, MaxIdleConnsPerHost: 2 * cfg.concurrency,
		DisableCompression: true, IdleConnTimeout: 30 * time.Second}}
	defer client.CloseIdleConnections()
	text, _ := json.Marshal(benchText(max(cfg.size-headerOverhead(alg), 64)))
	from, _ := json.Marshal(rb.from)
	prefix := []byte(`{"from":` + string(from) + `,"subject":"bench message `)
	lat := make([]time.Duration, cfg.messages)
	var (
		next, accepted, failed atomic.Int64
		mu                     sync.Mutex
		failures               []string
		wg                     sync.WaitGroup
	)
	fail := func(s string) {
		failed.Add(1)
		mu.Lock()
		if len(failures) < 5 {
			failures = append(failures, s)
		}
		mu.Unlock()
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36) // recipients differ between runs
	for range cfg.concurrency {
		wg.Go(func() {
			var body bytes.Buffer
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= cfg.messages {
					return
				}
				n := strconv.Itoa(i)
				body.Reset()
				body.Write(prefix)
				body.WriteString(n + `","to":["rcpt` + n + `.` + stamp + `@d` + strconv.Itoa(i%rb.domains) + `.sink.test"],"text":`)
				body.Write(text)
				body.WriteByte('}')
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", bytes.NewReader(body.Bytes()))
				if err != nil {
					fail(err.Error())
					continue
				}
				req.Header.Set("X-API-Key", rb.key)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						fail(err.Error())
					}
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				if resp.StatusCode != http.StatusAccepted {
					fail(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw)))
					continue
				}
				lat[i] = max(d, time.Nanosecond)
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	out := lat[:0]
	for _, d := range lat {
		if d > 0 {
			out = append(out, d)
		}
	}
	return out, int(accepted.Load()), int(failed.Load()), failures
}

func (r *remoteReport) print(w io.Writer) {
	fmt.Fprintf(w, "mailbolt bench --server %s: %d messages, about %d bytes each, %d HTTP clients, %d recipient domains\n",
		r.Server, r.Messages, r.Size, r.Concurrency, r.Domains)
	fmt.Fprintf(w, "  load average %s before, %s after\n\n", r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "accepted   %8d in %7.2f s  %8.0f msgs/s   latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		r.Accepted, r.AcceptSeconds, r.AcceptedPerSec, r.AcceptP50, r.AcceptP99, r.AcceptMax)
	if r.NotSent > 0 {
		fmt.Fprintf(w, "not sent   %8d (the run timed out)\n", r.NotSent)
	}
	if r.Failed > 0 {
		fmt.Fprintf(w, "failed     %8d; first errors:\n", r.Failed)
		for _, e := range r.Errors {
			fmt.Fprintf(w, "           %s\n", e)
		}
	}
	if r.Observed {
		fmt.Fprintf(w, "delivered  %8d in %7.2f s  %8.0f msgs/s   (first request to last arrival at the sink)\n",
			r.Delivered, r.DeliverSeconds, r.DeliveredPerSec)
		fmt.Fprintf(w, "           %d DKIM-signed, %d bytes per message on the wire\n", r.Signed, r.WireBytes)
		if r.Duplicates > 0 {
			fmt.Fprintf(w, "DUPLICATES %8d messages arrived more than once\n", r.Duplicates)
		}
	} else {
		fmt.Fprintln(w, "delivered  not observed (no --sink)")
	}
	if r.ServerCPU > 0 {
		fmt.Fprintf(w, "server CPU %.2f s while accepting; %.2f s in all: %.3f ms per message\n",
			r.ServerAcceptCPU, r.ServerCPU, r.CPUPerMessage)
	}
	if r.ServerPeakRSS > 0 {
		fmt.Fprintf(w, "server RSS peak %.0f MB (VmHWM); at the end %.0f MB (anonymous %.0f, file %.0f)\n",
			r.ServerPeakRSS, r.ServerRSS, r.ServerAnon, r.ServerFile)
	}
	switch {
	case r.TimedOut:
		fmt.Fprintf(w, "\nTIMED OUT: %d of %d accepted, %d delivered\n", r.Accepted, r.Messages, r.Delivered)
	case !r.Complete:
		fmt.Fprintln(w, "\nINCOMPLETE: not every message was accepted and delivered once")
	}
}

// runRemoteCommand is bench's RunE with --server.
func runRemoteCommand(cmd *cobra.Command, cfg benchConfig) error {
	if err := cfg.remote.validate(); err != nil {
		return err
	}
	rep, err := runRemoteBench(cmd.Context(), cfg, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	return writeBenchReport(cmd.OutOrStdout(), cfg.jsonOut, rep, rep.print, rep.Complete)
}

// writeBenchReport writes a bench run's report to out, as indented JSON
// or as text (print), and fails the command when the run was incomplete.
func writeBenchReport(out io.Writer, asJSON bool, rep any, print func(io.Writer), complete bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		print(out)
	}
	if !complete {
		return errors.New("the run did not complete: see the report")
	}
	return nil
}

func newBenchSetupCommand() *cobra.Command {
	var alg string
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Prepare a data dir for `mailbolt bench --server`: an account, a key and a verified sending domain",
		Long: `setup opens --data-dir (the server must not be running on it), creates
an enterprise account without a rate limit, a key with every scope, and the
sending domain bench.test with a DKIM key of --dkim, verified against DNS
records it serves itself for the moment. It prints the key and the sender
address; the last line is the key.

Serve the data dir afterwards with --hostname mta.bench.test and --relay
pointing at a counting sink (mailbolt bench sink).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, _ := cmd.Flags().GetString("data-dir")
			secretFile, _ := cmd.Flags().GetString("secret-key-file")
			cfg := benchConfig{dkim: alg}
			a, err := cfg.alg()
			if err != nil {
				return err
			}
			key, err := benchSetupDir(cmd.Context(), dir, secretFile, a)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "from: bench@bench.test")
			fmt.Fprintln(out, "key:", key)
			fmt.Fprintln(out, key)
			return nil
		},
	}
	cmd.Flags().StringVar(&alg, "dkim", "rsa", "DKIM key of the sending domain: rsa (RSA-2048) or ed25519")
	return cmd
}

// benchSetupDir runs benchSetup on the database in dir, with a DNS server
// of its own for the domain's check.
func benchSetupDir(ctx context.Context, dir, secretFile, alg string) (string, error) {
	zone, err := dnstest.Listen()
	if err != nil {
		return "", fmt.Errorf("start the DNS server: %w", err)
	}
	defer zone.Close()
	sc := defaultServeConfig()
	sc.dataDir, sc.httpAddr, sc.smtpAddr = dir, "127.0.0.1:0", "127.0.0.1:0"
	sc.storage.SecretKeyFile = secretFile
	sc.hostname, sc.dnsServer, sc.metricsAddr = "mta.bench.test", zone.Addr, ""
	s, err := startService(sc, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return "", err
	}
	defer s.close()
	key, _, err := benchSetup(ctx, s.app, zone, alg)
	return key, err
}
