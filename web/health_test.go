package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// probeGet asks a probe path without a key and returns the status and the
// report.
func probeGet(t *testing.T, e *env, method, path string) (int, probeAnswer) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ans probeAnswer
	json.Unmarshal(body, &ans)
	if (path == "/healthz" || path == "/readyz") && resp.StatusCode != http.StatusMethodNotAllowed && resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s %s: Cache-Control %q", method, path, resp.Header.Get("Cache-Control"))
	}
	return resp.StatusCode, ans
}

func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	if status, ans := probeGet(t, e, "GET", "/healthz"); status != 200 || ans.Status != "ok" {
		t.Fatalf("/healthz: %d %+v", status, ans)
	}
	// Before the workers run the service is alive but not ready.
	if status, ans := probeGet(t, e, "GET", "/readyz"); status != 503 || ans.Status != "not_ready" || !strings.Contains(ans.Reason, "workers") {
		t.Fatalf("/readyz without workers: %d %+v", status, ans)
	}
	e.runWorkers()
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, ans := probeGet(t, e, "GET", "/readyz")
		if status == 200 && ans.Status == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with workers: %d %+v", status, ans)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, _ := probeGet(t, e, "POST", "/readyz"); status != 405 {
		t.Fatalf("POST /readyz: %d", status)
	}
	// Other unversioned paths stay 404.
	if status, _ := probeGet(t, e, "GET", "/health"); status != 404 {
		t.Fatalf("/health: %d", status)
	}
	e.app.BeginShutdown()
	if status, ans := probeGet(t, e, "GET", "/readyz"); status != 503 || !strings.Contains(ans.Reason, "shutting down") {
		t.Fatalf("/readyz while shutting down: %d %+v", status, ans)
	}
	if status, _ := probeGet(t, e, "GET", "/healthz"); status != 200 {
		t.Fatalf("/healthz while shutting down: %d", status)
	}
}

// A database that takes no writes is not ready.
func TestReadinessNeedsAWritableDatabase(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.runWorkers()
	if status, _ := probeGet(t, e, "GET", "/readyz"); status != 200 {
		t.Fatalf("/readyz: %d", status)
	}
	e.app.DB().Close()
	if status, ans := probeGet(t, e, "GET", "/readyz"); status != 503 || !strings.Contains(ans.Reason, "database") {
		t.Fatalf("/readyz with the database closed: %d %+v", status, ans)
	}
}
