package hooks

import (
	"context"
	"time"

	"mailbolt/storage"
)

// TryResult is the receiver's answer to a request made by Try.
type TryResult struct {
	At         time.Time     // when the request was sent
	StatusCode int           // 0 when there was no complete answer (see send)
	Error      string        // why there was no complete answer; empty when it answered
	Latency    time.Duration // to the end of the answer, its body read, or of the failure
	Response   string        // the first 1024 bytes of the answer's body (of what came)
}

// Try sends body to webhook w now and waits for the answer: one request,
// signed with w's secrets valid now, through the dispatcher's own client,
// so the address guard, the resolver, the per-host cap and the deadline
// (Options.Timeout) are those of deliveries. It is not a delivery: nothing
// is stored, it is never retried, and Options.Answered is not told. A
// failure to connect or a timeout is in the result, not an error; the
// error is only for a webhook whose secret cannot be read.
func (d *Dispatcher) Try(ctx context.Context, w storage.Webhook, body []byte, eventID, eventType string) (TryResult, error) {
	keys, err := signingKeys(w, d.now())
	if err != nil {
		return TryResult{}, err
	}
	r := send(ctx, d.client, job{url: w.URL, host: hostOf(w.URL), keys: keys, body: body,
		eventID: eventID, eventType: eventType}, d.opts.Now)
	return TryResult{At: r.at, StatusCode: r.status, Error: r.err, Latency: r.latency, Response: r.response}, nil
}
