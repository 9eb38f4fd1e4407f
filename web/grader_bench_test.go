package web

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/grader"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/storage"
)

// graderBenchServer serves the API over a loopback DNS server holding one
// well-configured domain, with a grader rate limit that never throttles.
func graderBenchServer(b *testing.B, cacheTTL time.Duration) *httptest.Server {
	zone := dnstest.Start(b)
	zone.MX("good.test", 10, "mx.good.test")
	zone.A("mx.good.test", "127.0.0.1")
	zone.TXT("good.test", "v=spf1 ip4:127.0.0.1 -all")
	zone.TXT("_dmarc.good.test", "v=DMARC1; p=reject; rua=mailto:d@good.test")
	db, err := storage.Open(b.TempDir(), storage.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	o := app.DefaultOptions()
	o.Grader = app.GraderOptions{CacheTTL: cacheTTL, Config: grader.Config{
		Resolver:     &dns.Resolver{Server: zone.Addr, Timeout: time.Second},
		IPBlocklists: []string{}, DomainBlocklists: []string{}}}
	a, err := app.New(db, o)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(mustNew(b, a, configWith(func(c *Config) { c.IPRateLimit, c.GraderRateLimit = 1<<30, 1<<30 })))
	b.Cleanup(srv.Close)
	return srv
}

func postCheck(b *testing.B, c *http.Client, url string) {
	resp, err := c.Post(url+"/v1/grader/check", "application/json", bytes.NewReader([]byte(`{"domain":"good.test"}`)))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkGraderCheckWarm measures public checks per second over HTTP
// when the domain's result is cached (goal: at least 5,000/s).
func BenchmarkGraderCheckWarm(b *testing.B) {
	srv := graderBenchServer(b, time.Hour)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	postCheck(b, c, srv.URL)
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			postCheck(b, c, srv.URL)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "checks/s")
}

// BenchmarkGraderCheckCold measures one uncached check against the
// loopback DNS server (goal: p99 at most 50 ms; a check's lookups run in
// parallel).
func BenchmarkGraderCheckCold(b *testing.B) {
	srv := graderBenchServer(b, time.Nanosecond)
	c := &http.Client{}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		postCheck(b, c, srv.URL)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}
