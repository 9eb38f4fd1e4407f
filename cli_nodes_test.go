package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"mailbolt/mta/smtptest"
	"mailbolt/storage"
	"mailbolt/storage/pgtest"
)

// startNode runs serve as its own process (so that it can be SIGKILLed),
// on a data directory of its own, and waits until it listens.
func startNode(t *testing.T, bin string, args ...string) *serveProcess {
	t.Helper()
	return startServeProcess(t, bin, filepath.Join(t.TempDir(), "data"), append([]string{"--metrics-addr="}, args...)...)
}

var messageIDRe = regexp.MustCompile(`(?mi)^Message-ID:\s*(<[^>]+>)`)

// TestThreeNodesShareOneDatabase runs three serve processes over one
// PostgreSQL database, a DNS server and an SMTP sink, as a user would
// deploy them behind a load balancer. Steady state: every message is
// delivered once and every webhook event arrives once. Then one node is
// SIGKILLed in the middle of a burst: every message accepted (by any node,
// the dead one included) is still delivered, by the others once its lease
// ends; duplicates come only from deliveries in flight at the kill, and
// their number is reported. Concurrent idempotent requests to different
// nodes execute once.
func TestThreeNodesShareOneDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("three serve processes and PostgreSQL")
	}
	db := pgtest.Shared(t).NewDatabase(t)
	key := filepath.Join(t.TempDir(), "secret.key")
	if err := storage.WriteNewSecretKey(key); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	received := map[string]int{} // Message-ID → deliveries
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{Discard: true, OnMessage: func(m smtptest.Message) {
		if id := messageIDRe.FindSubmatch(m.Data); id != nil {
			mu.Lock()
			received[string(id[1])]++
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	events := map[string]int{} // webhook event id → arrivals
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID    string `json:"id"`
			Event string `json:"event"`
		}
		json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		events[ev.ID]++
		mu.Unlock()
	}))
	defer receiver.Close()
	zone := destZone(t)

	bin := tlsTestBinary(t)
	const lease = 3 * time.Second
	flags := []string{"--database", db, "--secret-key-file", key, "--dns-server", zone.Addr,
		"--mx-port", strconv.Itoa(sink.Port), "--mx-allow-cidrs", "127.0.0.0/8", "--webhook-allow-cidrs", "127.0.0.0/8",
		"--hostname", "mx.mailbolt.test", "--dev", "--delivery-lease", lease.String(), "--database-conns", "8"}
	nodes := []*serveProcess{startNode(t, bin, flags...)}
	live := liveKeyRe.FindStringSubmatch(nodes[0].stdout.String())
	if live == nil {
		t.Fatalf("the first node printed no key:\n%s", nodes[0].stdout)
	}
	nodes = append(nodes, startNode(t, bin, flags...), startNode(t, bin, flags...))
	for _, n := range nodes[1:] {
		if liveKeyRe.MatchString(n.stdout.String()) {
			t.Fatalf("a later node created the default account again:\n%s", n.stdout)
		}
	}
	call := apiCaller(t, nodes[1].base, live[1])
	dom := call("POST", "/v1/domains", `{"name":"acme.test"}`, 201)
	publishRecords(zone, dom)
	apiCaller(t, nodes[2].base, live[1])("POST", "/v1/domains/"+dom["id"].(string)+"/verify", "", 200)
	call("POST", "/v1/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.delivered"]}`, receiver.URL), 201)

	client := &http.Client{Timeout: 30 * time.Second}
	// send posts message i with its own idempotency key to node `to`, and
	// on a dead node (no answer) to the next live one, as a load balancer
	// would: the key makes a retry of a request the dead node committed
	// answer with the message it made. It returns the Message-ID.
	var dead atomic.Int32
	dead.Store(-1)
	send := func(i int) (string, error) {
		body := fmt.Sprintf(`{"from":"a@acme.test","to":["r%d@dest.test"],"subject":"m%d","text":"hello %d"}`, i, i, i)
		var last error
		for try := 0; try < 6; try++ {
			to := (i + try) % len(nodes)
			if int32(to) == dead.Load() && try < 5 {
				continue
			}
			req, _ := http.NewRequest("POST", nodes[to].base+"/v1/messages", bytes.NewBufferString(body))
			req.Header.Set("X-API-Key", live[1])
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("msg-%d", i))
			resp, err := client.Do(req)
			if err != nil {
				last = err
				continue
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 202 {
				return "", fmt.Errorf("node %d: %d %s", to, resp.StatusCode, data)
			}
			var m struct {
				MessageIDHeader string `json:"message_id_header"`
			}
			if err := json.Unmarshal(data, &m); err != nil || m.MessageIDHeader == "" {
				return "", fmt.Errorf("node %d: %s", to, data)
			}
			return m.MessageIDHeader, nil
		}
		return "", last
	}
	burst := func(from, to int, onAccepted func(n int)) []string {
		ids := make([]string, to-from)
		var next, accepted atomic.Int64
		next.Store(int64(from))
		var wg sync.WaitGroup
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < to; i = int(next.Add(1) - 1) {
					id, err := send(i)
					if err != nil {
						t.Errorf("message %d: %v", i, err)
						return
					}
					ids[i-from] = id
					if onAccepted != nil {
						onAccepted(int(accepted.Add(1)))
					}
				}
			}()
		}
		wg.Wait()
		return ids
	}
	// waitDelivered waits until the sink holds every id, and returns how
	// many arrived more than once.
	waitDelivered := func(ids []string, within time.Duration) (twice int) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			mu.Lock()
			missing := 0
			twice = 0
			for _, id := range ids {
				switch n := received[id]; {
				case n == 0:
					missing++
				case n > 1:
					twice++
				}
			}
			mu.Unlock()
			if missing == 0 {
				return twice
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d accepted messages never delivered", missing, len(ids))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Steady state: 600 messages through the three nodes.
	steady := burst(0, 600, nil)
	if t.Failed() {
		return
	}
	if twice := waitDelivered(steady, 90*time.Second); twice != 0 {
		t.Errorf("steady state: %d messages delivered twice", twice)
	}
	// Each delivery's webhook event arrives once.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n, dup := len(events), 0
		for _, c := range events {
			if c > 1 {
				dup++
			}
		}
		mu.Unlock()
		if dup > 0 {
			t.Fatalf("steady state: %d webhook events arrived more than once", dup)
		}
		if n >= len(steady) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d webhook events arrived", n, len(steady))
		}
	}

	// Concurrent duplicates across nodes execute once and get one answer.
	var answers sync.Map
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", nodes[i%3].base+"/v1/messages",
				bytes.NewBufferString(`{"from":"a@acme.test","to":["same@dest.test"],"subject":"once","text":"once"}`))
			req.Header.Set("X-API-Key", live[1])
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "the-same-key")
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers.Store(fmt.Sprintf("%d %s", resp.StatusCode, data), true)
		}()
	}
	wg.Wait()
	var distinct []string
	answers.Range(func(k, _ any) bool { distinct = append(distinct, k.(string)); return true })
	if len(distinct) != 1 {
		t.Errorf("six concurrent requests with one idempotency key on three nodes got %d different answers: %q", len(distinct), distinct)
	}

	// A burst of 2,400 more, one node SIGKILLed half way through.
	var killed sync.Once
	kill := func(n int) {
		if n == 1200 {
			killed.Do(func() {
				dead.Store(2)
				nodes[2].cmd.Process.Signal(syscall.SIGKILL)
			})
		}
	}
	rest := burst(600, 3000, kill)
	if t.Failed() {
		return
	}
	<-nodes[2].exited
	twice := waitDelivered(rest, 90*time.Second+lease)
	// Duplicates can only be deliveries the killed node had under way: at
	// most its delivery workers' worth.
	t.Logf("after the SIGKILL: %d of %d messages delivered twice (in flight at the kill)", twice, len(rest))
	if twice > 64 {
		t.Errorf("%d messages delivered twice, more than the killed node could have had in flight", twice)
	}
	if twice := waitDelivered(steady, time.Second); twice != 0 {
		t.Errorf("steady-state messages delivered again after the kill: %d", twice)
	}
}
