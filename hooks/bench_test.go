package hooks

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// BenchmarkDeliver measures events delivered (fanned out, claimed, signed,
// POSTed to a loopback receiver, recorded) per second with 1, 16 and 64
// requests in flight, and the p99 time from an event's write (the start of
// its commit) to its arrival at the receiver. Run:
// go test ./hooks -run '^$' -bench Deliver -benchtime 20000x
func BenchmarkDeliver(b *testing.B) {
	for _, workers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", workers), func(b *testing.B) {
			var mu sync.Mutex
			committed := make(map[string]time.Time, b.N)
			latencies := make([]time.Duration, 0, b.N)
			var received atomic.Int64
			done := make(chan struct{})
			rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id := r.Header.Get("X-Service-Event-Id")
				mu.Lock()
				latencies = append(latencies, time.Since(committed[id]))
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
				if received.Add(1) == int64(b.N) {
					close(done)
				}
			}))
			defer rec.Close()
			db, err := storage.Open(b.TempDir(), storage.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			d := New(db, Options{Workers: workers, PerHost: workers, Guard: Guard{AllowPrivate: true, AllowHTTP: true}})
			w := storage.Webhook{ID: uuid.Must(uuid.NewV7()).String(), AccountID: "acct", URL: rec.URL, Events: []string{"message.sent"}, Secret: testSecret}
			db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(w) })
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() { d.Run(ctx); close(stopped) }()

			b.ResetTimer()
			start := time.Now()
			const batch = 200
			for i := 0; i < b.N; i += batch {
				n := min(batch, b.N-i)
				evs := make([]storage.Event, n)
				for j := range evs {
					id := uuid.Must(uuid.NewV7()).String()
					evs[j] = storage.Event{ID: id, AccountID: "acct", Type: "message.sent", Timestamp: time.Now(),
						Envelope:  []byte(`{"id":"` + id + `","event":"message.sent","timestamp":"2026-11-22T12:00:00Z","data":{"messageId":"m"}}`),
						ExpiresAt: time.Now().Add(time.Hour)}
				}
				// Note the time before the commit, without holding the lock
				// across it: the receiver takes the same lock.
				now := time.Now()
				mu.Lock()
				for _, ev := range evs {
					committed[ev.ID] = now
				}
				mu.Unlock()
				err := db.Update(func(tx *storage.Tx) error {
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
				d.Kick()
			}
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("only %d of %d delivered", received.Load(), b.N)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			<-stopped
			slices.Sort(latencies)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99_ms")
		})
	}
}

// BenchmarkDeliverLatency measures write-to-receiver latency below
// capacity: events are written one per transaction, at most one per
// millisecond (each commit waits for its fsync, so the rate is somewhat
// lower), with 64 requests allowed in flight. Run:
// go test ./hooks -run '^$' -bench DeliverLatency -benchtime 3000x
func BenchmarkDeliverLatency(b *testing.B) {
	var mu sync.Mutex
	committed := make(map[string]time.Time, b.N)
	latencies := make([]time.Duration, 0, b.N)
	var received atomic.Int64
	done := make(chan struct{})
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Service-Event-Id")
		mu.Lock()
		latencies = append(latencies, time.Since(committed[id]))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		if received.Add(1) == int64(b.N) {
			close(done)
		}
	}))
	defer rec.Close()
	db, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	d := New(db, Options{Workers: 64, PerHost: 64, Guard: Guard{AllowPrivate: true, AllowHTTP: true}})
	w := storage.Webhook{ID: uuid.Must(uuid.NewV7()).String(), AccountID: "acct", URL: rec.URL, Events: []string{"message.sent"}, Secret: testSecret}
	db.Update(func(tx *storage.Tx) error { return tx.PutWebhook(w) })
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { d.Run(ctx); close(stopped) }()
	b.ResetTimer()
	tick := time.NewTicker(time.Millisecond)
	for i := 0; i < b.N; i++ {
		<-tick.C
		id := uuid.Must(uuid.NewV7()).String()
		ev := storage.Event{ID: id, AccountID: "acct", Type: "message.sent", Timestamp: time.Now(),
			Envelope: []byte(`{"id":"` + id + `","event":"message.sent"}`), ExpiresAt: time.Now().Add(time.Hour)}
		mu.Lock()
		committed[id] = time.Now()
		mu.Unlock()
		if err := db.Update(func(tx *storage.Tx) error { return tx.AppendEvent(ev) }); err != nil {
			b.Fatal(err)
		}
		d.Kick()
	}
	tick.Stop()
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("only %d of %d delivered", received.Load(), b.N)
	}
	b.StopTimer()
	cancel()
	<-stopped
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99_ms")
}
