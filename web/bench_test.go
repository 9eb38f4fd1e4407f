package web

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// BenchmarkHTTP drives the real HTTP stack over loopback with 1, 16 and 64
// concurrent clients, on a durable write (POST /v1/suppressions: one commit
// before the 201) and a read (GET /v1/account). It reports requests/s and
// p50/p99 latency. Run: go test ./web -run '^$' -bench HTTP -benchtime 3000x
func BenchmarkHTTP(b *testing.B) {
	db, err := storage.Open(b.TempDir(), storage.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	a, err := app.New(db, app.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	acct, _ := a.CreateAccount(app.AccountInput{Name: "bench", Plan: "enterprise", RateLimit: 1 << 30})
	key := issueKey(b, a, acct.ID, app.KeyInput{Name: "bench"})
	srv := httptest.NewServer(mustNew(b, a, DefaultConfig()))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}

	var seq atomic.Int64
	routes := []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"write", func() *http.Request {
			body := fmt.Sprintf(`{"recipient":"user%d@bench.test"}`, seq.Add(1))
			r, _ := http.NewRequest("POST", srv.URL+"/v1/suppressions", bytes.NewBufferString(body))
			return r
		}, http.StatusCreated},
		{"read", func() *http.Request {
			r, _ := http.NewRequest("GET", srv.URL+"/v1/account", nil)
			return r
		}, http.StatusOK},
	}
	for _, rt := range routes {
		for _, clients := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", rt.name, clients), func(b *testing.B) {
				latencies := make([]time.Duration, b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				commitsBefore := db.Commits()
				b.ResetTimer()
				start := time.Now()
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= int64(b.N) {
								return
							}
							req := rt.req()
							req.Header.Set("X-API-Key", key.Secret)
							t0 := time.Now()
							resp, err := client.Do(req)
							if err != nil {
								b.Error(err)
								return
							}
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							latencies[i] = time.Since(t0)
							if resp.StatusCode != rt.want {
								b.Errorf("status %d", resp.StatusCode)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				slices.Sort(latencies)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
				if commits := db.Commits() - commitsBefore; rt.name == "write" && commits > 0 {
					b.ReportMetric(float64(b.N)/float64(commits), "writes/commit")
				}
				b.ReportMetric(float64(latencies[b.N*50/100].Microseconds())/1000, "p50_ms")
				b.ReportMetric(float64(latencies[min(b.N-1, b.N*99/100)].Microseconds())/1000, "p99_ms")
			})
		}
	}
}
