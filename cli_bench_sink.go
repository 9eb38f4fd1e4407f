package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// The counting sink is the far end of an outside-the-process benchmark:
// a separate process that accepts every message over SMTP as fast as a
// client can send it, and counts. It speaks just enough SMTP for a relay
// client (EHLO with PIPELINING, MAIL, RCPT, DATA, RSET, NOOP, QUIT) and
// writes its answers only when it has read every command the client has
// sent so far, so a pipelined MAIL/RCPT/DATA gets its three answers in
// one segment, as Postfix's smtpd does. go-smtp (mta/smtptest) flushes
// after every answer; beside a client that pipelines, that costs both
// ends a system call and a wake-up per command.
//
// XCOUNT is its one extension: it answers
//
//	250 <messages> <distinct Message-IDs> <bytes> <DKIM-signed>
//
// so `mailbolt bench --sink` can follow deliveries from its own process.

// sinkCounts are what a sink has received.
type sinkCounts struct {
	Messages int64 `json:"messages"`
	Distinct int64 `json:"distinct"` // distinct Message-IDs (messages without one count as distinct)
	Bytes    int64 `json:"bytes"`
	Signed   int64 `json:"dkim_signed"`
}

// countingSink is a running sink.
type countingSink struct {
	ln       net.Listener
	messages atomic.Int64
	bytes    atomic.Int64
	signed   atomic.Int64
	mu       sync.Mutex
	seen     map[string]struct{}
	distinct int64
	first    atomic.Int64 // unix nanoseconds of the first message, 0 before
	last     atomic.Int64 // unix nanoseconds of the latest message
	conns    sync.WaitGroup
	closing  atomic.Bool
	onCount  func(n int64) // called after each message with the new total
}

func startSink(addr string) (*countingSink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &countingSink{ln: ln, seen: map[string]struct{}{}}
	go s.serve()
	return s, nil
}

func (s *countingSink) Addr() string { return s.ln.Addr().String() }

func (s *countingSink) counts() sinkCounts {
	s.mu.Lock()
	d := s.distinct
	s.mu.Unlock()
	return sinkCounts{Messages: s.messages.Load(), Distinct: d, Bytes: s.bytes.Load(), Signed: s.signed.Load()}
}

// Close stops listening and waits for the open sessions to end.
func (s *countingSink) Close() error {
	s.closing.Store(true)
	err := s.ln.Close()
	s.conns.Wait()
	return err
}

func (s *countingSink) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.conns.Go(func() {
			defer c.Close()
			s.session(c)
		})
	}
}

// maxSinkLine bounds one command line; maxSinkMessage one message.
const (
	maxSinkLine    = 4096
	maxSinkMessage = 64 << 20
)

func (s *countingSink) session(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 4<<10)
	reply := func(line string) bool {
		w.WriteString(line)
		w.WriteString("\r\n")
		// Flush only when the client is waiting: nothing more it sent
		// is buffered.
		if r.Buffered() == 0 {
			return w.Flush() == nil
		}
		return true
	}
	if !reply("220 sink.bench ESMTP counting sink") {
		return
	}
	var data bytes.Buffer
	rcpts := 0
	for {
		line, err := readSinkLine(r)
		if err != nil {
			return
		}
		verb := strings.ToUpper(line)
		if i := strings.IndexAny(verb, " :"); i >= 0 {
			verb = verb[:i]
		}
		ok := true
		switch verb {
		case "EHLO":
			ok = reply("250-sink.bench") && reply("250-PIPELINING") && reply("250-8BITMIME") && reply("250 SIZE "+strconv.Itoa(maxSinkMessage))
		case "HELO":
			ok = reply("250 sink.bench")
		case "MAIL":
			rcpts = 0
			ok = reply("250 2.1.0 ok")
		case "RCPT":
			rcpts++
			ok = reply("250 2.1.5 ok")
		case "DATA":
			if rcpts == 0 {
				ok = reply("554 5.5.1 no valid recipients")
				break
			}
			if !reply("354 go ahead") {
				return
			}
			data.Reset()
			if err := readSinkData(r, &data); err != nil {
				if errors.Is(err, errSinkTooBig) {
					ok = reply("552 5.3.4 message too big")
					break
				}
				return
			}
			s.count(data.Bytes())
			rcpts = 0
			ok = reply("250 2.0.0 ok")
		case "RSET":
			rcpts = 0
			ok = reply("250 2.0.0 ok")
		case "NOOP":
			ok = reply("250 2.0.0 ok")
		case "XCOUNT":
			n := s.counts()
			ok = reply(fmt.Sprintf("250 %d %d %d %d", n.Messages, n.Distinct, n.Bytes, n.Signed))
		case "QUIT":
			reply("221 2.0.0 bye")
			w.Flush()
			return
		default:
			ok = reply("502 5.5.2 command not implemented")
		}
		if !ok {
			return
		}
	}
}

var errSinkTooBig = errors.New("message too big")

func readSinkLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxSinkLine {
		return "", errors.New("line too long")
	}
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}

// readSinkData reads a DATA section up to its lone dot, undoing
// dot-stuffing (RFC 5321 §4.5.2), into buf.
func readSinkData(r *bufio.Reader, buf *bytes.Buffer) error {
	tooBig := false
	for {
		line, err := r.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
		if errors.Is(err, bufio.ErrBufferFull) { // a long line: keep it whole
			if buf.Len()+len(line) > maxSinkMessage {
				tooBig = true
			} else {
				buf.Write(line)
			}
			continue
		}
		if len(line) == 3 && line[0] == '.' && line[1] == '\r' || len(line) == 2 && line[0] == '.' {
			if tooBig {
				return errSinkTooBig
			}
			return nil
		}
		if line[0] == '.' {
			line = line[1:]
		}
		if buf.Len()+len(line) > maxSinkMessage {
			tooBig = true
			continue
		}
		buf.Write(line)
	}
}

// count records one received message: its size, whether it is
// DKIM-signed, and its Message-ID to tell repeats apart.
func (s *countingSink) count(msg []byte) {
	id, signed := sinkHeaders(msg)
	s.bytes.Add(int64(len(msg)))
	if signed {
		s.signed.Add(1)
	}
	s.mu.Lock()
	if id == "" {
		s.distinct++
	} else if _, dup := s.seen[id]; !dup {
		s.seen[id] = struct{}{}
		s.distinct++
	}
	s.mu.Unlock()
	now := time.Now().UnixNano()
	s.first.CompareAndSwap(0, now)
	s.last.Store(now)
	n := s.messages.Add(1)
	if s.onCount != nil {
		s.onCount(n)
	}
}

// sinkHeaders reads the Message-ID and whether a DKIM-Signature is
// present from the header section of msg.
func sinkHeaders(msg []byte) (id string, signed bool) {
	for len(msg) > 0 {
		i := bytes.IndexByte(msg, '\n')
		var line []byte
		if i < 0 {
			line, msg = msg, nil
		} else {
			line, msg = msg[:i], msg[i+1:]
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break // end of the header section
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch {
		case bytes.EqualFold(name, []byte("Message-Id")):
			id = strings.TrimSpace(string(value))
			if id == "" && len(msg) > 0 && (msg[0] == ' ' || msg[0] == '\t') { // folded onto the next line
				if j := bytes.IndexByte(msg, '\n'); j >= 0 {
					id = strings.TrimSpace(string(msg[:j]))
				}
			}
		case bytes.EqualFold(name, []byte("DKIM-Signature")):
			signed = true
		}
	}
	return id, signed
}

// sinkCount asks a running sink for its counts over SMTP (XCOUNT).
func sinkCount(addr string) (sinkCounts, error) {
	var n sinkCounts
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return n, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		return n, err
	}
	if _, err := io.WriteString(c, "XCOUNT\r\nQUIT\r\n"); err != nil {
		return n, err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return n, err
	}
	if _, err := fmt.Sscanf(line, "250 %d %d %d %d", &n.Messages, &n.Distinct, &n.Bytes, &n.Signed); err != nil {
		return n, fmt.Errorf("%s is not a counting sink (mailbolt bench sink): it answered XCOUNT with %q", addr, strings.TrimSpace(line))
	}
	return n, nil
}

type sinkConfig struct {
	addr      string
	expect    int64
	interval  time.Duration
	serverPID int
}

func newBenchSinkCommand() *cobra.Command {
	var cfg sinkConfig
	cmd := &cobra.Command{
		Use:   "sink",
		Short: "Run a standalone counting SMTP sink for benchmarks from outside the process",
		Long: `sink accepts every message over SMTP (with PIPELINING, answering a
pipelined group in one write) and counts them, printing the running count
every --interval while messages arrive. Point a server's --relay at it,
and mailbolt bench --sink at it to follow deliveries.

With --expect N it exits once N messages arrived, after printing the rate
from the first to the N-th; with --server-pid it also prints that
process's CPU time per message over the same window (its children's
included: give Postfix's master process).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.expect < 0 || cfg.interval <= 0 {
				return errors.New("--expect must be 0 or more and --interval positive")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runSink(ctx, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:2526", "address to listen on")
	f.Int64Var(&cfg.expect, "expect", 0, "exit after this many messages, printing their rate (0: run until interrupted)")
	f.DurationVar(&cfg.interval, "interval", 5*time.Second, "how often to print the count while messages arrive")
	f.IntVar(&cfg.serverPID, "server-pid", 0, "with --expect: report this process's CPU time (children included) per message")
	return cmd
}

func runSink(ctx context.Context, cfg sinkConfig, out io.Writer) error {
	s, err := startSink(cfg.addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	defer s.Close()
	// The CPU window opens at the first message and closes at the
	// expected one.
	var cpuFirst, cpuLast atomic.Int64
	done := make(chan struct{})
	var doneOnce sync.Once
	s.onCount = func(n int64) {
		if cfg.serverPID > 0 && n == 1 {
			if d, err := procCPU(cfg.serverPID); err == nil {
				cpuFirst.Store(int64(d))
			}
		}
		if cfg.expect > 0 && n >= cfg.expect {
			doneOnce.Do(func() {
				if cfg.serverPID > 0 {
					if d, err := procCPU(cfg.serverPID); err == nil {
						cpuLast.Store(int64(d))
					}
				}
				close(done)
			})
		}
	}
	fmt.Fprintf(out, "counting SMTP sink listening on %s\n", s.Addr())
	tick := time.NewTicker(cfg.interval)
	defer tick.Stop()
	var shown int64 = -1
	show := func() {
		n := s.counts()
		if n.Messages == shown {
			return
		}
		rate := ""
		if first, last := s.first.Load(), s.last.Load(); n.Messages > 1 && last > first {
			rate = fmt.Sprintf(", %.0f/s from the first to the latest", float64(n.Messages-1)/time.Duration(last-first).Seconds())
		}
		fmt.Fprintf(out, "%s messages (%s distinct, %s DKIM-signed, %d bytes)%s\n", formatCount(n.Messages),
			formatCount(n.Distinct), formatCount(n.Signed), n.Bytes, rate)
		shown = n.Messages
	}
	for {
		select {
		case <-ctx.Done():
			show()
			return nil
		case <-tick.C:
			show()
		case <-done:
			show()
			n := s.counts()
			secs := time.Duration(s.last.Load() - s.first.Load()).Seconds()
			if secs > 0 {
				fmt.Fprintf(out, "received %d messages in %.2f s: %.0f/s\n", n.Messages, secs, float64(n.Messages-1)/secs)
			}
			if cfg.serverPID > 0 && cpuLast.Load() > 0 {
				cpu := time.Duration(cpuLast.Load() - cpuFirst.Load())
				fmt.Fprintf(out, "server (pid %d) CPU %.2f s over that window: %.3f ms per message\n", cfg.serverPID,
					cpu.Seconds(), float64(cpu.Microseconds())/1000/float64(max(n.Messages-1, 1)))
			}
			return nil
		}
	}
}
