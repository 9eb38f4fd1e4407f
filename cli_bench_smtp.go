package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

// `mailbolt bench --via smtp` measures the SMTP submission path: each
// client holds one session (logged in once, as an app's mail library
// does) and submits its messages one transaction after another, MAIL,
// RCPT and DATA pipelined (RFC 2920), as a good client does. Accepted
// means the 250 after the final dot, which Mailbolt sends only once the
// message is committed. Each message carries its own Message-ID, as the
// mail libraries of frameworks add one, so the resubmission record is
// written too.

// benchCertificate writes a self-signed certificate for 127.0.0.1 into
// dir, for the STARTTLS runs, and returns the files and a pool trusting it.
func benchCertificate(dir string) (certFile, keyFile string, pool *x509.CertPool, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailbolt bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "bench-cert.pem"), filepath.Join(dir, "bench-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return "", "", nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool, nil
}

// smtpSession is one bench client's logged-in session.
type smtpSession struct {
	conn net.Conn
	text *textproto.Conn
}

// dialSubmission connects, says EHLO, upgrades with STARTTLS when tc is
// set, and logs in with AUTH PLAIN.
func dialSubmission(addr, key string, tc *tls.Config) (*smtpSession, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	s := &smtpSession{conn: conn, text: textproto.NewConn(conn)}
	fail := func(err error) (*smtpSession, error) { conn.Close(); return nil, err }
	if _, _, err := s.text.ReadResponse(220); err != nil {
		return fail(err)
	}
	if err := s.cmd(250, "EHLO bench.local"); err != nil {
		return fail(err)
	}
	if tc != nil {
		if err := s.cmd(220, "STARTTLS"); err != nil {
			return fail(err)
		}
		tlsConn := tls.Client(conn, tc)
		if err := tlsConn.Handshake(); err != nil {
			return fail(err)
		}
		s.conn, s.text = tlsConn, textproto.NewConn(tlsConn)
		if err := s.cmd(250, "EHLO bench.local"); err != nil {
			return fail(err)
		}
	}
	auth := base64.StdEncoding.EncodeToString([]byte("\x00apikey\x00" + key))
	if err := s.cmd(235, "AUTH PLAIN "+auth); err != nil {
		return fail(err)
	}
	return s, nil
}

func (s *smtpSession) cmd(code int, line string) error {
	if err := s.text.PrintfLine("%s", line); err != nil {
		return err
	}
	_, _, err := s.text.ReadResponse(code)
	return err
}

// submit sends one message in two writes (MAIL, RCPT and DATA together,
// then the content and its final dot) and returns the last reply's text.
func (s *smtpSession) submit(w *bufio.Writer, from, to string, data []byte) (string, error) {
	w.Reset(s.conn)
	fmt.Fprintf(w, "MAIL FROM:<%s>\r\nRCPT TO:<%s>\r\nDATA\r\n", from, to)
	if err := w.Flush(); err != nil {
		return "", err
	}
	var first error // every pipelined reply is read, the first refusal kept
	var firstMsg string
	for _, code := range []int{250, 250, 354} {
		if _, msg, err := s.text.ReadResponse(code); err != nil && first == nil {
			first, firstMsg = err, msg
		}
	}
	if first != nil {
		return firstMsg, first
	}
	w.Write(data) // dot-stuffed by the caller's message, which has no line starting with a dot
	w.WriteString(".\r\n")
	if err := w.Flush(); err != nil {
		return "", err
	}
	_, msg, err := s.text.ReadResponse(250)
	return msg, err
}

// smtpBenchMessage is message i, about size bytes with the headers, CRLF
// line endings, no line starting with a dot.
func smtpBenchMessage(i int, run, text string) []byte {
	n := strconv.Itoa(i)
	var b strings.Builder
	b.WriteString("From: Bench <bench@bench.test>\r\nTo: rcpt" + n + "@sink.bench.test\r\nSubject: bench message " + n +
		"\r\nMessage-ID: <bench-" + run + "-" + n + "@bench.test>\r\nDate: " + time.Now().UTC().Format(time.RFC1123Z) +
		"\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n")
	b.WriteString(strings.ReplaceAll(text, "\n", "\r\n"))
	b.WriteString("\r\n")
	return []byte(b.String())
}

// sendAllSMTP submits cfg.messages messages from cfg.concurrency SMTP
// sessions in this process until ctx ends; its results are sendAll's.
// Each accepted message is known to the tracker by its Message-ID.
func sendAllSMTP(ctx context.Context, cfg benchConfig, addr, key, alg string, tc *tls.Config, tr *tracker) ([]time.Duration, int, int, []string) {
	lat := make([]time.Duration, cfg.messages)
	_, failed, failures := submitAll(ctx, cfg, addr, key, alg, tc, func(run string, i int, d time.Duration, at time.Time) {
		lat[i] = d
		tr.accept("bench-"+run+"-"+strconv.Itoa(i), at)
	})
	out := lat[:0]
	for _, d := range lat {
		if d > 0 {
			out = append(out, d)
		}
	}
	return out, len(out), failed, failures
}

// submitAll submits cfg.messages messages from cfg.concurrency SMTP
// sessions until ctx ends, calling accepted for each 250 (from several
// goroutines), and returns the run's id (in every Message-ID), how many
// failed and the first few failures.
func submitAll(ctx context.Context, cfg benchConfig, addr, key, alg string, tc *tls.Config,
	accepted func(run string, i int, lat time.Duration, at time.Time)) (string, int, []string) {
	text := benchText(max(cfg.size-headerOverhead(alg)+30, 64))
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var (
		next     atomic.Int64
		failed   atomic.Int64
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	fail := func(s string) {
		failed.Add(1)
		mu.Lock()
		if len(failures) < 5 {
			failures = append(failures, s)
		}
		mu.Unlock()
	}
	for range cfg.concurrency {
		wg.Go(func() {
			var s *smtpSession
			w := bufio.NewWriterSize(nil, 4096)
			defer func() {
				if s != nil {
					s.text.PrintfLine("QUIT")
					s.conn.Close()
				}
			}()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= cfg.messages {
					return
				}
				if s == nil {
					var err error
					if s, err = dialSubmission(addr, key, tc); err != nil {
						fail("connect: " + err.Error())
						continue
					}
					stop := context.AfterFunc(ctx, func() { s.conn.Close() })
					defer stop()
				}
				data := smtpBenchMessage(i, run, text)
				t0 := time.Now()
				reply, err := s.submit(w, "bench@bench.test", "rcpt"+strconv.Itoa(i)+"@sink.bench.test", data)
				at := time.Now()
				if err != nil {
					var te *textproto.Error
					if !errors.As(err, &te) {
						s.conn.Close() // the session is out of step: start a new one
						s = nil
					}
					if ctx.Err() == nil {
						fail(err.Error())
					}
					continue
				}
				if !strings.Contains(reply, "queued as ") {
					fail("250 without a message id: " + reply)
					continue
				}
				accepted(run, i, at.Sub(t0), at)
			}
		})
	}
	wg.Wait()
	return run, int(failed.Load()), failures
}

// smtpClientReport is what `mailbolt bench-client` prints: per message
// index, the latency and the time of its 250 (0 for none).
type smtpClientReport struct {
	Run      string   `json:"run"`
	Latency  []int64  `json:"latency_ns"`
	At       []int64  `json:"at_unix_ns"`
	Failed   int      `json:"failed"`
	Failures []string `json:"failures"`
}

// newBenchClientCommand is the SMTP client of `bench --via smtp
// --client-process`, run by bench as a process of its own so that the
// server's CPU time is measured alone. Not for use by hand.
func newBenchClientCommand() *cobra.Command {
	var cfg benchConfig
	var addr, key, caFile, alg string
	cmd := &cobra.Command{
		Use:    "bench-client",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var tc *tls.Config
			if caFile != "" {
				pem, err := os.ReadFile(caFile)
				if err != nil {
					return err
				}
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(pem)
				tc = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
			}
			rep := runSMTPClients(cmd.Context(), cfg, addr, key, alg, tc)
			return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "", "submission address")
	f.StringVar(&key, "key", "", "API key")
	f.StringVar(&caFile, "ca", "", "certificate to trust for STARTTLS (none: no TLS)")
	f.StringVar(&alg, "alg", "", "DKIM algorithm (for the message size)")
	f.IntVar(&cfg.messages, "messages", 0, "")
	f.IntVar(&cfg.concurrency, "concurrency", 0, "")
	f.IntVar(&cfg.size, "size", 0, "")
	return cmd
}

// runSMTPClients submits cfg.messages messages from cfg.concurrency
// sessions and reports each one's latency and acceptance time.
func runSMTPClients(ctx context.Context, cfg benchConfig, addr, key, alg string, tc *tls.Config) smtpClientReport {
	rep := smtpClientReport{Latency: make([]int64, cfg.messages), At: make([]int64, cfg.messages)}
	rep.Run, rep.Failed, rep.Failures = submitAll(ctx, cfg, addr, key, alg, tc, func(_ string, i int, lat time.Duration, at time.Time) {
		rep.Latency[i], rep.At[i] = int64(lat), at.UnixNano() // each index is written by one goroutine
	})
	return rep
}

// sendViaClientProcess runs the SMTP clients as `mailbolt bench-client`
// and feeds what it reports to the tracker; its results are sendAll's.
func sendViaClientProcess(ctx context.Context, cfg benchConfig, addr, key, alg, caFile string, tr *tracker) ([]time.Duration, int, int, []string, time.Duration) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, cfg.messages, []string{err.Error()}, 0
	}
	args := []string{"bench-client", "--addr", addr, "--key", key, "--alg", alg, "--messages", strconv.Itoa(cfg.messages),
		"--concurrency", strconv.Itoa(cfg.concurrency), "--size", strconv.Itoa(cfg.size)}
	if caFile != "" {
		args = append(args, "--ca", caFile)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var clientCPU time.Duration
	if cmd.ProcessState != nil {
		clientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return nil, 0, cfg.messages, []string{fmt.Sprintf("bench-client: %v: %s", err, stderr.String())}, clientCPU
	}
	var rep smtpClientReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, 0, cfg.messages, []string{"bench-client report: " + err.Error()}, clientCPU
	}
	var lat []time.Duration
	for i, ns := range rep.Latency {
		if ns > 0 {
			lat = append(lat, time.Duration(ns))
			tr.accept("bench-"+rep.Run+"-"+strconv.Itoa(i), time.Unix(0, rep.At[i]))
		}
	}
	return lat, len(lat), rep.Failed, rep.Failures, clientCPU
}
