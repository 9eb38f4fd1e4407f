package hooks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// benchRig is a running Dispatcher with one webhook pointing at a loopback
// receiver that records, for each event, the time from its write to its
// arrival.
type benchRig struct {
	db        *storage.DB
	d         *Dispatcher
	mu        sync.Mutex
	written   map[string]time.Time
	latencies []time.Duration
	received  atomic.Int64
	done      chan struct{} // closed when b.N events have arrived
	stop      func()
}

func newBenchRig(b *testing.B, workers int) *benchRig {
	r := &benchRig{written: make(map[string]time.Time, b.N), latencies: make([]time.Duration, 0, b.N), done: make(chan struct{})}
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get("X-Service-Event-Id")
		r.mu.Lock()
		at, first := r.written[id]
		if first {
			// Only an event's first arrival counts: a duplicate must not
			// stand in for an event that never came.
			delete(r.written, id)
			r.latencies = append(r.latencies, time.Since(at))
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		if first && r.received.Add(1) == int64(b.N) {
			close(r.done)
		}
	}))
	db, err := storage.Open(b.TempDir(), storage.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	r.db = db
	opts := DefaultOptions()
	opts.Workers, opts.PerHost, opts.Guard = workers, workers, Guard{AllowPrivate: true, AllowHTTP: true}
	r.d = mustNew(b, db, opts)
	w := storage.Webhook{ID: uuid.Must(uuid.NewV7()).String(), AccountID: "acct", URL: rec.URL, Events: []string{"message.sent"}, Secret: testSecret}
	db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(w) })
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.d.Run(ctx); close(stopped) }()
	r.stop = func() {
		// Every event ends recorded as delivered, once the dispatcher has
		// saved the answers (outside the measured time).
		var n int
		for deadline := time.Now().Add(time.Minute); n != b.N && time.Now().Before(deadline); {
			db.View(func(tx *storage.Tx) error {
				n = tx.DeliveryCount(w.AccountID, w.ID, storage.DeliveryDelivered)
				return nil
			})
			time.Sleep(time.Millisecond)
		}
		if n != b.N {
			b.Errorf("%d deliveries recorded as delivered, want %d", n, b.N)
		}
		cancel()
		<-stopped
		db.Close()
		rec.Close()
	}
	return r
}

// write commits n events in one transaction, noting their write time
// first (without holding the lock across the commit: the receiver takes it).
func (r *benchRig) write(b *testing.B, n int) {
	evs := make([]storage.Event, n)
	for j := range evs {
		id := uuid.Must(uuid.NewV7()).String()
		evs[j] = storage.Event{ID: id, AccountID: "acct", Type: "message.sent", Timestamp: time.Now(),
			Envelope:  []byte(`{"id":"` + id + `","event":"message.sent","timestamp":"2026-11-22T12:00:00Z","data":{"messageId":"m"}}`),
			ExpiresAt: time.Now().Add(time.Hour)}
	}
	now := time.Now()
	r.mu.Lock()
	for _, ev := range evs {
		r.written[ev.ID] = now
	}
	r.mu.Unlock()
	err := r.db.Update(func(tx *storage.Tx) error {
		for _, ev := range evs {
			if err := tx.AppendEvent(ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	r.d.Kick()
}

// wait blocks until every event arrived and returns the sorted latencies.
func (r *benchRig) wait(b *testing.B) []time.Duration {
	select {
	case <-r.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d delivered", r.received.Load(), b.N)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.latencies)
	return r.latencies
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkDeliver measures events delivered (taken from the outbox, signed,
// POSTed to a loopback receiver, answer saved) per second with 1, 16 and 64
// requests in flight, the process's CPU time per event, and the p99 time
// from an event's write (the start of its commit) to its arrival at the
// receiver. Run:
// go test ./hooks -run '^$' -bench Deliver -benchtime 20000x
//
// Last comes the floor the dispatcher is measured against: a bare loop of
// signed POSTs to the same kind of receiver, 64 in flight, nothing stored.
// It reports its own rate and CPU, and deliver/bare: the dispatcher's rate
// at 64 in flight (from the run just before) over the bare loop's.
func BenchmarkDeliver(b *testing.B) {
	var rate64 float64 // events/s of concurrency=64, for the ratio
	for _, workers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", workers), func(b *testing.B) {
			r := newBenchRig(b, workers)
			defer r.stop()
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			const batch = 200
			for i := 0; i < b.N; i += batch {
				r.write(b, min(batch, b.N-i))
			}
			lat := r.wait(b)
			elapsed, cpu := time.Since(start), cpuTime()-cpu0
			b.StopTimer()
			rate := float64(b.N) / elapsed.Seconds()
			if workers == 64 {
				rate64 = rate
			}
			b.ReportMetric(rate, "events/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu_us/event")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
		})
	}
	b.Run("bare=64", func(b *testing.B) {
		rate, cpu := bareSignedPosts(b, 64)
		b.ReportMetric(rate, "events/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu_us/event")
		if rate64 > 0 {
			b.ReportMetric(rate64/rate, "deliver/bare")
		}
	})
}

// bareSignedPosts makes b.N webhook-shaped POSTs, each with a fresh
// envelope and its HMAC signature (Signature, as the dispatcher signs),
// from inFlight goroutines through one net/http client to an httptest
// receiver answering 204: no outbox, no claims, no commits. It returns the
// rate and the process's CPU time (client and receiver together, as in the
// dispatcher's rows).
func bareSignedPosts(b *testing.B, inFlight int) (float64, time.Duration) {
	var received atomic.Int64
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get(HeaderSignature) != "" {
			received.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rec.Close()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns: 1024, MaxIdleConnsPerHost: inFlight, MaxConnsPerHost: inFlight, IdleConnTimeout: 90 * time.Second}}
	defer client.CloseIdleConnections()
	key, err := DecodeSecret(testSecret)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for range inFlight {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				id := uuid.Must(uuid.NewV7()).String()
				body := []byte(`{"id":"` + id + `","event":"message.sent","timestamp":"2026-11-22T12:00:00Z","data":{"messageId":"m"}}`)
				t := time.Now().Unix()
				req, err := http.NewRequest(http.MethodPost, rec.URL, bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				req.Header = http.Header{
					"Content-Type":       {"application/json"},
					"User-Agent":         {"Mailbolt-Webhooks/1"},
					HeaderTimestamp:      {strconv.FormatInt(t, 10)},
					HeaderSignature:      {Signature(body, t, key)},
					"X-Service-Event-Id": {id},
					"X-Service-Event":    {"message.sent"},
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if n := received.Load(); n != int64(b.N) {
		b.Fatalf("the receiver got %d signed requests, want %d", n, b.N)
	}
	return float64(b.N) / elapsed.Seconds(), cpu
}

// BenchmarkDeliverLatency measures write-to-receiver latency below
// capacity: events are written one per transaction, at most one per
// millisecond (each commit waits for its fsync, so the rate is somewhat
// lower), with 64 requests allowed in flight. Run:
// go test ./hooks -run '^$' -bench DeliverLatency -benchtime 3000x
func BenchmarkDeliverLatency(b *testing.B) {
	r := newBenchRig(b, 64)
	defer r.stop()
	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	for i := 0; i < b.N; i++ {
		<-tick.C
		r.write(b, 1)
	}
	tick.Stop()
	lat := r.wait(b)
	b.StopTimer()
	b.ReportMetric(ms(lat[len(lat)/2]), "p50_ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99_ms")
}
