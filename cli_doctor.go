package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"mailbolt/grader/spf"
	"mailbolt/mta/dns"
	"mailbolt/storage"
	"mailbolt/web"
)

// defaultProbeHost is an MX host that answers on port 25 from anywhere
// outbound port 25 is open.
const defaultProbeHost = "gmail-smtp-in.l.google.com"

// doctorOptions are doctor's own flags, beside serve's.
type doctorOptions struct {
	probeHost    string
	probeTimeout time.Duration
	minFreeMiB   uint64
}

func newDoctorCommand() *cobra.Command {
	var cfg serveConfig
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that this server is ready to send mail: configuration, DNS of the server itself, port 25, public URL, database, disk",
		Long: `doctor takes serve's flags (and MAILBOLT_* variables) and checks what
serve would run with: the configuration, the A/AAAA and PTR records of
--hostname and of every address registered with ` + "`mailbolt ips`" + ` (forward-
confirmed reverse DNS), the SPF records that authorize the sending
addresses, outbound port 25 (to --probe-host, or to --relay), --public-url
(while serve runs), the database and the free disk space in --data-dir.

Each check prints one line, ✓ passed, ✗ failed, ! warning, - skipped, with
the fix under it. The exit status is 1 when a check failed. DNS is asked
through --dns-server. See docs/operations.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.dataDir, _ = cmd.Flags().GetString("data-dir")
			cfg.storage = storageOptions(cmd)
			cfg.given = cmd.Flags().Changed
			cfg.hostnameSet = cmd.Flags().Changed("hostname")
			d := &doctor{cfg: cfg, opts: o, out: cmd.OutOrStdout()}
			return d.run(cmd.Context())
		},
	}
	cfg.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.probeHost, "probe-host", defaultProbeHost, "MX host[:port] to test outbound SMTP against (port: --mx-port when not given)")
	f.DurationVar(&o.probeTimeout, "probe-timeout", 10*time.Second, "how long the port 25 and public URL probes wait")
	f.Uint64Var(&o.minFreeMiB, "min-free-disk-mib", 1024, "warn when the data dir's file system has less free space than this (MiB)")
	return cmd
}

// checkStatus is the outcome of one doctor check.
type checkStatus int

const (
	checkOK checkStatus = iota
	checkWarn
	checkSkip
	checkFail
)

var checkMarks = map[checkStatus]string{checkOK: "✓", checkWarn: "!", checkSkip: "-", checkFail: "✗"}

// doctor runs the checks of `mailbolt doctor` and prints each as it ends.
type doctor struct {
	cfg  serveConfig
	opts doctorOptions
	out  io.Writer

	resolver *dns.Resolver
	serving  bool // a server answers on the data dir's management socket
	failed   int
	checks   int
}

// report prints one check: its mark and what was found, then the fix.
func (d *doctor) report(st checkStatus, what, fix string) {
	d.checks++
	if st == checkFail {
		d.failed++
	}
	fmt.Fprintf(d.out, "%s %s\n", checkMarks[st], what)
	if fix != "" && st != checkOK {
		fmt.Fprintf(d.out, "    fix: %s\n", fix)
	}
}

func (d *doctor) run(ctx context.Context) error {
	if !d.checkConfig() {
		return fmt.Errorf("doctor: the configuration is invalid; the other checks need a valid one")
	}
	d.resolver = dns.SystemResolver()
	if d.cfg.dnsServer != "" {
		d.resolver = &dns.Resolver{Server: d.cfg.dnsServer}
	}
	d.resolver.Timeout = d.cfg.dnsTimeout

	ips := d.checkDatabase(ctx)
	d.checkDeprecation()
	d.checkDisk()
	hostAddrs := d.checkHostAddrs(ctx)
	d.checkReverseDNS(ctx, hostAddrs, ips)
	sending := d.sendingAddrs(hostAddrs, ips)
	d.checkDomainSPF(ctx, hostAddrs, ips, sending)
	d.checkReturnPathSPF(ctx, sending)
	d.checkOutbound(ctx)
	d.checkPublicURL(ctx)
	if d.failed > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed", d.failed, d.checks)
	}
	fmt.Fprintf(d.out, "all %d checks passed or warned only\n", d.checks)
	return nil
}

// checkConfig runs serve's own start-up checks (preflight: the flags, the
// GRADER_* variables, the files the flags name) and reports what serve's
// start-up findings refuse or warn about. A --hostname that is no FQDN
// fails here even where serve only warns (taken from the machine, or
// --dev).
func (d *doctor) checkConfig() bool {
	p, err := d.cfg.preflight(slog.New(slog.DiscardHandler), os.LookupEnv)
	if err != nil {
		d.report(checkFail, "configuration: "+err.Error(), "correct the flag or its variable (MAILBOLT_*, GRADER_*), as for serve")
		return false
	}
	p.close()
	findings := d.cfg.startupFindings()
	for _, f := range findings {
		st := checkWarn
		if f.refuse && !d.cfg.dev || f.flag == "--hostname" {
			st = checkFail
		}
		d.report(st, "configuration: "+f.msg, "set "+f.flag+" (or MAILBOLT_"+
			strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(f.flag, "--"), "-", "_"))+")")
	}
	if len(findings) == 0 {
		d.report(checkOK, "configuration: the serve flags are valid (hostname "+d.cfg.hostname+")", "")
	}
	return true
}

// checkDatabase checks the database read-only, or asks the running server
// holding it, and returns the addresses registered with `mailbolt ips`
// (address → EHLO name).
func (d *doctor) checkDatabase(ctx context.Context) []ipName {
	dir := d.cfg.dataDir
	if c, err := web.DialAdmin(dir); err == nil {
		d.serving = true
		status, rerr := readyz(ctx, d.cfg.httpAddr)
		if rerr != nil {
			d.report(checkFail, "database: serve runs on "+dir+" and holds the database, but "+rerr.Error(),
				"see the server's log; `mailbolt healthcheck` asks the same")
		} else {
			d.report(checkOK, "database: serve runs on "+dir+" and holds the database; its /readyz says "+status+
				" (the database takes a write)", "")
		}
		views, err := c.ListIPs()
		if err != nil {
			d.report(checkFail, "database: the registered IPs could not be listed through the management socket: "+err.Error(), "")
			return nil
		}
		var out []ipName
		for _, v := range views {
			out = append(out, ipName{ip: net.ParseIP(v.Address), name: v.Hostname})
		}
		return out
	}
	if d.cfg.storage.Database != "" {
		return d.checkSharedDatabase()
	}
	path := filepath.Join(dir, storage.FileName)
	err := storage.Check(path)
	switch {
	case errors.Is(err, storage.ErrNoDatabase):
		d.report(checkSkip, "database: there is none in "+dir+" yet; serve creates it at its first start",
			"if serve has run before, check --data-dir (or MAILBOLT_DATA_DIR)")
		return nil
	case errors.Is(err, storage.ErrLocked):
		d.report(checkFail, "database: "+path+" is locked by another process, and no server answers on its management socket",
			"find the process holding it (fuser "+path+")")
		return nil
	case err != nil:
		d.report(checkFail, "database: "+err.Error(), "restore it from a backup (mailbolt restore --from BACKUP_FILE --data-dir "+dir+")")
		return nil
	}
	d.report(checkOK, "database: "+path+" is whole (every page checked, read-only)", "")
	db, err := d.openReadOnly()
	if err != nil {
		d.report(checkFail, "database: the registered IPs could not be read: "+err.Error(), "")
		return nil
	}
	defer db.Close()
	return d.registeredIPs(db)
}

// openReadOnly opens the database (--database, or the file in the data
// dir) for reading only.
func (d *doctor) openReadOnly() (*storage.DB, error) {
	o := d.cfg.storage
	o.ReadOnly, o.MustExist = true, true
	return storage.Open(d.cfg.dataDir, o)
}

// checkSharedDatabase checks that the PostgreSQL database answers and
// opens with the key file, and reads the registered IPs from it.
func (d *doctor) checkSharedDatabase() []ipName {
	url := storage.RedactURL(d.cfg.storage.Database)
	db, err := d.openReadOnly()
	if errors.Is(err, storage.ErrNoDatabase) {
		d.report(checkSkip, "database: PostgreSQL at "+url+" answers and holds no Mailbolt data yet; serve creates it at its first start", "")
		return nil
	}
	if err != nil {
		d.report(checkFail, "database: "+err.Error(), "check --database (MAILBOLT_DATABASE), that PostgreSQL runs and that --secret-key-file is the nodes' key")
		return nil
	}
	defer db.Close()
	v, err := db.SchemaVersion()
	if err != nil {
		d.report(checkFail, "database: "+url+" does not answer: "+err.Error(), "")
		return nil
	}
	d.report(checkOK, fmt.Sprintf("database: PostgreSQL at %s answers, schema version %d, and the secret key file opens it", url, v), "")
	return d.registeredIPs(db)
}

// registeredIPs reads the addresses registered with `mailbolt ips`.
func (d *doctor) registeredIPs(db *storage.DB) []ipName {
	var out []ipName
	err := db.View(func(tx *storage.Tx) error {
		ips, err := tx.IPs()
		for _, ip := range ips {
			out = append(out, ipName{ip: net.ParseIP(ip.Address), name: ip.Hostname})
		}
		return err
	})
	if err != nil {
		d.report(checkFail, "database: the registered IPs could not be read: "+err.Error(), "")
	}
	return out
}

// checkDisk warns when the data dir's file system is nearly full: a full
// disk stops every commit, and so every send.
func (d *doctor) checkDisk() {
	dir := d.cfg.dataDir
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	free, err := freeBytes(dir)
	if err != nil {
		d.report(checkSkip, "free disk: not known for "+dir+": "+err.Error(), "check it with df")
		return
	}
	min := d.opts.minFreeMiB << 20
	what := fmt.Sprintf("free disk: %s free on the file system of %s", humanBytes(free), dir)
	if free < min {
		d.report(checkWarn, what+fmt.Sprintf(" (below --min-free-disk-mib %d)", d.opts.minFreeMiB),
			"free space or move --data-dir: when the disk is full every write, and so every send, fails")
		return
	}
	d.report(checkOK, what, "")
}

// ipName is a sending address and the name it greets with.
type ipName struct {
	ip   net.IP
	name string
}

// checkHostAddrs looks up --hostname's A and AAAA records.
func (d *doctor) checkHostAddrs(ctx context.Context) []net.IP {
	host := d.cfg.hostname
	addrs, err := d.resolver.LookupIPAddr(ctx, host)
	switch {
	case errors.Is(err, dns.ErrNotFound):
		d.report(checkFail, "hostname "+host+": no A or AAAA record",
			"publish an A record (and AAAA when it sends over IPv6) for "+host+" with the server's public address")
		return nil
	case err != nil:
		d.report(checkFail, "hostname "+host+": "+err.Error(), "check --dns-server and that the zone of "+host+" answers")
		return nil
	}
	var out []net.IP
	for _, a := range addrs {
		out = append(out, a.IP)
	}
	d.report(checkOK, "hostname "+host+": "+joinIPs(out), "")
	return out
}

// checkReverseDNS checks forward-confirmed reverse DNS: each address's
// PTR names the host it greets as, and that name's A/AAAA records hold
// the address. Checked are every registered IP (with its own EHLO name),
// --hostname's addresses and --sending-ips (which greet as --hostname).
func (d *doctor) checkReverseDNS(ctx context.Context, hostAddrs []net.IP, ips []ipName) {
	var pairs []ipName
	seen := map[string]bool{}
	add := func(ip net.IP, name string) {
		if ip != nil && !seen[ip.String()] {
			seen[ip.String()] = true
			pairs = append(pairs, ipName{ip: ip, name: name})
		}
	}
	// A registered IP greets with its own name, wherever else it is listed.
	for _, p := range ips {
		add(p.ip, p.name)
	}
	for _, ip := range hostAddrs {
		add(ip, d.cfg.hostname)
	}
	for _, ip := range d.cfg.sendingIPs {
		add(ip, d.cfg.hostname)
	}
	for _, p := range pairs {
		d.checkFCrDNS(ctx, p.ip, p.name)
	}
}

func (d *doctor) checkFCrDNS(ctx context.Context, ip net.IP, name string) {
	what := "reverse DNS of " + ip.String() + ": "
	ptrFix := "set the PTR record of " + ip.String() + " to " + name + " (at your VPS or hosting provider, who runs the reverse zone)"
	names, err := d.resolver.LookupPTR(ctx, ip)
	switch {
	case errors.Is(err, dns.ErrNotFound):
		d.report(checkFail, what+"no PTR record", ptrFix)
		return
	case err != nil:
		d.report(checkFail, what+err.Error(), "check --dns-server, or ask the provider of "+ip.String()+" why its reverse zone fails")
		return
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, name) }) {
		d.report(checkFail, what+"PTR names "+strings.Join(names, ", ")+", not "+name+", the name it greets with", ptrFix)
		return
	}
	addrs, err := d.resolver.LookupIPAddr(ctx, name)
	if err != nil && !errors.Is(err, dns.ErrNotFound) {
		d.report(checkFail, what+"PTR names "+name+", whose addresses could not be looked up: "+err.Error(), "check --dns-server")
		return
	}
	if !slices.ContainsFunc(addrs, func(a net.IPAddr) bool { return a.IP.Equal(ip) }) {
		d.report(checkFail, what+"PTR names "+name+", but "+name+" does not resolve to "+ip.String(),
			"add "+ip.String()+" to the A/AAAA records of "+name)
		return
	}
	d.report(checkOK, what+"PTR "+name+", which resolves back to it", "")
}

// sendingAddrs are the addresses mail leaves from: the registered IPs and
// --sending-ips, or, when there are none, --hostname's addresses.
func (d *doctor) sendingAddrs(hostAddrs []net.IP, ips []ipName) []net.IP {
	var out []net.IP
	add := func(ip net.IP) {
		if ip != nil && !slices.ContainsFunc(out, ip.Equal) {
			out = append(out, ip)
		}
	}
	for _, p := range ips {
		add(p.ip)
	}
	for _, ip := range d.cfg.sendingIPs {
		add(ip)
	}
	if len(out) == 0 {
		for _, ip := range hostAddrs {
			add(ip)
		}
	}
	return out
}

// checkDomainSPF checks what sending domains are told to publish in SPF
// covers the sending addresses. With --spf-include that domain's record
// is evaluated for each address. With --sending-ips each domain publishes
// ip4:/ip6: terms itself (its own domain check verifies that), so what is
// checkable here is that every registered IP is among them; likewise
// a:<hostname> covers only --hostname's own addresses.
func (d *doctor) checkDomainSPF(ctx context.Context, hostAddrs []net.IP, ips []ipName, sending []net.IP) {
	switch {
	case d.cfg.spfInclude != "":
		inc := d.cfg.spfInclude
		if len(sending) == 0 {
			d.report(checkSkip, "SPF of --spf-include "+inc+": no sending address is known to check it with",
				"publish --hostname's A record, or set --sending-ips")
			return
		}
		for _, ip := range sending {
			d.checkSPF(ctx, ip, inc, "SPF of --spf-include "+inc, "sending domains publish include:"+inc)
		}
	case len(d.cfg.sendingIPs) > 0:
		var missing []string
		for _, p := range ips {
			if !slices.ContainsFunc(d.cfg.sendingIPs, p.ip.Equal) {
				missing = append(missing, p.ip.String())
			}
		}
		if len(missing) > 0 {
			d.report(checkFail, "domain SPF: registered IPs "+strings.Join(missing, ", ")+" are not in --sending-ips, "+
				"so sending domains' SPF records do not name them",
				"add them to --sending-ips, then have each domain publish the SPF record `mailbolt`'s domain check lists")
			return
		}
		d.report(checkOK, "domain SPF: sending domains publish ip4:/ip6: terms for --sending-ips "+joinIPs(d.cfg.sendingIPs)+
			", which hold every registered IP (each domain's own check verifies its record)", "")
	default:
		var missing []string
		for _, p := range ips {
			if !slices.ContainsFunc(hostAddrs, p.ip.Equal) {
				missing = append(missing, p.ip.String())
			}
		}
		if len(missing) > 0 {
			d.report(checkFail, "domain SPF: sending domains publish a:"+d.cfg.hostname+", which does not cover the registered IPs "+
				strings.Join(missing, ", "),
				"set --sending-ips (or --spf-include) to name every sending address, or add them to the A/AAAA records of "+d.cfg.hostname)
			return
		}
		d.report(checkOK, "domain SPF: sending domains publish a:"+d.cfg.hostname+", which covers the sending addresses", "")
	}
}

// checkReturnPathSPF checks the SPF record of --hostname: each domain's
// bounces.<domain> (the return path) is a CNAME to it, and it is the EHLO
// name, so receivers evaluate its record for both.
func (d *doctor) checkReturnPathSPF(ctx context.Context, sending []net.IP) {
	host := d.cfg.hostname
	if len(sending) == 0 {
		d.report(checkSkip, "return-path SPF of "+host+": no sending address is known to check it with",
			"publish "+host+"'s A record, or set --sending-ips")
		return
	}
	for _, ip := range sending {
		d.checkSPF(ctx, ip, host, "return-path SPF of "+host, "the return paths bounces.<domain> are CNAMEs to "+host)
	}
}

// checkSPF evaluates the SPF record at domain for ip and reports it.
func (d *doctor) checkSPF(ctx context.Context, ip net.IP, domain, what, why string) {
	res, _, err := spf.Check(ctx, d.resolver, ip, domain, "", d.cfg.hostname, spf.WithTimeout(2*d.cfg.dnsTimeout))
	term := "ip4:" + ip.String()
	if ip.To4() == nil {
		term = "ip6:" + ip.String()
	}
	switch res {
	case spf.Pass:
		d.report(checkOK, what+": authorizes "+ip.String(), "")
	case spf.None:
		d.report(checkFail, what+": no SPF record ("+why+")",
			fmt.Sprintf("publish a TXT record at %s: \"v=spf1 %s -all\" (listing every sending address)", domain, term))
	case spf.TempError:
		d.report(checkFail, what+": could not be evaluated: "+errString(err), "check --dns-server and the zone of "+domain)
	case spf.PermError:
		d.report(checkFail, what+": the record is broken: "+errString(err), "correct the SPF record at "+domain)
	default:
		d.report(checkFail, fmt.Sprintf("%s: does not authorize %s (result %s)", what, ip, res),
			"add "+term+" to the SPF record at "+domain)
	}
}

// checkOutbound connects to the probe host (or the --relay, which all mail
// leaves through when set) and waits for its 220 greeting.
func (d *doctor) checkOutbound(ctx context.Context) {
	target, what := d.opts.probeHost, "outbound SMTP to --probe-host "
	if d.cfg.relay != "" {
		target, what = d.cfg.relay, "outbound SMTP to --relay "
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		host, port = target, strconv.Itoa(d.cfg.mxPort)
	}
	what += net.JoinHostPort(host, port)
	fix := "open outbound TCP port " + port + " (many VPS providers block 25 until asked), or send through a smarthost with --relay"
	addr := host
	if net.ParseIP(host) == nil {
		addrs, err := d.resolver.LookupIPAddr(ctx, host)
		if err != nil {
			d.report(checkFail, what+": "+host+" could not be looked up: "+err.Error(), "check --dns-server, or give --probe-host as an address")
			return
		}
		addr = addrs[0].IP.String()
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.probeTimeout)
	defer cancel()
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(addr, port))
	if err != nil {
		d.report(checkFail, what+": cannot connect: "+err.Error(), fix)
		return
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		d.report(checkFail, what+": connected, but no SMTP greeting came: "+err.Error(),
			"something between this server and the internet intercepts port "+port+"; ask your provider")
		return
	}
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "220") {
		d.report(checkFail, what+": greeted with "+strconv.Quote(line)+" instead of 220", "try another --probe-host")
		return
	}
	fmt.Fprint(conn, "QUIT\r\n")
	d.report(checkOK, what+": answered "+strconv.Quote(line), "")
}

// checkPublicURL asks GET <public-url>/healthz, as a recipient following
// a link would reach the server. Only a running server can answer.
func (d *doctor) checkPublicURL(ctx context.Context) {
	base := d.cfg.publicURL
	if base == "" {
		base = d.cfg.defaultPublicURL(d.cfg.httpsAddr, d.cfg.httpAddr)
	}
	url := strings.TrimSuffix(base, "/") + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, d.opts.probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		d.report(checkFail, "public URL: "+err.Error(), "correct --public-url")
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if !d.serving {
			d.report(checkSkip, "public URL: nothing answers at "+url+"; serve is not running on "+d.cfg.dataDir+
				", so this says nothing yet", "run doctor again while serve runs")
			return
		}
		d.report(checkFail, "public URL: serve runs, but nothing answers at "+url+": "+err.Error()+
			"; the tracking and unsubscribe links in sent mail are dead",
			"point "+base+" at this server (a reverse proxy forwarding to --http-addr "+d.cfg.httpAddr+")")
		return
	}
	defer resp.Body.Close()
	var ans struct{ Status string }
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &ans) != nil || ans.Status != "ok" {
		d.report(checkFail, fmt.Sprintf("public URL: %s answered %d, not Mailbolt's health answer", url, resp.StatusCode),
			"make the reverse proxy forward "+base+" to --http-addr "+d.cfg.httpAddr)
		return
	}
	d.report(checkOK, "public URL: "+url+" answers", "")
}

func joinIPs(ips []net.IP) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ", ")
}

func errString(err error) string {
	if err == nil {
		return "no reason given"
	}
	return err.Error()
}

// humanBytes writes n in the largest binary unit that keeps it at 1 or
// more, with one decimal.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
