package hooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// responseSnippet is how much of a receiver's answer an attempt keeps.
const responseSnippet = 1024

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

func newClient(g Guard, timeout time.Duration, perHost int) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil, // never route webhooks through an environment proxy
			DialContext:         dialer.DialContext,
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

// send makes one signed POST. It goes to the client's transport directly:
// the client's redirect handling has nothing to do (a 3xx is the answer)
// and the deadline is the request context's, over the answer's body too.
// The attempt's time, its signature's timestamp and its latency are read
// from clock.
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
	r.latency = clock().Sub(start)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			r.aborted = true
		}
		r.refused = errors.Is(err, ErrForbiddenAddress)
		r.err = describe(err)
		return r
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, responseSnippet))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	r.status = resp.StatusCode
	r.response = string(snippet)
	r.retryAfter = resp.Header.Get("Retry-After")
	return r
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
