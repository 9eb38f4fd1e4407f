package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"mailbolt/mta/dkim"
	"mailbolt/mta/smtptest"
)

// crashClient calls the API of the current server with one key.
type crashClient struct {
	t    *testing.T
	http *http.Client
	key  string
	base atomic.Value // string
}

// do sends one request. A 429 is retried after a pause; a transport error
// is returned (the server may have been killed under the request).
func (c *crashClient) do(method, path string, body any) (int, []byte, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequest(method, c.base.Load().(string)+path, bytes.NewReader(payload))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("X-API-Key", c.key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return 0, nil, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, nil, err
		}
		if resp.StatusCode == http.StatusTooManyRequests && attempt < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return resp.StatusCode, data, nil
	}
}

// must is do for requests that have to succeed with the given status.
func (c *crashClient) must(method, path string, body any, want int, into any) {
	c.t.Helper()
	status, data, err := c.do(method, path, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, status, want, data)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// TestCrashDeliveryQueue accepts live messages, SIGKILLs the server while
// their delivery to a loopback MX is under way, starts it again on the same
// data dir and checks that every accepted message is delivered, at most the
// in-flight ones twice, with exactly one message.sent and one
// message.delivered event each.
//
// The kill lands inside an SMTP transaction: the sink's hook for the
// crashAt-th message kills the server after the message is stored but
// before its 250 reaches the client, the window of RFC 1047 in which a
// duplicate cannot be avoided. Every fourth recipient is "slowaccept", which
// the sink holds for 200 ms at DATA, so other transactions are mid-flight too.
func TestCrashDeliveryQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	const (
		total    = 300
		crashAt  = total / 3
		senders  = 8
		workers  = 64 // --delivery-workers: the most messages in flight at the kill
		fromHost = "crash.test"
	)
	bin := filepath.Join(t.TempDir(), "mailbolt")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	zone := destZone(t)
	zone.A("mx.mailbolt.test", "127.0.0.1")

	// The sink kills the first server from inside the crashAt-th DATA, and
	// holds that transaction's 250 until the process is gone.
	var victim atomic.Pointer[serveProcess]
	var seen atomic.Int64
	killed := make(chan struct{})
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{OnMessage: func(smtptest.Message) {
		if seen.Add(1) == crashAt {
			close(killed) // first, so that senders take their errors for the kill's
			if s := victim.Load(); s != nil {
				s.kill()
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()

	dir := t.TempDir()
	// The MX is on loopback: allowed explicitly, as the SMTP client refuses it otherwise.
	args := []string{"--dns-server", zone.Addr, "--mx-port", strconv.Itoa(sink.Port), "--mx-allow-cidrs", "127.0.0.0/8", "--hostname", "mx.mailbolt.test",
		"--log-level", "warn", "--smtp-retry-base", "200ms", "--smtp-retry-max", "1s",
		"--delivery-workers", strconv.Itoa(workers)}
	first := startServeProcess(t, bin, dir, args...)
	victim.Store(first)

	// The default account's free plan allows 10 requests a second; use an
	// enterprise account, made through the management socket of the running
	// server.
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--data-dir", dir)...).CombinedOutput()
		if err != nil {
			t.Fatalf("mailbolt %v: %v\n%s", args, err, out)
		}
		return lastLine(string(out))
	}
	acct := cli("accounts", "create", "--name", "crash", "--plan", "enterprise")
	key := cli("keys", "create", "--account", acct, "--name", "crash")
	if !strings.HasPrefix(key, "svc_live_") {
		t.Fatalf("keys create printed %q, not a live key", key)
	}
	c := &crashClient{t: t, key: key, http: &http.Client{Timeout: 20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: senders * 2}}}
	c.base.Store(first.base)

	// A verified sending domain: publish what the API asks for.
	type record struct{ Type, Name, Value string }
	var dom struct {
		ID      string
		Status  string
		Records []record
	}
	c.must("POST", "/v1/domains", map[string]string{"name": fromHost}, 201, &dom)
	c.must("GET", "/v1/domains/"+dom.ID, nil, 200, &dom)
	for _, r := range dom.Records {
		switch {
		case r.Type == "CNAME":
			zone.CNAME(r.Name, r.Value)
		case r.Type == "TXT" && strings.HasPrefix(r.Value, `"`): // a long value split for pasting
			zone.LongTXT(r.Name, dkim.JoinTXT(r.Value))
		case r.Type == "TXT":
			zone.TXT(r.Name, r.Value)
		default:
			t.Fatalf("a %s record to publish: %+v", r.Type, r)
		}
	}
	c.must("POST", "/v1/domains/"+dom.ID+"/verify", nil, 200, &dom)
	if dom.Status != "verified" {
		t.Fatalf("domain not verified: %+v", dom)
	}

	// Send from several clients until the server dies. Only a 202 counts as
	// accepted.
	var (
		mu       sync.Mutex
		accepted = map[string]string{} // API id -> recipient
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				select {
				case <-killed:
					return
				default:
				}
				to := fmt.Sprintf("user%d@dest.test", i)
				if i%4 == 3 {
					to = "slowaccept@dest.test"
				}
				status, data, err := c.do("POST", "/v1/messages", map[string]any{"from": "Crash <x@" + fromHost + ">",
					"to": []string{to}, "subject": fmt.Sprintf("crash test %d", i), "text": fmt.Sprintf("message %d\n", i)})
				if err != nil || status != http.StatusAccepted {
					select {
					case <-killed: // cut off by the kill: not accepted
						return
					default:
					}
					t.Errorf("send %d before the kill: %d %v %s", i, status, err, data)
					return
				}
				var ans struct {
					ID              string `json:"id"`
					MessageIDHeader string `json:"message_id_header"`
				}
				if err := json.Unmarshal(data, &ans); err != nil || ans.ID == "" {
					t.Errorf("send %d: answer %s: %v", i, data, err)
					return
				}
				if want := "<" + ans.ID + "@" + fromHost + ">"; ans.MessageIDHeader != want {
					t.Errorf("send %d: message_id_header %q, want %q", i, ans.MessageIDHeader, want)
				}
				mu.Lock()
				accepted[ans.ID] = to
				mu.Unlock()
			}
		}()
	}
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatalf("the sink got %d of %d messages and the kill never came\nstderr:\n%s", sink.Received(), total, first.stderr)
	}
	<-first.exited
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	atKill := sink.Received()
	if first.err == nil || !strings.Contains(first.err.Error(), "killed") {
		t.Fatalf("the first server was not killed: %v", first.err)
	}

	// byID counts the copies of each message the sink received, by the id
	// in its Message-ID header.
	byID := func() (map[string]int, []string) {
		counts := map[string]int{}
		var bad []string
		for _, m := range sink.Messages() {
			msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
			if err != nil {
				bad = append(bad, err.Error())
				continue
			}
			hdr := msg.Header.Get("Message-Id")
			id, ok := strings.CutSuffix(strings.TrimSuffix(strings.TrimPrefix(hdr, "<"), ">"), "@"+fromHost)
			if !ok || !strings.HasPrefix(hdr, "<") {
				bad = append(bad, "Message-ID "+hdr)
				continue
			}
			counts[id]++
		}
		return counts, bad
	}
	missing := func(counts map[string]int) []string {
		var out []string
		for id := range accepted {
			if counts[id] == 0 {
				out = append(out, id)
			}
		}
		return out
	}
	counts, _ := byID()
	undelivered := len(missing(counts))
	t.Logf("killed with %d accepted, %d received by the sink, %d accepted not yet received", len(accepted), atKill, undelivered)
	if undelivered == 0 {
		t.Fatal("every accepted message had arrived before the kill: the crash did not land mid-delivery")
	}

	// Restart on the same data dir; the queue must finish on its own.
	second := startServeProcess(t, bin, dir, args...)
	c.base.Store(second.base)
	if strings.Contains(second.stdout.String(), "live key:") {
		t.Fatal("the restarted server took its data dir for a new one")
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		var bad []string
		counts, bad = byID()
		if len(bad) > 0 {
			t.Fatalf("the sink got messages without a Message-ID of ours: %q", bad)
		}
		lost := missing(counts)
		if len(lost) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d accepted messages never arrived, e.g. %v\nstderr after restart:\n%s",
				len(lost), len(accepted), lost[:min(len(lost), 5)], second.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Duplicates: only messages in flight at the kill may arrive twice. Two
	// kinds are seen: a 250 sent in the few milliseconds before the outcome
	// was committed, and a message whose final dot was sent before the kill
	// but which the sink (like a real MX, RFC 1047) accepted after it,
	// typically a "slowaccept" one held 200 ms at DATA.
	dupes, extra := 0, 0
	for id, n := range counts {
		if _, ok := accepted[id]; !ok {
			// Stored, but the 202 was lost with the process: delivering it
			// is right, and it is not ours to count.
			t.Logf("message %s arrived %d time(s) without a 202 having been read", id, n)
			continue
		}
		if n > 1 {
			dupes++
			extra += n - 1
		}
	}
	t.Logf("%d accepted, %d arrived twice or more (%d extra copies); %d received in all", len(accepted), dupes, extra, sink.Received())
	if extra > workers {
		t.Errorf("%d duplicate copies, more than the %d messages that can be in flight", extra, workers)
	}

	// The API agrees: every accepted message is delivered.
	type recipient struct {
		Email, Status string
		Attempts      int
	}
	var msgView struct {
		Status     string
		Recipients []recipient
	}
	attempts := map[string]int{}
	pending := map[string]bool{}
	for id := range accepted {
		pending[id] = true
	}
	deadline = time.Now().Add(30 * time.Second)
	for len(pending) > 0 {
		for id := range pending {
			c.must("GET", "/v1/messages/"+id, nil, 200, &msgView)
			if msgView.Status == "delivered" {
				if len(msgView.Recipients) != 1 || msgView.Recipients[0].Status != "delivered" ||
					msgView.Recipients[0].Email != accepted[id] {
					t.Errorf("message %s: recipients %+v, want %s delivered", id, msgView.Recipients, accepted[id])
				} else {
					attempts[id] = msgView.Recipients[0].Attempts
				}
				delete(pending, id)
			} else if time.Now().After(deadline) {
				t.Fatalf("message %s is %q, not delivered: %+v", id, msgView.Status, msgView.Recipients)
			}
		}
		if len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Attempts are saved before each connection, so a copy the sink got
	// without our commit of its 250 shows as a second attempt: no message
	// arrived more often than it was tried, only an attempt cut off by the
	// kill was made again, and at most the messages in flight were cut off.
	retried := 0
	for id, n := range attempts {
		if n < 1 || n > 2 || counts[id] > n {
			t.Errorf("message %s: %d attempt(s), %d copies received", id, n, counts[id])
		}
		if n == 2 {
			retried++
		}
	}
	t.Logf("%d messages were in flight at the kill and tried again", retried)
	if retried > workers {
		t.Errorf("%d messages tried twice, more than the %d that can be in flight", retried, workers)
	}

	// The events are complete: one message.sent and one message.delivered
	// for each message, whatever the crash did.
	for id := range accepted {
		var evs struct {
			Data []struct {
				Event string
				Data  struct {
					MessageID string `json:"messageId"`
					To        string `json:"to"`
				}
			}
			HasMore bool `json:"has_more"`
		}
		c.must("GET", "/v1/events?limit=200&message_id="+id, nil, 200, &evs)
		n := map[string]int{}
		for _, ev := range evs.Data {
			n[ev.Event]++
			if ev.Data.MessageID != id {
				t.Errorf("message %s: a %s event for %q", id, ev.Event, ev.Data.MessageID)
			}
		}
		if evs.HasMore || len(evs.Data) != 2 || n["message.sent"] != 1 || n["message.delivered"] != 1 {
			t.Errorf("message %s: events %v (has_more %v), want one message.sent and one message.delivered", id, n, evs.HasMore)
		}
	}

	// The file is sound: a checked hot backup, then an orderly stop.
	cli("backup", "--out", filepath.Join(t.TempDir(), "backup.db"))
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the restarted server did not stop on SIGTERM")
	}
	if second.err != nil {
		t.Fatalf("the restarted server: %v\nstderr:\n%s", second.err, second.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "mailbolt.db")); err != nil {
		t.Fatal(err)
	}
}
