package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	msgauth "github.com/emersion/go-msgauth/dkim"
	"github.com/spf13/cobra"

	"mailbolt/app"
	"mailbolt/mta"
	"mailbolt/mta/dkim"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/mta/queue"
	"mailbolt/mta/smtptest"
	"mailbolt/storage"
	"mailbolt/tlsconf/tlstest"
)

// benchConfig is everything `mailbolt bench` can be told.
type benchConfig struct {
	messages        int
	size            int
	concurrency     int
	dkim            string
	deliveryWorkers int
	smtpConns       int
	queueOnly       bool
	phased          bool
	timeout         time.Duration
	jsonOut         bool
	cpuProfile      string
	memProfile      string
	dataDir         string // "" for a temp dir removed afterwards
	database        string // --database: PostgreSQL instead of the embedded file
	storage         storage.Options
	via             string // http or smtp (cli_bench_smtp.go)
	starttls        bool   // with --via smtp: STARTTLS on each session
	clientProcess   bool   // with --via smtp: the clients in a process of their own

	remote remoteBench // --server: drive a running server (cli_bench_server.go)
}

func newBenchCommand() *cobra.Command {
	var cfg benchConfig
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure sending: the service in-process against an in-process SMTP sink",
		Long: `bench runs the HTTP API, the delivery queue and the SMTP client in this
process, sends --messages messages through POST /v1/messages from
--concurrency clients, delivers them DKIM-signed through a loopback SMTP
sink, and reports accepted and delivered messages per second, accept
latency, accept-to-delivered time and peak RSS.

Without --data-dir the database lives in a temporary directory that is
removed afterwards; with it, the directory must not hold a database yet
and is kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("data-dir") {
				cfg.dataDir, _ = cmd.Flags().GetString("data-dir")
			}
			cfg.storage = storageOptions(cmd)
			cfg.database = cfg.storage.Database
			if err := cfg.validate(); err != nil {
				return err
			}
			if cfg.remote.server != "" {
				return runRemoteCommand(cmd, cfg)
			}
			rep, err := runBench(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return writeBenchReport(cmd.OutOrStdout(), cfg.jsonOut, rep, rep.print, rep.Complete)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.messages, "messages", 10000, "messages to send, one recipient each")
	f.IntVar(&cfg.size, "size", 2048, "approximate size of each message as delivered, in bytes")
	f.IntVar(&cfg.concurrency, "concurrency", 64, "HTTP clients sending at once")
	f.StringVar(&cfg.dkim, "dkim", "rsa", "DKIM key of the sending domain: rsa (RSA-2048) or ed25519")
	f.IntVar(&cfg.deliveryWorkers, "delivery-workers", 64, "messages being delivered at once (as serve --delivery-workers)")
	f.IntVar(&cfg.smtpConns, "smtp-connections", 16, "SMTP connections to the sink at most (as serve --smtp-host-connections)")
	f.BoolVar(&cfg.queueOnly, "queue-only", false, "only accept: hold delivery, to measure the accept rate and memory with a large queue")
	f.BoolVar(&cfg.phased, "phased", false, "accept every message first with delivery held, then deliver: measures each phase alone")
	f.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "stop and report after this long, however many messages were delivered")
	f.BoolVar(&cfg.jsonOut, "json", false, "print the report as JSON")
	f.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the run (with --phased: of the delivery phase) to this file, for go tool pprof")
	f.StringVar(&cfg.memProfile, "memprofile", "", "write a heap profile at the end of the run to this file")
	f.StringVar(&cfg.via, "via", "http", "how messages are submitted: http (POST /v1/messages) or smtp (the submission listener, one session per client)")
	f.BoolVar(&cfg.starttls, "starttls", false, "with --via smtp: STARTTLS on each session (a self-signed certificate made for the run)")
	f.BoolVar(&cfg.clientProcess, "client-process", false, "with --via smtp: run the SMTP clients in a process of their own, so CPU per message is the server's alone")
	cfg.remote.addFlags(f)
	cmd.AddCommand(newBenchSinkCommand(), newBenchSetupCommand())
	return cmd
}

func (cfg benchConfig) validate() error {
	if cfg.messages < 1 || cfg.concurrency < 1 || cfg.deliveryWorkers < 1 || cfg.smtpConns < 1 {
		return errors.New("--messages, --concurrency, --delivery-workers and --smtp-connections must be 1 or more")
	}
	if cfg.size < 1 {
		return errors.New("--size must be positive")
	}
	if _, err := cfg.alg(); err != nil {
		return err
	}
	if cfg.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if cfg.queueOnly && cfg.phased {
		return errors.New("--queue-only and --phased exclude each other")
	}
	if cfg.via != "http" && cfg.via != "smtp" {
		return fmt.Errorf("--via: %q is not http or smtp", cfg.via)
	}
	if (cfg.starttls || cfg.clientProcess) && cfg.via != "smtp" {
		return errors.New("--starttls and --client-process need --via smtp")
	}
	return nil
}

func (cfg benchConfig) alg() (string, error) {
	switch cfg.dkim {
	case "rsa", dkim.AlgRSA2048:
		return dkim.AlgRSA2048, nil
	case dkim.AlgEd25519:
		return dkim.AlgEd25519, nil
	}
	return "", fmt.Errorf("--dkim: %q is not rsa or ed25519", cfg.dkim)
}

// wantTag is the DKIM-Signature a= tag a key of alg produces.
func wantTag(alg string) string {
	if alg == dkim.AlgEd25519 {
		return "ed25519-sha256"
	}
	return "rsa-sha256"
}

// benchReport is what a run measured. Durations are in milliseconds,
// rates in messages per second.
type benchReport struct {
	Messages        int    `json:"messages"`
	Size            int    `json:"size"`
	Concurrency     int    `json:"concurrency"`
	DKIM            string `json:"dkim"`
	DeliveryWorkers int    `json:"delivery_workers"`
	SMTPConnections int    `json:"smtp_connections"`
	Mode            string `json:"mode"` // concurrent, phased or queue-only
	Via             string `json:"via"`  // http or smtp
	TLS             bool   `json:"tls"`  // smtp over STARTTLS
	ClientProcess   bool   `json:"client_process"`
	DataDir         string `json:"data_dir"`
	DataDirRemoved  bool   `json:"data_dir_removed"`
	Database        string `json:"database,omitempty"` // the PostgreSQL URL, password removed
	CPUs            int    `json:"cpus"`

	Accepted       int      `json:"accepted"`
	Failed         int      `json:"failed"`   // answered with an error, or no answer
	NotSent        int      `json:"not_sent"` // never sent, or cut short: the run timed out
	Errors         []string `json:"errors,omitempty"`
	AcceptSeconds  float64  `json:"accept_seconds"`
	AcceptedPerSec float64  `json:"accepted_per_sec"`
	AcceptP50      float64  `json:"accept_p50_ms"`
	AcceptP99      float64  `json:"accept_p99_ms"`
	AcceptMax      float64  `json:"accept_max_ms"`
	AcceptCPU      float64  `json:"accept_cpu_seconds"` // process CPU time while accepting
	ClientCPU      float64  `json:"client_cpu_seconds"` // --client-process: the client process's CPU time
	Commits        int64    `json:"commits"`
	Queued         int      `json:"queued,omitempty"` // queue-only: queue entries at the end

	Delivered       int     `json:"delivered"`
	Duplicates      int     `json:"duplicates"`
	DeliverSeconds  float64 `json:"deliver_seconds"`
	DeliveredPerSec float64 `json:"delivered_per_sec"`
	DeliverCPU      float64 `json:"deliver_cpu_seconds"` // process CPU time over the delivery window
	DeliveredP50    float64 `json:"delivered_p50_ms"`
	DeliveredP99    float64 `json:"delivered_p99_ms"`
	DrainedSeconds  float64 `json:"drained_seconds,omitempty"` // until every outcome was recorded
	WireBytes       int     `json:"wire_bytes"`                // average message size at the sink

	DKIMSigned   int    `json:"dkim_signed"`
	DKIMTag      string `json:"dkim_a_tag,omitempty"`
	DKIMVerified bool   `json:"dkim_verified"`
	DKIMError    string `json:"dkim_error,omitempty"`

	PeakRSSMB   float64 `json:"peak_rss_mb"`      // VmHWM
	PeakAnonMB  float64 `json:"peak_rss_anon_mb"` // largest RssAnon seen, sampled every 100 ms
	RSSMB       float64 `json:"rss_mb"`           // VmRSS at the end
	RSSAnonMB   float64 `json:"rss_anon_mb"`
	RSSFileMB   float64 `json:"rss_file_mb"`
	HeapInUseMB float64 `json:"heap_inuse_mb"`

	TimedOut bool `json:"timed_out"`
	Complete bool `json:"complete"` // every message accepted and, unless queue-only, delivered
}

// gate holds delivery until it is opened: --queue-only never opens it,
// --phased opens it when every message is accepted.
type gate struct {
	open chan struct{}
	next queue.Sender
}

func (g *gate) Send(ctx context.Context, env mta.Envelope) []mta.RecipientResult {
	select {
	case <-g.open:
		return g.next.Send(ctx, env)
	case <-ctx.Done():
		out := make([]mta.RecipientResult, len(env.To))
		for i, r := range env.To {
			out[i] = mta.RecipientResult{Recipient: r, Status: mta.StatusTemporary, Enhanced: "4.4.0", Text: "bench ended"}
		}
		return out
	}
}

// tracker joins the API's answers with what reaches the sink.
type tracker struct {
	keep bool // keep per-message times (not for --queue-only)

	mu        sync.Mutex
	accepted  map[string]time.Time // message id -> 202 received
	delivered map[string]time.Time // message id -> reached the sink
	dups      int
	lastAt    time.Time
	wire      int64
	signed    int
	tag       string
	sample    []byte // the first signed message, verified afterwards
	count     atomic.Int64
	acceptN   atomic.Int64 // messages accepted, for the progress line
}

func newTracker(keep bool) *tracker {
	t := &tracker{keep: keep}
	if keep {
		t.accepted, t.delivered = map[string]time.Time{}, map[string]time.Time{}
	}
	return t
}

func (t *tracker) accept(id string, at time.Time) {
	t.acceptN.Add(1)
	if !t.keep {
		return
	}
	t.mu.Lock()
	t.accepted[id] = at
	t.mu.Unlock()
}

func (t *tracker) onMessage(m smtptest.Message) {
	h, _ := textproto.NewReader(bufio.NewReader(bytes.NewReader(m.Data))).ReadMIMEHeader()
	id := strings.Trim(h.Get("Message-Id"), "<> ")
	if i := strings.IndexByte(id, '@'); i >= 0 {
		id = id[:i]
	}
	sig := h.Get("Dkim-Signature")
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.keep {
		if _, seen := t.delivered[id]; seen {
			t.dups++
			return
		}
		t.delivered[id] = m.At
	}
	t.count.Add(1)
	t.wire += int64(len(m.Data))
	if m.At.After(t.lastAt) {
		t.lastAt = m.At
	}
	if sig != "" {
		t.signed++
		if t.sample == nil {
			t.sample = bytes.Clone(m.Data)
			t.tag = dkimTag(sig, "a")
		}
	}
}

// dkimTag reads one tag of an unfolded DKIM-Signature value.
func dkimTag(sig, name string) string {
	for _, part := range strings.Split(sig, ";") {
		k, v, ok := strings.Cut(part, "=")
		if ok && strings.TrimSpace(k) == name {
			return strings.Join(strings.Fields(v), "")
		}
	}
	return ""
}

// benchText is a plain ASCII body of about n bytes in short lines, which
// quoted-printable leaves as it is.
func benchText(n int) string {
	const line = "the quick brown fox jumps over the lazy dog while mailbolt measures it\n"
	var b strings.Builder
	for b.Len()+len(line) <= n {
		b.WriteString(line)
	}
	b.WriteString(strings.Repeat("x", max(n-b.Len(), 1)))
	return b.String()
}

// headerOverhead estimates the bytes a built message adds around its text:
// headers, the DKIM signature and MIME framing.
func headerOverhead(alg string) int {
	if alg == dkim.AlgEd25519 {
		return 745
	}
	return 1000
}

func runBench(ctx context.Context, cfg benchConfig, logw io.Writer) (rep *benchReport, err error) {
	alg, _ := cfg.alg()
	gcCtx, stopGC := context.WithCancel(ctx)
	defer stopGC()
	tuneGC(gcCtx) // as serve does, until the run ends
	rep = &benchReport{Messages: cfg.messages, Size: cfg.size, Concurrency: cfg.concurrency, DKIM: alg,
		DeliveryWorkers: cfg.deliveryWorkers, SMTPConnections: cfg.smtpConns, Mode: "concurrent", CPUs: runtime.GOMAXPROCS(0),
		Via: cfg.via, TLS: cfg.starttls, ClientProcess: cfg.clientProcess}
	switch {
	case cfg.queueOnly:
		rep.Mode = "queue-only"
	case cfg.phased:
		rep.Mode = "phased"
	}

	dir := cfg.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mailbolt-bench-"); err != nil {
			return nil, err
		}
		defer func() {
			removed := os.RemoveAll(dir) == nil
			if rep != nil { // nil when the run failed: the error is the answer
				rep.DataDirRemoved = removed
			}
		}()
	} else if _, serr := os.Stat(filepath.Join(dir, storage.FileName)); serr == nil && cfg.database == "" {
		return nil, fmt.Errorf("%s already holds a database: bench needs a fresh --data-dir (or none, for a temporary one)", dir)
	}
	rep.DataDir = dir
	if cfg.database != "" {
		rep.Database = storage.RedactURL(cfg.database)
		if cfg.storage.SecretKeyFile == "" {
			cfg.storage.SecretKeyFile = filepath.Join(dir, storage.SecretKeyFileName)
			if err := storage.WriteNewSecretKey(cfg.storage.SecretKeyFile); err != nil {
				return nil, err
			}
		}
	}

	tr := newTracker(!cfg.queueOnly)
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{Discard: true, OnMessage: tr.onMessage})
	if err != nil {
		return nil, fmt.Errorf("start the SMTP sink: %w", err)
	}
	defer sink.Close()

	zone, err := dnstest.Listen()
	if err != nil {
		return nil, fmt.Errorf("start the DNS server: %w", err)
	}
	defer zone.Close()

	g := &gate{open: make(chan struct{})}
	if rep.Mode == "concurrent" {
		close(g.open)
	}
	sc := defaultServeConfig()
	sc.dataDir, sc.httpAddr, sc.smtpAddr = dir, "127.0.0.1:0", "127.0.0.1:0"
	if cfg.database != "" {
		sc.storage = cfg.storage
	}
	sc.hostname, sc.relay, sc.dnsServer = "bench.local", sink.Addr, zone.Addr
	sc.metricsAddr = "" // counted, not served: two benches may run at once
	sc.deliveryWorkers, sc.smtpHostConns = cfg.deliveryWorkers, cfg.smtpConns
	// Every bench client is on 127.0.0.1: the per-IP cap must hold them all.
	sc.maxConnsPerIP = max(sc.maxConnsPerIP, 2*cfg.concurrency)
	var clientTLS *tls.Config
	if cfg.via == "smtp" {
		sc.submissionAddr = "127.0.0.1:0"
		if cfg.starttls {
			ca, err := tlstest.NewCA()
			if err == nil {
				sc.tlsCert, sc.tlsKey, err = ca.WriteLeaf(dir, 1)
			}
			if err != nil {
				return nil, fmt.Errorf("make the bench certificate: %w", err)
			}
			clientTLS = &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"}
		} else {
			sc.dev = true // AUTH without TLS from loopback
		}
	}
	// No log lines: the bench measures sending, not writing its access log.
	s, err := startService(sc, slog.New(slog.DiscardHandler), func(next queue.Sender) queue.Sender {
		g.next = next
		return g
	})
	if err != nil {
		return nil, err
	}
	serviceCtx, stopService := context.WithCancel(context.Background())
	serviceDone := make(chan error, 1)
	go func() { serviceDone <- s.run(serviceCtx) }()
	defer func() {
		stopService()
		if serr := <-serviceDone; serr != nil && err == nil {
			err = serr
		}
	}()
	a, db := s.app, s.db

	key, dom, err := benchSetup(ctx, a, zone, alg)
	if err != nil {
		return nil, err
	}

	// The CPU profile covers the whole run, or with --phased the delivery
	// phase alone.
	var profile *os.File
	if cfg.cpuProfile != "" {
		if profile, err = os.Create(cfg.cpuProfile); err != nil {
			return nil, err
		}
		defer profile.Close()
		defer pprof.StopCPUProfile()
	}
	startProfile := func() error {
		if profile == nil {
			return nil
		}
		return pprof.StartCPUProfile(profile)
	}
	if !cfg.phased {
		if err := startProfile(); err != nil {
			return nil, err
		}
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	fmt.Fprintf(logw, "bench: %d messages of about %d bytes from %d clients (%s DKIM, %s)...\n",
		cfg.messages, cfg.size, cfg.concurrency, alg, rep.Mode)
	prog := startProgress(logw, func(elapsed time.Duration) string {
		return benchStatus(tr.acceptN.Load(), tr.count.Load(), cfg.messages, elapsed)
	})
	defer prog.Done("")

	peakAnon := sampleAnon(runCtx)
	commits0 := db.Commits()
	cpu0 := cpuTime()
	start := time.Now()
	var lat []time.Duration
	var acceptedN, failedN int
	var failures []string
	switch {
	case cfg.via == "smtp" && cfg.clientProcess:
		var clientCPU time.Duration
		lat, acceptedN, failedN, failures, clientCPU = sendViaClientProcess(runCtx, cfg, s.submission[0].ln.Addr().String(), key, alg, sc.tlsCert, tr)
		rep.ClientCPU = clientCPU.Seconds()
	case cfg.via == "smtp":
		lat, acceptedN, failedN, failures = sendAllSMTP(runCtx, cfg, s.submission[0].ln.Addr().String(), key, alg, clientTLS, tr)
	default:
		lat, acceptedN, failedN, failures = sendAll(runCtx, cfg, "http://"+s.httpLn.Addr().String(), key, alg, tr)
	}
	acceptEnd := time.Now()
	cpu1 := cpuTime()
	rep.AcceptCPU = (cpu1 - cpu0).Seconds()
	rep.Commits = db.Commits() - commits0
	rep.Accepted, rep.Failed, rep.Errors = acceptedN, failedN, failures
	rep.NotSent = cfg.messages - acceptedN - failedN
	rep.AcceptSeconds = acceptEnd.Sub(start).Seconds()
	if acceptedN > 0 {
		rep.AcceptedPerSec = float64(acceptedN) / rep.AcceptSeconds
	}
	rep.AcceptP50, rep.AcceptP99, rep.AcceptMax = percentiles(lat)
	if runCtx.Err() != nil {
		rep.TimedOut = true
	}

	// Memory is read before the checks below, whose scans would add to it.
	readMemory := func() {
		st := procStatus()
		rep.PeakRSSMB, rep.RSSMB, rep.RSSAnonMB, rep.RSSFileMB = st["VmHWM"], st["VmRSS"], st["RssAnon"], st["RssFile"]
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rep.HeapInUseMB = float64(ms.HeapInuse) / (1 << 20)
		rep.PeakAnonMB = max(peakAnon(), rep.RSSAnonMB)
	}
	if cfg.queueOnly {
		readMemory()
		if err := db.View(func(tx *storage.Tx) error { rep.Queued = tx.QueueLength(); return nil }); err != nil {
			return rep, fmt.Errorf("count the queue: %w", err)
		}
		rep.Complete = !rep.TimedOut && rep.Accepted == cfg.messages
	} else {
		deliverFrom, cpuFrom := start, cpu0
		if cfg.phased {
			if err := startProfile(); err != nil {
				return nil, err
			}
			deliverFrom, cpuFrom = time.Now(), cpuTime()
			close(g.open)
		}
		drained := waitDelivered(runCtx, db, tr, acceptedN)
		rep.DeliverCPU = (cpuTime() - cpuFrom).Seconds()
		readMemory()
		tr.mu.Lock()
		rep.Delivered, rep.Duplicates = int(tr.count.Load()), tr.dups
		last := tr.lastAt
		tr.mu.Unlock()
		if rep.Delivered > 0 {
			rep.DeliverSeconds = last.Sub(deliverFrom).Seconds()
			rep.DeliveredPerSec = float64(rep.Delivered) / rep.DeliverSeconds
		}
		if !drained.IsZero() {
			rep.DrainedSeconds = drained.Sub(deliverFrom).Seconds()
		}
		rep.TimedOut = runCtx.Err() != nil
		rep.Complete = !rep.TimedOut && rep.Accepted == cfg.messages && rep.Delivered == cfg.messages && rep.Duplicates == 0
	}
	prog.Done(fmt.Sprintf("bench: %s accepted, %s delivered in %s", formatCount(int64(rep.Accepted)),
		formatCount(tr.count.Load()), formatElapsed(time.Since(start))))
	if profile != nil {
		pprof.StopCPUProfile()
	}

	tr.mu.Lock()
	if n := tr.count.Load(); n > 0 {
		rep.WireBytes = int(tr.wire / n)
	}
	rep.DKIMSigned, rep.DKIMTag = tr.signed, tr.tag
	var toDelivered []time.Duration
	if tr.keep {
		for id, at := range tr.delivered {
			if acc, ok := tr.accepted[id]; ok {
				toDelivered = append(toDelivered, max(at.Sub(acc), 0))
			}
		}
	}
	sample := tr.sample
	tr.mu.Unlock()
	rep.DeliveredP50, rep.DeliveredP99, _ = percentiles(toDelivered)
	if sample != nil {
		rep.DKIMVerified, rep.DKIMError = verifyDKIM(sample, dom)
		if rep.DKIMTag != wantTag(alg) {
			rep.DKIMVerified = false
			rep.DKIMError = fmt.Sprintf("a=%s, want %s", rep.DKIMTag, wantTag(alg))
		}
	}

	if cfg.memProfile != "" {
		if err := writeHeapProfile(cfg.memProfile); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// benchSetup creates the account (enterprise, unthrottled), a live key
// with every scope, and the sending domain bench.test with a DKIM key of
// alg, whose records it publishes in zone and then verifies as a user
// would (POST /v1/domains/{id}/verify's path). It returns the key's secret
// and the verified domain.
func benchSetup(ctx context.Context, a *app.App, zone *dnstest.Server, alg string) (string, storage.Domain, error) {
	acct, e := a.CreateAccount(app.AccountInput{Name: "bench", Plan: "enterprise", RateLimit: 1 << 30})
	if e != nil {
		return "", storage.Domain{}, e
	}
	op, e := a.OperatorIn(acct.ID)
	if e != nil {
		return "", storage.Domain{}, e
	}
	k, e := a.CreateKey(op, app.KeyInput{Name: "bench", Scopes: []string{app.ScopeAll}})
	if e != nil {
		return "", storage.Domain{}, e
	}
	d, e := a.CreateDomain(op, "bench.test", alg)
	if e != nil {
		return "", storage.Domain{}, e
	}
	for _, r := range a.Records(d) {
		switch r.Type {
		case "TXT":
			zone.LongTXT(r.Name, dkim.JoinTXT(r.Value))
		case "CNAME":
			zone.CNAME(r.Name, r.Value)
		}
	}
	if d, e = a.VerifyDomain(ctx, op, d.ID); e != nil {
		return "", d, fmt.Errorf("verify the bench domain: %w", e)
	}
	if d.Status != app.DomainVerified {
		return "", d, fmt.Errorf("the bench domain is %s after its DNS check: %s", d.Status, d.StatusReason)
	}
	if _, _, ok := app.SigningKey(d); !ok {
		return "", d, errors.New("the bench domain has no signing key")
	}
	return k.Secret, d, nil
}

// sendAll posts cfg.messages messages from cfg.concurrency clients until
// ctx ends. It returns each accepted request's latency, how many were
// accepted and how many failed (requests cut short by ctx are neither),
// and the first few failures.
func sendAll(ctx context.Context, cfg benchConfig, base, key, alg string, tr *tracker) ([]time.Duration, int, int, []string) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns: 2 * cfg.concurrency, MaxIdleConnsPerHost: 2 * cfg.concurrency,
		DisableCompression: true, IdleConnTimeout: 30 * time.Second}}
	defer client.CloseIdleConnections()

	text, _ := json.Marshal(benchText(max(cfg.size-headerOverhead(alg), 64)))
	prefix := []byte(`{"from":"Bench <bench@bench.test>","subject":"bench message `)
	lat := make([]time.Duration, cfg.messages)
	var (
		next     atomic.Int64
		accepted atomic.Int64
		failed   atomic.Int64
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	fail := func(s string) {
		failed.Add(1)
		mu.Lock()
		if len(failures) < 5 {
			failures = append(failures, s)
		}
		mu.Unlock()
	}
	for range cfg.concurrency {
		wg.Go(func() {
			var body bytes.Buffer
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= cfg.messages {
					return
				}
				body.Reset()
				body.Write(prefix)
				n := strconv.Itoa(i)
				body.WriteString(n + `","to":["rcpt` + n + `@sink.bench.test"],"text":`)
				body.Write(text)
				body.WriteByte('}')
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", bytes.NewReader(body.Bytes()))
				if err != nil {
					fail(err.Error())
					continue
				}
				req.Header.Set("X-API-Key", key)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						fail(err.Error())
					}
					continue
				}
				var ans struct {
					ID string `json:"id"`
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				at := time.Now()
				if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &ans) != nil || ans.ID == "" {
					fail(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw)))
					continue
				}
				lat[i] = at.Sub(t0)
				accepted.Add(1)
				tr.accept(ans.ID, at)
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

// waitDelivered waits until n messages reached the sink and the queue is
// empty (every outcome recorded), or ctx ends. It returns when the queue
// was found empty; zero if it was not (a queue that cannot be read
// counts as not empty).
func waitDelivered(ctx context.Context, db *storage.DB, tr *tracker, n int) time.Time {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if int(tr.count.Load()) >= n {
			left := -1
			if err := db.View(func(tx *storage.Tx) error { left = tx.QueueLength(); return nil }); err == nil && left == 0 {
				return time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}
		case <-tick.C:
		}
	}
}

// verifyDKIM checks a delivered message's signature against the domain's
// public key, as a receiver would after looking up its DNS record.
func verifyDKIM(raw []byte, d storage.Domain) (bool, string) {
	selector, key, ok := app.SigningKey(d)
	if !ok {
		return false, "no signing key"
	}
	record := key.RecordValue()
	vs, err := msgauth.VerifyWithOptions(bytes.NewReader(raw), &msgauth.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) {
			if name == selector+"._domainkey."+d.Name {
				return []string{record}, nil
			}
			return nil, fmt.Errorf("no TXT record for %s", name)
		}})
	if err != nil {
		return false, err.Error()
	}
	if len(vs) == 0 {
		return false, "no signature"
	}
	if vs[0].Err != nil {
		return false, vs[0].Err.Error()
	}
	if vs[0].Domain != d.Name {
		return false, "signed for d=" + vs[0].Domain
	}
	return true, ""
}

// percentiles gives p50, p99 and the maximum of ds in milliseconds.
func percentiles(ds []time.Duration) (p50, p99, top float64) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return ms(s[(len(s)-1)*50/100]), ms(s[(len(s)-1)*99/100]), ms(s[len(s)-1])
}

// procStatus reads the memory lines of /proc/self/status, in MiB.
func procStatus() map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		f := strings.Fields(rest)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
			out[name] = kb / 1024
		}
	}
	return out
}

// sampleAnon follows RssAnon, the process's own memory without the
// database file's mapped pages, until ctx ends; the result reports the
// largest value seen so far, in MiB.
func sampleAnon(ctx context.Context) func() float64 {
	var peak atomic.Uint64 // float64 bits
	read := func() {
		if v := procStatus()["RssAnon"]; v > math.Float64frombits(peak.Load()) {
			peak.Store(math.Float64bits(v))
		}
	}
	read()
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() float64 { read(); return math.Float64frombits(peak.Load()) }
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (r *benchReport) print(w io.Writer) {
	clients := "HTTP clients"
	if r.Via == "smtp" {
		clients = "SMTP sessions"
		if r.TLS {
			clients += " (STARTTLS)"
		}
	}
	fmt.Fprintf(w, "mailbolt bench: %d messages, about %d bytes each, %d %s, %s DKIM\n",
		r.Messages, r.Size, r.Concurrency, clients, r.DKIM)
	fmt.Fprintf(w, "  mode %s, %d delivery workers, %d SMTP connections, %d CPUs\n", r.Mode, r.DeliveryWorkers, r.SMTPConnections, r.CPUs)
	kept := "kept"
	if r.DataDirRemoved {
		kept = "removed"
	}
	fmt.Fprintf(w, "  data dir %s (%s)\n", r.DataDir, kept)
	if r.Database != "" {
		fmt.Fprintf(w, "  database %s (PostgreSQL; its CPU is not counted in the figures below)\n", r.Database)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "accepted   %8d in %7.2f s  %8.0f msgs/s   latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		r.Accepted, r.AcceptSeconds, r.AcceptedPerSec, r.AcceptP50, r.AcceptP99, r.AcceptMax)
	if r.AcceptSeconds > 0 {
		fmt.Fprintf(w, "           %d commits (%.1f messages each); %.2f of %d cores busy, %.2f ms of CPU per message\n",
			r.Commits, float64(r.Accepted)/float64(max(r.Commits, 1)), r.AcceptCPU/r.AcceptSeconds, r.CPUs,
			1000*r.AcceptCPU/float64(max(r.Accepted, 1)))
		if r.ClientProcess {
			fmt.Fprintf(w, "           (the server alone; the client process used %.2f cores, %.2f ms of CPU per message)\n",
				r.ClientCPU/r.AcceptSeconds, 1000*r.ClientCPU/float64(max(r.Accepted, 1)))
		}
	}
	if r.NotSent > 0 {
		fmt.Fprintf(w, "not sent   %8d (the run timed out)\n", r.NotSent)
	}
	if r.Failed > 0 {
		fmt.Fprintf(w, "failed     %8d; first errors:\n", r.Failed)
		for _, e := range r.Errors {
			fmt.Fprintf(w, "           %s\n", e)
		}
	}
	if r.Mode == "queue-only" {
		fmt.Fprintf(w, "queued     %8d messages waiting in the delivery queue (delivery held)\n", r.Queued)
	} else {
		since := "since the first request"
		if r.Mode == "phased" {
			since = "since delivery was released"
		}
		fmt.Fprintf(w, "delivered  %8d in %7.2f s  %8.0f msgs/s   accept→delivered p50 %.1f ms, p99 %.1f ms (%s)\n",
			r.Delivered, r.DeliverSeconds, r.DeliveredPerSec, r.DeliveredP50, r.DeliveredP99, since)
		if r.DeliverSeconds > 0 {
			also := ""
			if r.Mode == "concurrent" {
				also = ", accepting included"
			}
			fmt.Fprintf(w, "           %.2f of %d cores busy, %.2f ms of CPU per message%s\n",
				r.DeliverCPU/r.DeliverSeconds, r.CPUs, 1000*r.DeliverCPU/float64(r.Delivered), also)
		}
		if r.DrainedSeconds > 0 {
			fmt.Fprintf(w, "           every outcome recorded after %.2f s\n", r.DrainedSeconds)
		}
		if r.Duplicates > 0 {
			fmt.Fprintf(w, "DUPLICATES %8d messages arrived more than once\n", r.Duplicates)
		}
		fmt.Fprintf(w, "wire size  %8d bytes per message on average\n", r.WireBytes)
		verdict := "verifies"
		if !r.DKIMVerified {
			verdict = "DOES NOT VERIFY: " + r.DKIMError
		}
		fmt.Fprintf(w, "DKIM       %8d of %d signed, a=%s; the first signature %s\n", r.DKIMSigned, r.Delivered, r.DKIMTag, verdict)
	}
	fmt.Fprintf(w, "memory     peak RSS %.0f MB (VmHWM, mapped pages of the database file included); peak anonymous RSS %.0f MB\n",
		r.PeakRSSMB, r.PeakAnonMB)
	fmt.Fprintf(w, "           at the end RSS %.0f MB (anon %.0f, file %.0f), Go heap in use %.0f MB\n",
		r.RSSMB, r.RSSAnonMB, r.RSSFileMB, r.HeapInUseMB)
	switch {
	case r.TimedOut:
		fmt.Fprintf(w, "\nTIMED OUT: %d of %d accepted, %d delivered\n", r.Accepted, r.Messages, r.Delivered)
	case !r.Complete:
		fmt.Fprintln(w, "\nINCOMPLETE: not every message was accepted and delivered once")
	}
}
