package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startProcess runs bin with args until the test ends and returns the
// first match of re in its standard output.
func startProcess(t *testing.T, bin string, re *regexp.Regexp, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			go io.Copy(io.Discard, stdout)
			return cmd, m[1]
		}
	}
	t.Fatalf("%s %s printed no %s; stderr:\n%s", bin, strings.Join(args, " "), re, stderr.String())
	return nil, ""
}

// TestBenchDrivesARunningServer runs the three processes of a benchmark
// from outside: the counting sink, serve relaying to it, and the bench
// client (here in the test's process) posting over loopback HTTP.
func TestBenchDrivesARunningServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "mailbolt")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	_, sinkAddr := startProcess(t, bin, regexp.MustCompile(`sink listening on (\S+)`), "bench", "sink", "--addr", "127.0.0.1:0")

	dir := t.TempDir()
	out, err := exec.Command(bin, "bench", "setup", "--data-dir", dir, "--dkim", "ed25519").CombinedOutput()
	if err != nil {
		t.Fatalf("bench setup: %v\n%s", err, out)
	}
	key := lastLine(string(out))
	if !strings.HasPrefix(key, "svc_live_") || !strings.Contains(string(out), "from: bench@bench.test") {
		t.Fatalf("bench setup printed:\n%s", out)
	}
	srv, base := startProcess(t, bin, listenRe, "serve", "--data-dir", dir, "--hostname", "mta.bench.test",
		"--relay", sinkAddr, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0", "--metrics-addr=")

	const n = 40
	rep := func(args ...string) remoteReport {
		t.Helper()
		out, err := benchCmd(t, append([]string{"--server", base, "--key", key, "--from", "bench@bench.test",
			"--sink", sinkAddr, "--server-pid", strconv.Itoa(srv.Process.Pid), "--dkim", "ed25519",
			"--messages", strconv.Itoa(n), "--concurrency", "8", "--timeout", "2m", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("bench --server: %v\n%s", err, out)
		}
		var r remoteReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("report is not JSON: %v\n%s", err, out)
		}
		return r
	}
	// Twice: the second run counts only its own deliveries at the sink.
	for round := range 2 {
		r := rep()
		if !r.Complete || r.Accepted != n || r.Failed != 0 || r.Delivered != n || r.Duplicates != 0 || !r.Observed {
			t.Fatalf("round %d: incomplete run: %+v", round, r)
		}
		if r.Signed != n || r.WireBytes < 2048*3/4 || r.WireBytes > 2048*5/4 {
			t.Errorf("round %d: %d of %d DKIM-signed, %d bytes each", round, r.Signed, n, r.WireBytes)
		}
		if !(0 < r.AcceptP50 && r.AcceptP50 <= r.AcceptP99 && r.AcceptP99 <= r.AcceptMax) {
			t.Errorf("round %d: accept latency p50 %.2f, p99 %.2f, max %.2f ms", round, r.AcceptP50, r.AcceptP99, r.AcceptMax)
		}
		if r.ServerPeakRSS <= 0 || r.ServerRSS <= 0 || r.ServerAnon <= 0 || r.ServerRSS > r.ServerPeakRSS {
			t.Errorf("round %d: server memory: peak %.1f, RSS %.1f, anon %.1f MB", round, r.ServerPeakRSS, r.ServerRSS, r.ServerAnon)
		}
		if r.AcceptedPerSec <= 0 || r.DeliveredPerSec <= 0 || r.ServerCPU <= 0 || r.CPUPerMessage <= 0 || r.LoadBefore == "" {
			t.Errorf("round %d: rates %.0f/%.0f per s, server CPU %.3f s (%.3f ms per message), load %q",
				round, r.AcceptedPerSec, r.DeliveredPerSec, r.ServerCPU, r.CPUPerMessage, r.LoadBefore)
		}
	}

	// A wrong key fails every request, and the report says so.
	out2, err := benchCmd(t, "--server", base, "--key", "svc_live_nope", "--from", "bench@bench.test", "--messages", "3", "--concurrency", "1")
	if err == nil || !strings.Contains(out2, "failed            3") || !strings.Contains(out2, "HTTP 401") {
		t.Errorf("bench with a bad key: %v\n%s", err, out2)
	}
}

func TestBenchServerFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--server", "127.0.0.1:8080", "--key", "k", "--from", "a@b.test"},
		{"--server", "http://127.0.0.1:8080", "--from", "a@b.test"},
		{"--server", "http://127.0.0.1:8080", "--key", "k"},
		{"--server", "http://127.0.0.1:8080", "--key", "k", "--from", "a@b.test", "--to-domains", "0"},
	} {
		if out, err := benchCmd(t, args...); err == nil {
			t.Errorf("bench %s: no error\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestSinkAnswersAPipelinedGroup speaks to the sink as a pipelining client
// does: MAIL, RCPT and DATA in one write, then the message. Every answer
// comes, in order; dot-stuffing is undone; a repeated Message-ID is counted
// apart.
func TestSinkAnswersAPipelinedGroup(t *testing.T) {
	s, err := startSink("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	expect := func(prefix string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, prefix) {
			t.Fatalf("want %q, got %q (%v)", prefix, line, err)
		}
	}
	expect("220 ")
	io.WriteString(c, "EHLO client.test\r\n")
	ehlo := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		ehlo += line
		if strings.HasPrefix(line, "250 ") {
			break
		}
	}
	if !strings.Contains(ehlo, "PIPELINING") {
		t.Fatalf("EHLO does not offer PIPELINING:\n%s", ehlo)
	}
	msg := "Message-ID: <one@client.test>\r\nDKIM-Signature: v=1; a=ed25519-sha256\r\n\r\n..a dot-stuffed line\r\nbody\r\n.\r\n"
	for range 2 {
		io.WriteString(c, "MAIL FROM:<a@client.test>\r\nRCPT TO:<b@sink.test>\r\nDATA\r\n")
		expect("250 ")
		expect("250 ")
		expect("354 ")
		io.WriteString(c, msg)
		expect("250 ")
	}
	io.WriteString(c, "MAIL FROM:<a@client.test>\r\nRCPT TO:<b@sink.test>\r\nDATA\r\nMessage-ID: <two@client.test>\r\n\r\nx\r\n.\r\nQUIT\r\n")
	expect("250 ")
	expect("250 ")
	expect("354 ")
	expect("250 ")
	expect("221 ")
	got, err := sinkCount(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	body := "Message-ID: <one@client.test>\r\nDKIM-Signature: v=1; a=ed25519-sha256\r\n\r\n.a dot-stuffed line\r\nbody\r\n"
	want := sinkCounts{Messages: 3, Distinct: 2, Signed: 2, Bytes: int64(2*len(body) + len("Message-ID: <two@client.test>\r\n\r\nx\r\n"))}
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
}

func TestSinkCountRefusesAnotherServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "220 other ESMTP\r\n")
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "502 5.5.2 what?\r\n")
	}()
	if _, err := sinkCount(ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "not a counting sink") {
		t.Errorf("sinkCount of a plain SMTP server: %v", err)
	}
}

func TestParseProcStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	line := "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 12 0 1000 0 0"
	st, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != 17 || st.own != 3*time.Second || st.kids != 100*time.Millisecond {
		t.Errorf("parsed %+v", st)
	}
	if _, err := parseProcStat("4242 (x) S 1 2"); err == nil {
		t.Error("a short line parsed")
	}
	self, err := procCPU(os.Getpid())
	if err != nil || self < 0 {
		t.Errorf("procCPU(self) = %v, %v", self, err)
	}
	if _, err := procCPU(1 << 30); err == nil {
		t.Error("procCPU of no process: no error")
	}
}

func TestPprofAddr(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "192.0.2.1:6060", "[::]:6060", "example.com:6060", "6060"} {
		out, err := run(t, "serve", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
			"--metrics-addr=", "--pprof-addr", addr)
		if err == nil || !strings.Contains(err.Error(), "--pprof-addr") {
			t.Errorf("--pprof-addr %s: %v\n%s", addr, err, out)
		}
		if err != nil && addr != "6060" && !strings.Contains(err.Error(), "loopback") {
			t.Errorf("--pprof-addr %s: the error does not say why: %v", addr, err)
		}
	}

	_, out, stop := startServe(t, t.TempDir(), "--pprof-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`profiler on (http://\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("serve printed no profiler address:\n%s", out)
	}
	resp, err := http.Get(m[1] + "cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) == 0 {
		t.Errorf("GET %scmdline: %d %q", m[1], resp.StatusCode, body)
	}
	resp, err = http.Get(m[1] + "heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "heap profile") {
		t.Errorf("GET heap: %d %.200q", resp.StatusCode, body)
	}
	stop()

	// Off by default.
	_, out, _ = startServe(t, t.TempDir())
	if strings.Contains(out.String(), "profiler on") {
		t.Errorf("serve without --pprof-addr serves a profiler:\n%s", out)
	}
}
