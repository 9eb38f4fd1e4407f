package hooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// responseSnippet is how much of a receiver's answer body an attempt
// keeps; responseDrain is how much more it reads and discards, so that a
// short body is read to its end and the connection can be reused. Nothing
// past the two is read: a longer body is cut off (and its connection
// closed), and the answer still counts as complete (see readAnswer).
const (
	responseSnippet = 1024
	responseDrain   = 64 << 10
)

// job is one delivery ready to send: claimed from the queue, or (fresh) an
// event's delivery taken straight from the outbox, not saved yet.
type job struct {
	fresh      bool
	seq        uint64    // fresh: the event's outbox entry
	webhookID  string    // fresh: what the delivery is saved with
	accountID  string    // fresh
	created    time.Time // fresh
	deliveryID string
	url        string
	host       string
	keys       [][]byte
	body       []byte
	eventID    string
	eventType  string
}

// result is what one attempt got.
type result struct {
	job        job
	at         time.Time
	status     int
	retryAfter string
	response   string
	err        string
	latency    time.Duration
	answered   time.Time // when the attempt ended (the dispatcher's clock): retries count from here
	aborted    bool      // cut off by shutdown: not an attempt
	refused    bool      // the guard refused the address: retrying cannot help
}

func newClient(g Guard, lookup lookupFunc, timeout time.Duration, perHost int) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil, // never route webhooks through an environment proxy
			DialContext:         guardedDial(g, lookup, dialer),
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: perHost,
			MaxConnsPerHost:     perHost,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		},
		// Redirects are not followed: a 3xx is the receiver's answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type lookupFunc = func(ctx context.Context, host string) ([]net.IPAddr, error)

// guardedDial connects to host:port through lookup, the resolver that
// checked the URL at create, never the system's own: a name that the
// system resolver (or /etc/hosts) maps elsewhere cannot slip past the
// check. Addresses the guard refuses are skipped; when none is left the
// error wraps ErrForbiddenAddress. The dialer's Control checks the address
// actually dialled once more.
func guardedDial(g Guard, lookup lookupFunc, dialer *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else {
			addrs, err := lookup(ctx, host)
			if err != nil {
				return nil, fmt.Errorf("resolve %s: %w", host, err)
			}
			for _, a := range addrs {
				if ip, ok := netip.AddrFromSlice(a.IP); ok {
					ips = append(ips, ip.WithZone(a.Zone))
				}
			}
			if len(ips) == 0 {
				return nil, fmt.Errorf("resolve %s: no addresses", host)
			}
		}
		// The failure is the guard's only when every address was refused:
		// then retrying cannot help, and the delivery fails at once.
		var refused, failed []error
		for _, ip := range ips {
			if err := g.CheckAddr(ip); err != nil {
				refused = append(refused, err)
				continue
			}
			c, err := dialer.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			failed = append(failed, err)
			if ctx.Err() != nil {
				break
			}
		}
		if len(failed) > 0 {
			return nil, errors.Join(failed...)
		}
		return nil, errors.Join(refused...)
	}
}

// send makes one signed POST. It goes to the client's transport directly:
// the client's redirect handling has nothing to do (a 3xx is the answer)
// and the deadline is the request context's, over the answer's body too.
// An answer whose body does not arrive (as far as readAnswer reads it)
// within the deadline, or breaks off, is no answer: its status is not
// kept, the error says what came, and the attempt is retried like a
// timeout. The attempt's time, its signature's timestamp and its latency
// (to the end of the attempt, the body read included) are read from clock.
func send(ctx context.Context, client *http.Client, j job, clock func() time.Time) result {
	r := result{job: j, at: clock().UTC()}
	t := r.at.Unix()
	reqCtx, cancel := context.WithTimeout(ctx, client.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, j.url, bytes.NewReader(j.body))
	if err != nil {
		r.err = err.Error()
		return r
	}
	// The keys are canonical already (what Header.Set would make them).
	req.Header = http.Header{
		"Content-Type":       {"application/json"},
		"User-Agent":         {"Mailbolt-Webhooks/1"},
		HeaderTimestamp:      {strconv.FormatInt(t, 10)},
		HeaderSignature:      {Signature(j.body, t, j.keys...)},
		"X-Service-Event-Id": {j.eventID},
		"X-Service-Event":    {j.eventType},
	}
	start := clock() // not UTC'd: keeps the monotonic reading time.Now gives
	resp, err := client.Transport.RoundTrip(req)
	if err != nil {
		r.latency = clock().Sub(start)
		r.aborted = ctx.Err() != nil && errors.Is(err, context.Canceled)
		r.refused = errors.Is(err, ErrForbiddenAddress)
		r.err = describe(err)
		return r
	}
	snippet, n, err := readAnswer(resp.Body)
	resp.Body.Close()
	r.latency = clock().Sub(start)
	r.response = string(snippet)
	if err != nil {
		// Shutdown cutting the body off is no attempt, as before the
		// status came.
		r.aborted = ctx.Err() != nil && errors.Is(err, context.Canceled)
		r.err = describeBody(resp.StatusCode, n, err)
		return r
	}
	r.status = resp.StatusCode
	r.retryAfter = resp.Header.Get("Retry-After")
	return r
}

// readAnswer reads what an attempt reads of an answer's body: the first
// responseSnippet bytes, kept, then up to responseDrain more, discarded.
// It returns the bytes kept, how many were read in all, and the error that
// stopped the reading before the body's end or those 65 KiB: a deadline,
// a connection that broke, a body shorter than its Content-Length. The
// answer is complete when that error is nil.
func readAnswer(body io.Reader) (snippet []byte, n int64, err error) {
	snippet, err = io.ReadAll(io.LimitReader(body, responseSnippet))
	n = int64(len(snippet))
	if err == nil {
		var more int64
		more, err = io.Copy(io.Discard, io.LimitReader(body, responseDrain))
		n += more
	}
	return snippet, n, err
}

// describeBody says why an answer whose status came is not complete: a
// timeout when the deadline passed while its body was read.
func describeBody(status int, read int64, err error) string {
	what := fmt.Sprintf("status %d and %d bytes of the body", status, read)
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout: the answer was not complete within the deadline (" + what + " came)"
	}
	return "the answer broke off (" + what + " came): " + describe(err)
}

// describe shortens a client error for the attempt log.
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout: no answer within the deadline"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout: " + err.Error()
	}
	return err.Error()
}
