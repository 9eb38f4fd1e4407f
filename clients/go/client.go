// Package mailbolt is the first-party Go client of the Mailbolt HTTP API (/v1).
//
// It uses only the standard library. A Client is safe for concurrent use.
//
//	c, err := mailbolt.New(mailbolt.Options{}) // MAILBOLT_API_KEY, MAILBOLT_BASE_URL, MAILBOLT_CA_FILE
//	msg, err := c.Messages.Send(ctx, &mailbolt.SendMessageRequest{
//		From: "app@example.com", To: []string{"ann@example.net"}, Subject: "Hi", Text: "Hello",
//	})
package mailbolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Version is the library's version, sent in the User-Agent header.
const Version = "0.1.0"

// UserAgent is the User-Agent header every request carries.
const UserAgent = "mailbolt-go/" + Version

// DefaultBaseURL is used when neither Options.BaseURL nor MAILBOLT_BASE_URL is set.
const DefaultBaseURL = "http://127.0.0.1:8080"

// DefaultMaxRetries is the number of retries of a transient error when
// Options.MaxRetries is zero.
const DefaultMaxRetries = 3

// Options configures a Client. The zero value reads everything from the environment.
type Options struct {
	// APIKey is sent as X-API-Key. Default: $MAILBOLT_API_KEY.
	APIKey string
	// BaseURL is the server's address, with or without a trailing /v1.
	// Default: $MAILBOLT_BASE_URL, else DefaultBaseURL.
	BaseURL string
	// CAFile names a PEM file of extra trusted root certificates, added to the
	// system's. Default: $MAILBOLT_CA_FILE. Ignored when HTTPClient is set.
	CAFile string
	// HTTPClient replaces the client's own (which requires TLS 1.2 or newer).
	// A caller who sets it is responsible for its TLS configuration.
	HTTPClient *http.Client
	// MaxRetries is how often a transient error (RATE_LIMIT_EXCEEDED,
	// SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT) is retried. 0 means
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// RetryBaseDelay is the first backoff delay, doubled per attempt, with
	// jitter, when the answer has no Retry-After. Default 500 ms.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps a single backoff delay (also one from Retry-After).
	// Default 30 s.
	RetryMaxDelay time.Duration
}

// Client talks to one Mailbolt server with one API key.
type Client struct {
	baseURL    string
	apiKey     string
	http       *http.Client
	maxRetries int
	baseDelay  time.Duration
	maxDelay   time.Duration
	sleep      func(context.Context, time.Duration) error

	Account      *AccountService
	Messages     *MessagesService
	Events       *EventsService
	APIKeys      *APIKeysService
	Suppressions *SuppressionsService
	Domains      *DomainsService
	Templates    *TemplatesService
	Webhooks     *WebhooksService
	Team         *TeamService
	Analytics    *AnalyticsService
	IPs          *IPsService
	Grader       *GraderService
	Inbound      *InboundService
}

// New builds a Client from opts, filling unset fields from the environment.
func New(opts Options) (*Client, error) {
	if opts.APIKey == "" {
		opts.APIKey = os.Getenv("MAILBOLT_API_KEY")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = os.Getenv("MAILBOLT_BASE_URL")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if opts.CAFile == "" {
		opts.CAFile = os.Getenv("MAILBOLT_CA_FILE")
	}
	base := strings.TrimRight(opts.BaseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mailbolt: base URL %q is not an http(s) URL", opts.BaseURL)
	}
	hc := opts.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if opts.CAFile != "" {
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			pem, err := os.ReadFile(opts.CAFile)
			if err != nil {
				return nil, fmt.Errorf("mailbolt: CA file: %w", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("mailbolt: CA file %s holds no PEM certificate", opts.CAFile)
			}
			tr.TLSClientConfig.RootCAs = pool
		}
		hc = &http.Client{Transport: tr, Timeout: 60 * time.Second}
	}
	c := &Client{
		baseURL:    base,
		apiKey:     opts.APIKey,
		http:       hc,
		maxRetries: opts.MaxRetries,
		baseDelay:  opts.RetryBaseDelay,
		maxDelay:   opts.RetryMaxDelay,
		sleep:      sleepCtx,
	}
	if c.maxRetries == 0 {
		c.maxRetries = DefaultMaxRetries
	} else if c.maxRetries < 0 {
		c.maxRetries = 0
	}
	if c.baseDelay <= 0 {
		c.baseDelay = 500 * time.Millisecond
	}
	if c.maxDelay <= 0 {
		c.maxDelay = 30 * time.Second
	}
	c.Account = &AccountService{c}
	c.Messages = &MessagesService{c}
	c.Events = &EventsService{c}
	c.APIKeys = &APIKeysService{c}
	c.Suppressions = &SuppressionsService{c}
	c.Domains = &DomainsService{c}
	c.Templates = &TemplatesService{c}
	c.Webhooks = &WebhooksService{c}
	c.Team = &TeamService{c}
	c.Analytics = &AnalyticsService{c}
	c.IPs = &IPsService{c}
	c.Grader = &GraderService{c}
	c.Inbound = &InboundService{c}
	return c, nil
}

// RateLimit is the X-RateLimit-* headers of one answer. Zero values mean the
// header was absent.
type RateLimit struct {
	Limit     int       // X-RateLimit-Limit: requests allowed per second
	Remaining int       // X-RateLimit-Remaining: left in the current window
	Reset     time.Time // X-RateLimit-Reset: when the current window ends
}

func parseRateLimit(h http.Header) RateLimit {
	var rl RateLimit
	rl.Limit, _ = strconv.Atoi(h.Get("X-RateLimit-Limit"))
	rl.Remaining, _ = strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		rl.Reset = time.Unix(s, 0)
	}
	return rl
}

// Response describes the HTTP answer a result came from. Every result type
// embeds it, so rate-limit headers are readable from every answer.
type Response struct {
	StatusCode int
	Header     http.Header
	// RequestID is the X-Request-Id header.
	RequestID string
	RateLimit RateLimit
	// IdempotentReplayed is true when the server replayed a stored answer
	// (Idempotent-Replayed: true).
	IdempotentReplayed bool
	// IdempotencyKey is the Idempotency-Key the request was sent with, if any.
	IdempotencyKey string
	// Attempts is how many times the request was sent (1 + retries).
	Attempts int
}

func (r *Response) setResponse(x *Response) { *r = *x }

type responseSetter interface{ setResponse(*Response) }

// Transient error codes, retried with backoff.
const (
	CodeRateLimitExceeded  = "RATE_LIMIT_EXCEEDED"
	CodeServiceUnavailable = "SERVICE_UNAVAILABLE"
	CodeGatewayTimeout     = "GATEWAY_TIMEOUT"
)

// Error is an error answer of the API (spec §7 envelope).
type Error struct {
	StatusCode int
	Code       string         // the programmatic contract, e.g. "DOMAIN_NOT_VERIFIED"
	Message    string         // human-readable; do not match on it
	Details    map[string]any // optional field-level or contextual details
	RequestID  string         // X-Request-Id
	RateLimit  RateLimit
	RetryAfter time.Duration // Retry-After, when given
	Header     http.Header
}

func (e *Error) Error() string {
	s := fmt.Sprintf("mailbolt: %d %s: %s", e.StatusCode, e.Code, e.Message)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// Transient reports whether the error is one the client retries.
func (e *Error) Transient() bool {
	switch e.Code {
	case CodeRateLimitExceeded, CodeServiceUnavailable, CodeGatewayTimeout:
		return true
	}
	return false
}

// ErrorCode returns the API error code of err, or "" when err is not an *Error.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// RequestOption changes one request.
type RequestOption func(*requestOptions)

type requestOptions struct {
	idempotencyKey string
	header         http.Header
}

// WithIdempotencyKey sends key as the Idempotency-Key instead of a generated one.
func WithIdempotencyKey(key string) RequestOption {
	return func(o *requestOptions) { o.idempotencyKey = key }
}

// WithHeader adds a header to the request.
func WithHeader(name, value string) RequestOption {
	return func(o *requestOptions) {
		if o.header == nil {
			o.header = http.Header{}
		}
		o.header.Add(name, value)
	}
}

// NewIdempotencyKey returns a random UUID v4.
func NewIdempotencyKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

type call struct {
	method string
	path   string // starting with /v1/
	query  url.Values
	body   any // marshalled to JSON when non-nil
	// idempotent: a write that gets an Idempotency-Key (generated unless given)
	idempotent bool
	noAuth     bool
	// stream receives a 2xx answer's body as it arrives, unread and
	// unlimited (the CSV export), instead of its being decoded into out.
	stream io.Writer
}

// do runs a call with retries and decodes a 2xx JSON answer into out (when
// non-nil). It returns the Response of the final attempt.
func (c *Client) do(ctx context.Context, cl call, out any, opts []RequestOption) (*Response, error) {
	var ro requestOptions
	for _, o := range opts {
		o(&ro)
	}
	var body []byte
	if cl.body != nil {
		var err error
		if body, err = json.Marshal(cl.body); err != nil {
			return nil, fmt.Errorf("mailbolt: encode request: %w", err)
		}
	}
	idem := ro.idempotencyKey
	if idem == "" && cl.idempotent {
		idem = NewIdempotencyKey()
	}
	u := c.baseURL + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	for attempt := 0; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, cl.method, u, rd)
		if err != nil {
			return nil, fmt.Errorf("mailbolt: %w", err)
		}
		req.Header.Set("User-Agent", UserAgent)
		req.Header.Set("Accept", "application/json")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if !cl.noAuth && c.apiKey != "" {
			req.Header.Set("X-API-Key", c.apiKey)
		}
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		for k, vs := range ro.header {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("mailbolt: %s %s: %w", cl.method, cl.path, err)
		}
		meta := &Response{
			StatusCode:         resp.StatusCode,
			Header:             resp.Header,
			RequestID:          resp.Header.Get("X-Request-Id"),
			RateLimit:          parseRateLimit(resp.Header),
			IdempotentReplayed: resp.Header.Get("Idempotent-Replayed") == "true",
			IdempotencyKey:     idem,
			Attempts:           attempt + 1,
		}
		if cl.stream != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
			_, err := io.Copy(cl.stream, resp.Body)
			resp.Body.Close()
			if err != nil {
				// A transfer the server broke off is an error, never a short answer.
				return meta, fmt.Errorf("mailbolt: %s %s: read answer: %w", cl.method, cl.path, err)
			}
			return meta, nil
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("mailbolt: %s %s: read answer: %w", cl.method, cl.path, err)
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			if raw, ok := out.(*[]byte); ok {
				*raw = data // a non-JSON answer, such as message/rfc822
			} else if out != nil && len(bytes.TrimSpace(data)) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return meta, fmt.Errorf("mailbolt: %s %s: decode answer: %w", cl.method, cl.path, err)
				}
			}
			if s, ok := out.(responseSetter); ok {
				s.setResponse(meta)
			}
			return meta, nil
		}
		apiErr := parseError(resp, data)
		if !apiErr.Transient() || attempt >= c.maxRetries {
			return meta, apiErr
		}
		if err := c.sleep(ctx, c.backoff(attempt, apiErr.RetryAfter)); err != nil {
			return meta, apiErr
		}
	}
}

// backoff is the delay before retry number attempt+1: Retry-After when the
// server gave one, else base·2^attempt with full jitter over its upper half.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		// a little jitter on top, so that clients told the same moment spread out
		d := retryAfter + time.Duration(mrand.Int64N(int64(100*time.Millisecond)))
		return min(d, c.maxDelay)
	}
	d := c.baseDelay << min(attempt, 20)
	if d > c.maxDelay || d <= 0 {
		d = c.maxDelay
	}
	half := d / 2
	return half + time.Duration(mrand.Int64N(int64(half)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func parseError(resp *http.Response, data []byte) *Error {
	e := &Error{
		StatusCode: resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RateLimit:  parseRateLimit(resp.Header),
		Header:     resp.Header,
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = max(time.Until(t), 0)
		}
	}
	var env struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
		return e
	}
	// not the envelope (a proxy's page, say): keep what there is
	e.Message = strings.TrimSpace(string(data))
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusServiceUnavailable:
		e.Code = CodeServiceUnavailable
	case http.StatusGatewayTimeout:
		e.Code = CodeGatewayTimeout
	case http.StatusTooManyRequests:
		e.Code = CodeRateLimitExceeded
	}
	return e
}

func pathEsc(s string) string { return url.PathEscape(s) }
