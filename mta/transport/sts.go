// Package transport keeps the state of outbound transport security: the
// MTA-STS policies of recipient domains (RFC 8461), fetched over HTTPS
// through the address guard, cached in storage for their max_age and
// refreshed in the background, and the TLS session counts that TLS reports
// (RFC 8460) are made of. mta enforces the policies; this package finds
// them.
package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"mailbolt/mta/dns"
	"mailbolt/mta/tlspolicy"
	"mailbolt/netguard"
	"mailbolt/storage"
)

// Resolver is the DNS of policy discovery (the --dns-server).
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupIPAddr(ctx context.Context, name string) ([]net.IPAddr, error)
}

// STSOptions configure an STS.
type STSOptions struct {
	DB       *storage.DB
	Resolver Resolver
	// Port is where policy hosts are asked (--mta-sts-port, 443).
	Port int
	// RootCAs verify policy hosts' certificates; nil means the system's.
	RootCAs *x509.CertPool
	// Guard refuses addresses a policy host may not have (the webhook
	// guard: loopback, private and other special ranges).
	Guard netguard.Policy
	// Timeout bounds one fetch, connection to body (60 s when zero).
	Timeout time.Duration
	Logger  *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// STS finds recipient domains' MTA-STS policies; it is mta's STSSource.
type STS struct {
	o      STSOptions
	mu     sync.Mutex
	memo   map[string]memoEntry // STSPolicy answers of the last minute
	client *http.Client         // policy fetches: every host at o.Port
	upload *http.Client         // TLS report uploads: the URL's port
}

// NewSTS returns an STS that fetches with o.
func NewSTS(o STSOptions) *STS {
	if o.Port == 0 {
		o.Port = 443
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &STS{o: o, memo: map[string]memoEntry{}}
	s.client = s.httpClient(o.Port)
	s.upload = s.httpClient(0)
	return s
}

// httpClient is a client whose connections go through the guard, to port
// (or, when 0, the port of the URL).
func (s *STS) httpClient(port int) *http.Client {
	o := s.o
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return s.dial(ctx, network, addr, port)
		},
		TLSClientConfig:       &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
		DisableCompression:    true,
		Proxy:                 nil,
	}
	return &http.Client{Transport: tr, Timeout: o.Timeout,
		// RFC 8461 §3.3: HTTP redirects are not followed (nor for uploads).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// dial connects to a host through the DNS server, to addresses the guard
// allows only, at port (addr's own when 0).
func (s *STS) dial(ctx context.Context, network, addr string, port int) (net.Conn, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, err
		}
	}
	addrs, err := s.o.Resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	var refused error
	d := net.Dialer{Timeout: s.o.Timeout}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		if err := s.o.Guard.Check(ip.Unmap()); err != nil {
			refused = err
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), strconv.Itoa(port)))
		if err == nil {
			return c, nil
		}
		refused = err
	}
	if refused == nil {
		refused = fmt.Errorf("%s has no address", host)
	}
	return nil, refused
}

// Fetch gets a domain's policy file from its policy host and parses it,
// with the id given. Not cached.
func (s *STS) Fetch(ctx context.Context, domain, id string) (*tlspolicy.Policy, error) {
	url := "https://mta-sts." + domain + "/.well-known/mta-sts.txt"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: HTTP %d (redirects are not followed)", url, resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		return nil, fmt.Errorf("fetching %s: content type %q, not text/plain", url, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, tlspolicy.MaxPolicySize+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", url, err)
	}
	p, err := tlspolicy.ParsePolicy(body)
	if err != nil {
		return nil, err
	}
	p.ID = id
	return p, nil
}

// record looks the domain's MTA-STS TXT record up: its id, or "" when
// there is none (or it is not valid).
func (s *STS) record(ctx context.Context, domain string) (string, error) {
	txts, err := s.o.Resolver.LookupTXT(ctx, "_mta-sts."+domain)
	if errors.Is(err, dns.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	rec, err := tlspolicy.Select(txts, tlspolicy.STSVersion)
	if err != nil {
		return "", nil
	}
	r, err := tlspolicy.ParseSTSRecord(rec)
	if err != nil {
		return "", nil
	}
	return r.ID, nil
}

// cached reads a domain's stored policy while it is valid.
func (s *STS) cached(domain string) (*tlspolicy.Policy, storage.STSPolicy, bool) {
	var sp storage.STSPolicy
	var err error
	s.o.DB.View(func(tx *storage.Tx) error {
		sp, err = tx.STSPolicy(domain)
		return nil
	})
	if err != nil || !s.o.Now().Before(sp.Expires) {
		return nil, sp, false
	}
	p, err := tlspolicy.ParsePolicy([]byte(sp.Policy))
	if err != nil {
		return nil, sp, false
	}
	p.ID = sp.ID
	return p, sp, true
}

// memoEntry is one STSPolicy answer, kept for memoTTL so that a burst of
// mail to a domain asks DNS and the database once.
type memoEntry struct {
	p     *tlspolicy.Policy
	err   error
	until time.Time
}

const (
	memoTTL  = time.Minute
	memoSize = 10000 // entries before the memo is emptied
)

// STSPolicy returns the policy that applies to mail for domain, or nil
// (RFC 8461 §5.1), remembering the answer for a minute.
func (s *STS) STSPolicy(ctx context.Context, domain string) (*tlspolicy.Policy, error) {
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	now := s.o.Now()
	s.mu.Lock()
	e, ok := s.memo[domain]
	s.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.p, e.err
	}
	p, err := s.lookup(ctx, domain)
	if ctx.Err() == nil {
		s.mu.Lock()
		if len(s.memo) >= memoSize {
			clear(s.memo)
		}
		s.memo[domain] = memoEntry{p, err, now.Add(memoTTL)}
		s.mu.Unlock()
	}
	return p, err
}

// lookup finds the policy that applies to mail for domain, or nil
// (RFC 8461 §5.1): a cached policy whose id is still the published one (or
// while the record cannot be read, or after a failed refetch, until it
// expires); otherwise the policy fetched now, then stored.
func (s *STS) lookup(ctx context.Context, domain string) (*tlspolicy.Policy, error) {
	cached, _, valid := s.cached(domain)
	id, err := s.record(ctx, domain)
	switch {
	case err != nil || id == "":
		if valid {
			return cached, nil
		}
		return nil, err
	case valid && cached.ID == id:
		return cached, nil
	}
	p, err := s.Fetch(ctx, domain, id)
	if err != nil {
		s.o.Logger.Warn("MTA-STS policy fetch failed", "domain", domain, "err", err)
		if valid {
			return cached, nil
		}
		return nil, err
	}
	if err := s.store(domain, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (s *STS) store(domain string, p *tlspolicy.Policy) error {
	now := s.o.Now()
	return s.o.DB.Update(func(tx *storage.Tx) error {
		return tx.PutSTSPolicy(storage.STSPolicy{Domain: domain, ID: p.ID, Policy: p.String(), FetchedAt: now, Expires: now.Add(p.MaxAge)})
	})
}

// RefreshWindow is how long before its end a cached policy is fetched
// again by Refresh (half its max_age for a policy of under two days).
const RefreshWindow = 24 * time.Hour

// Refresh goes over the cached policies: one whose record has a new id, or
// that ends within its refresh window, is fetched again (RFC 8461 §5.1 asks
// senders to refresh before expiry, so that a policy host's outage does
// not lapse a policy); one that has ended and could not be refetched is
// dropped.
func (s *STS) Refresh(ctx context.Context) error {
	var all []storage.STSPolicy
	if err := s.o.DB.View(func(tx *storage.Tx) (err error) { all, err = tx.STSPolicies(); return err }); err != nil {
		return err
	}
	now := s.o.Now()
	for _, sp := range all {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		id, err := s.record(ctx, sp.Domain)
		stale := err == nil && id != "" && id != sp.ID
		window := min(RefreshWindow, sp.Expires.Sub(sp.FetchedAt)/2)
		if !stale && sp.Expires.Sub(now) > window {
			continue
		}
		if id == "" {
			id = sp.ID
		}
		p, ferr := s.Fetch(ctx, sp.Domain, id)
		switch {
		case ferr == nil:
			if err := s.store(sp.Domain, p); err != nil {
				return err
			}
		case !now.Before(sp.Expires):
			s.o.Logger.Info("MTA-STS policy expired and could not be refreshed", "domain", sp.Domain, "err", ferr)
			if err := s.o.DB.Update(func(tx *storage.Tx) error { return tx.DeleteSTSPolicy(sp.Domain) }); err != nil {
				return err
			}
		default:
			s.o.Logger.Warn("MTA-STS policy refresh failed", "domain", sp.Domain, "err", ferr)
		}
	}
	return nil
}

// JobSTSRefresh is the job lease (storage.DB.LeaseJob) of the MTA-STS
// policy refresh: with several nodes over one database, one refreshes the
// shared cache at a time.
const JobSTSRefresh = "mta_sts_refresh"

// Run refreshes the cached policies every interval until ctx ends, in the
// rounds for which this node holds the job's lease (see runLeased).
func (s *STS) Run(ctx context.Context, interval time.Duration) {
	runLeased(ctx, s.o.DB, JobSTSRefresh, interval, s.o.Now, s.o.Logger, func(ctx context.Context) {
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.o.Logger.Warn("MTA-STS refresh", "err", err)
		}
	})
}

// runLeased runs round every interval until ctx ends, each time only if
// this node takes the lease on job for two intervals: it skips the rounds
// another node sharing the database holds, takes the job over once that
// node's lease ends, and releases the lease when ctx ends.
func runLeased(ctx context.Context, db *storage.DB, job string, interval time.Duration, now func() time.Time, log *slog.Logger,
	round func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	held := false
	for {
		select {
		case <-ctx.Done():
			if held {
				if err := db.ReleaseJob(job); err != nil {
					log.Warn("releasing a periodic job's lease failed", "job", job, "err", err)
				}
			}
			return
		case <-t.C:
			ok, err := db.LeaseJob(job, now(), 2*interval)
			if err != nil {
				log.Warn("taking a periodic job's lease failed", "job", job, "err", err)
				continue
			}
			if ok {
				held = true
				round(ctx)
			}
		}
	}
}
