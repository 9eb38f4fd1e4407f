package hooks

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailbolt/storage"
)

// bodyThenStall answers 200 announcing a body of length bytes, sends the
// first sent of them at once, then sends nothing more until the request
// ends (the client gave up) or the test does.
func bodyThenStall(t *testing.T, length, sent int) http.HandlerFunc {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(length))
		w.WriteHeader(http.StatusOK)
		w.Write(bytes.Repeat([]byte("x"), sent))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

// An answer counts only once it is complete: its status, its headers and
// its body up to the end or up to the 65 KiB an attempt reads (1 KiB kept,
// 64 KiB discarded), all within the deadline. A status whose body stalls
// is a timeout with no status, its latency runs to the deadline; a body
// that breaks off is a failure too; a body longer than what is read
// counts as soon as that part has come, however long the rest.
func TestAnswerMustBeCompleteWithinTheDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	read := responseSnippet + responseDrain
	cases := []struct {
		name      string
		handler   http.HandlerFunc
		code      int    // 0: no complete answer
		errSubstr string // when code is 0
		response  string // the part of the body kept
	}{
		{name: "status then a stalled body", handler: bodyThenStall(t, 100000, 10),
			errSubstr: "timeout: the answer was not complete within the deadline (status 200 and 10 bytes of the body came)", response: "xxxxxxxxxx"},
		{name: "one byte short of what is read, then a stall", handler: bodyThenStall(t, 10<<20, read-1),
			errSubstr: "timeout:", response: strings.Repeat("x", responseSnippet)},
		{name: "what is read, then a stall", handler: bodyThenStall(t, 10<<20, read),
			code: 200, response: strings.Repeat("x", responseSnippet)},
		{name: "a long body sent at once", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Write(bytes.Repeat([]byte("y"), 8<<20))
		}, code: 200, response: strings.Repeat("y", responseSnippet)},
		{name: "a body shorter than its Content-Length", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.Write([]byte("short"))
		}, errSubstr: "the answer broke off (status 200 and 5 bytes of the body came): unexpected EOF", response: "short"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, testOptions(func(o *Options) { o.Timeout = deadline }))
			h.d.opts.Now = time.Now // latencies on the real clock
			rec := newReceiver(t, c.handler)
			res, err := h.d.Try(context.Background(), storage.Webhook{URL: rec.URL, Secret: testSecret}, []byte(`{}`), "ev", "webhook.test")
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != c.code || res.Response != c.response {
				t.Errorf("status %d, response of %d bytes; want %d and %d bytes", res.StatusCode, len(res.Response), c.code, len(c.response))
			}
			if c.code != 0 {
				if res.Error != "" || res.Latency >= deadline {
					t.Errorf("a complete answer: error %q, latency %v", res.Error, res.Latency)
				}
				return
			}
			if !strings.Contains(res.Error, c.errSubstr) {
				t.Errorf("error %q, want %q", res.Error, c.errSubstr)
			}
			// The deadline runs from just before the request is built,
			// the latency from just before it is sent: a hair shorter.
			if strings.HasPrefix(c.errSubstr, "timeout") && res.Latency < deadline*9/10 {
				t.Errorf("latency %v: not measured to the end of the attempt (the %v deadline)", res.Latency, deadline)
			}
		})
	}
}

// A delivery whose answer's body stalls is retried as a timeout, not
// delivered.
func TestStalledAnswerBodyIsRetried(t *testing.T) {
	h := newHarness(t, testOptions(func(o *Options) { o.Timeout = 200 * time.Millisecond }))
	rec := newReceiver(t, bodyThenStall(t, 100000, 300))
	w := h.webhook(rec.URL, "message.delivered")
	ev := h.event("message.delivered")
	if n := h.step(); n != 1 {
		t.Fatalf("sent %d", n)
	}
	d := h.delivery(w, ev)
	if d.Status != storage.DeliveryPending || len(d.Attempts) != 1 || d.Retries != 1 {
		t.Fatalf("status %s, %d retries, attempts %+v", d.Status, d.Retries, d.Attempts)
	}
	if a := d.Attempts[0]; a.StatusCode != 0 || !strings.HasPrefix(a.Error, "timeout:") {
		t.Errorf("attempt %+v, want a timeout with no status", a)
	}
	if got := d.NextAttemptAt.Sub(h.clock.Now()); got != 30*time.Second {
		t.Errorf("next attempt in %v, want the first backoff, 30s", got)
	}
}
