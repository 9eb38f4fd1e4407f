package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mailbolt/app"
	"mailbolt/mta/dkim"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/mta/smtptest"
	"mailbolt/storage"
)

// testCertificate writes a self-signed certificate for 127.0.0.1 and
// localhost into dir and returns the two PEM files and a pool that trusts it.
func testCertificate(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "submission test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// submissionEnv is a running service with both submission listeners, a
// verified sending domain bench.test, and a sink every live message is
// relayed to.
type submissionEnv struct {
	s                  *service
	sink               *smtptest.Server
	dom                storage.Domain
	key, testKey       string
	starttls, implicit string // the two listeners' addresses
	caFile             string
	pool               *x509.CertPool
	api                string // base URL of the HTTP API
}

func startSubmission(t *testing.T, sinkOpts smtptest.Options) *submissionEnv {
	t.Helper()
	env := &submissionEnv{}
	var err error
	if env.sink, err = smtptest.Start("127.0.0.1:0", sinkOpts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.sink.Close() })
	zone := dnstest.Start(t)
	dir := t.TempDir()
	var keyFile string
	env.caFile, keyFile, env.pool = testCertificate(t, t.TempDir())

	cfg := defaultServeConfig()
	cfg.dataDir, cfg.httpAddr, cfg.smtpAddr = dir, "127.0.0.1:0", "127.0.0.1:0"
	cfg.submissionAddr, cfg.submissionsAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.tlsCert, cfg.tlsKey = env.caFile, keyFile
	cfg.hostname, cfg.relay, cfg.dnsServer = "mx.mailbolt.test", env.sink.Addr, zone.Addr
	cfg.metricsAddr = ""
	cfg.smtpRetryBase = time.Hour // a deferral stays deferred: nothing here expects one
	s, err := startService(cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	env.s = s
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("service: %v", err)
		}
		if n := s.app.Panics(); n != 0 {
			t.Errorf("%d panics in workers", n)
		}
	})
	env.api = "http://" + s.httpLn.Addr().String()
	for _, l := range s.submission {
		if l.name == "--submission-addr" {
			env.starttls = l.ln.Addr().String()
		} else {
			env.implicit = l.ln.Addr().String()
		}
	}
	var key string
	if key, env.dom, err = benchSetup(context.Background(), s.app, zone, dkim.AlgEd25519); err != nil {
		t.Fatal(err)
	}
	env.key = key
	p, err := s.app.Authenticate(key)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := s.app.CreateKey(p, app.KeyInput{Name: "sandbox", Mode: app.ModeTest})
	if err != nil {
		t.Fatal(err)
	}
	env.testKey = tk.Secret
	return env
}

// get calls the HTTP API with key and decodes the answer into out.
func (env *submissionEnv) get(t *testing.T, key, path string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.api+path, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

// messageView is what the tests read of GET /v1/messages/{id}.
type messageView struct {
	ID         string            `json:"id"`
	Status     string            `json:"status"`
	Mode       string            `json:"mode"`
	Subject    string            `json:"subject"`
	Tags       []string          `json:"tags"`
	CampaignID string            `json:"campaign_id"`
	Metadata   map[string]string `json:"metadata"`
	Recipients []struct {
		Email  string `json:"email"`
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"recipients"`
	Content struct {
		HTML        string `json:"html"`
		Text        string `json:"text"`
		Attachments []struct {
			Filename string `json:"filename"`
		} `json:"attachments"`
	} `json:"content"`
}

// waitStatus waits until message id has left queued and sending.
func (env *submissionEnv) waitStatus(t *testing.T, key, id string) messageView {
	t.Helper()
	var m messageView
	for range 500 {
		env.get(t, key, "/v1/messages/"+id, &m)
		if m.Status != app.StatusQueued && m.Status != app.StatusSending {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("message %s is still %s", id, m.Status)
	return m
}

// delivered is the message the sink took for rcpt.
func (env *submissionEnv) delivered(t *testing.T, rcpt string) smtptest.Message {
	t.Helper()
	for range 500 {
		for _, m := range env.sink.Messages() {
			for _, to := range m.To {
				if to == rcpt {
					return m
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("nothing reached the sink for %s", rcpt)
	return smtptest.Message{}
}

// body is what follows the header of a message.
func body(data []byte) []byte {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	_, b, _ := bytes.Cut(data, []byte("\n\n"))
	return b
}

// idFromReply takes the message id out of "250 2.0.0 OK: queued as <id>".
func idFromReply(t *testing.T, reply string) string {
	t.Helper()
	_, id, ok := strings.Cut(reply, "queued as ")
	if !ok {
		t.Fatalf("reply %q carries no message id", reply)
	}
	return strings.Fields(id)[0]
}

const pythonSubmit = `
import base64, json, smtplib, ssl, sys
from email.message import EmailMessage
host, port, cafile, key, mode, msgid = sys.argv[1:7]
msg = EmailMessage()
msg['From'] = 'App <app@bench.test>'
msg['To'] = 'ann-' + mode + '@sink.test'
msg['Bcc'] = 'hidden-' + mode + '@sink.test'
msg['Subject'] = 'Hello from smtplib'
msg['Message-ID'] = msgid
msg['X-Mailbolt-Tags'] = 'welcome, py'
msg['X-Mailbolt-Campaign'] = 'spring'
msg['X-Mailbolt-Metadata'] = '{"user": "42"}'
msg.set_content('plain body\n')
msg.add_alternative('<p>html <a href="https://example.com/x">link</a></p>\n', subtype='html')
msg.add_attachment(bytes(range(256)), maintype='application', subtype='octet-stream', filename='a.bin')
raw = msg.as_bytes(policy=msg.policy.clone(linesep='\r\n'))
out = {'raw': base64.b64encode(raw).decode()}
ctx = ssl.create_default_context(cafile=cafile)
s = smtplib.SMTP(host, int(port)) if mode == 'starttls' else smtplib.SMTP_SSL(host, int(port), context=ctx)
if mode == 'starttls':
    s.ehlo()
    out['before_tls'] = s.has_extn('auth')
    s.starttls(context=ctx)
s.ehlo()
out['ehlo'] = s.ehlo_resp.decode()
try:
    s.login('apikey', 'svc_live_' + 'x' * 40)
except smtplib.SMTPAuthenticationError as e:
    out['wrong'] = [e.smtp_code, e.smtp_error.decode()]
s.login('apikey', key)
s.mail('anything@example.org')
s.rcpt('ann-' + mode + '@sink.test')
s.rcpt('hidden-' + mode + '@sink.test')
code, resp = s.data(raw)
out['data'] = [code, resp.decode()]
s.quit()
print(json.dumps(out))
`

// TestSubmissionPython: Python's smtplib over STARTTLS and over implicit
// TLS. A wrong key is 535 5.7.8; the message arrives at the sink DKIM-signed
// with its MIME as submitted (tracking is off), X-Mailbolt-* fields gone,
// also to the Bcc recipient of the envelope; GET /v1/messages shows it
// with its tags, campaign, metadata and events.
func TestSubmissionPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	env := startSubmission(t, smtptest.Options{})
	script := filepath.Join(t.TempDir(), "submit.py")
	if err := os.WriteFile(script, []byte(pythonSubmit), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"starttls", "implicit"} {
		t.Run(mode, func(t *testing.T) {
			addr := env.starttls
			if mode == "implicit" {
				addr = env.implicit
			}
			host, port, _ := net.SplitHostPort(addr)
			msgid := "<py-" + mode + "@bench.test>"
			ann, hidden := "ann-"+mode+"@sink.test", "hidden-"+mode+"@sink.test"
			out, err := exec.Command("python3", script, host, port, env.caFile, env.key, mode, msgid).CombinedOutput()
			if err != nil {
				t.Fatalf("smtplib: %v\n%s", err, out)
			}
			var res struct {
				Raw       []byte
				BeforeTLS *bool  `json:"before_tls"`
				EHLO      string `json:"ehlo"`
				Wrong     []any
				Data      []any
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if res.BeforeTLS != nil && *res.BeforeTLS {
				t.Error("AUTH was offered before STARTTLS")
			}
			for _, ext := range []string{"AUTH PLAIN LOGIN", "8BITMIME", "SMTPUTF8", "PIPELINING", "ENHANCEDSTATUSCODES", "SIZE 10485760"} {
				if !strings.Contains(res.EHLO, ext) {
					t.Errorf("EHLO reply lacks %s:\n%s", ext, res.EHLO)
				}
			}
			if len(res.Wrong) != 2 || res.Wrong[0].(float64) != 535 || !strings.HasPrefix(res.Wrong[1].(string), "5.7.8") {
				t.Errorf("a wrong key: %v, want 535 5.7.8", res.Wrong)
			}
			if res.Data[0].(float64) != 250 {
				t.Fatalf("DATA: %v", res.Data)
			}
			id := idFromReply(t, res.Data[1].(string))

			var m messageView
			env.get(t, env.key, "/v1/messages/"+id, &m)
			if m.Subject != "Hello from smtplib" || strings.Join(m.Tags, ",") != "welcome,py" || m.CampaignID != "spring" ||
				m.Metadata["user"] != "42" || m.Mode != "live" {
				t.Errorf("the message as listed: %+v", m)
			}
			kinds := map[string]string{}
			for _, r := range m.Recipients {
				kinds[r.Email] = r.Type
			}
			if kinds[ann] != "to" || kinds[hidden] != "bcc" || len(kinds) != 2 {
				t.Errorf("recipients %v: want ann as to, hidden as bcc", kinds)
			}
			if !strings.Contains(m.Content.HTML, "example.com/x") || m.Content.Text != "plain body\n" ||
				len(m.Content.Attachments) != 1 || m.Content.Attachments[0].Filename != "a.bin" {
				t.Errorf("content: %+v", m.Content)
			}

			for _, rcpt := range []string{ann, hidden} {
				got := env.delivered(t, rcpt)
				if ok, why := verifyDKIM(got.Data, env.dom); !ok {
					t.Errorf("%s: DKIM does not verify: %s", rcpt, why)
				}
				if !bytes.Equal(body(got.Data), body(res.Raw)) {
					t.Errorf("%s: the body changed on the way:\n%q\nwant\n%q", rcpt, body(got.Data), body(res.Raw))
				}
				if bytes.Contains(got.Data, []byte("X-Mailbolt-")) || bytes.Contains(got.Data, []byte("\nBcc:")) {
					t.Errorf("%s: X-Mailbolt fields or Bcc left in:\n%s", rcpt, got.Data)
				}
				if !bytes.Contains(got.Data, []byte("Message-ID: "+msgid)) {
					t.Errorf("%s: the submitted Message-ID is not kept:\n%s", rcpt, got.Data)
				}
				if !strings.HasPrefix(got.From, "b+") || !strings.HasSuffix(got.From, "@bounces.bench.test") {
					t.Errorf("%s: MAIL FROM %q is not the bounce address", rcpt, got.From)
				}
			}
			m = env.waitStatus(t, env.key, id)
			var events struct {
				Data []struct {
					Event string `json:"event"`
				} `json:"data"`
			}
			env.get(t, env.key, "/v1/events?message_id="+id, &events)
			names := map[string]int{}
			for _, e := range events.Data {
				names[e.Event]++
			}
			if m.Status != app.StatusDelivered || names["message.sent"] != 1 || names["message.delivered"] != 2 {
				t.Errorf("status %s, events %v", m.Status, names)
			}
		})
	}
}

// goClient logs in with Go's net/smtp, over STARTTLS or implicit TLS.
func (env *submissionEnv) goClient(t *testing.T, implicit bool, key string) *smtp.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: env.pool, ServerName: "127.0.0.1"}
	var c *smtp.Client
	var err error
	if implicit {
		conn, derr := tls.Dial("tcp", env.implicit, tc)
		if derr != nil {
			t.Fatal(derr)
		}
		c, err = smtp.NewClient(conn, "127.0.0.1")
	} else {
		if c, err = smtp.Dial(env.starttls); err == nil {
			err = c.StartTLS(tc)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Auth(smtp.PlainAuth("", "apikey", key, "127.0.0.1")); err != nil {
		t.Fatalf("AUTH: %v", err)
	}
	return c
}

// errText is an SMTP error as "code text".
func errText(err error) string {
	var te *textproto.Error
	if errors.As(err, &te) {
		return fmt.Sprintf("%d %s", te.Code, te.Msg)
	}
	return err.Error()
}

// send runs one transaction and returns the reply that ended it: the
// first refusal, or the reply to the message's final dot.
func send(c *smtp.Client, from string, rcpts []string, data string) string {
	if err := c.Mail(from); err != nil {
		c.Reset()
		return errText(err)
	}
	for _, r := range rcpts {
		if err := c.Rcpt(r); err != nil {
			c.Reset()
			return errText(err)
		}
	}
	id, err := c.Text.Cmd("DATA")
	if err != nil {
		return errText(err)
	}
	c.Text.StartResponse(id)
	_, _, err = c.Text.ReadResponse(354)
	c.Text.EndResponse(id)
	if err != nil {
		return errText(err)
	}
	w := c.Text.DotWriter()
	io.WriteString(w, data)
	w.Close()
	code, msg, err := c.Text.ReadResponse(250)
	if err != nil {
		return errText(err)
	}
	return fmt.Sprintf("%d %s", code, msg)
}

// mime is a small message from from to to with a Message-ID.
func mime(from, to, msgid, text string) string {
	return "From: " + from + "\r\nTo: " + to + "\r\nSubject: go test\r\nMessage-ID: " + msgid +
		"\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text + "\r\n"
}

// TestSubmissionGo: Go's net/smtp over both listeners, through the
// refusals a submission can meet.
func TestSubmissionGo(t *testing.T) {
	env := startSubmission(t, smtptest.Options{})
	for _, implicit := range []bool{false, true} {
		name := map[bool]string{false: "starttls", true: "implicit"}[implicit]
		t.Run(name, func(t *testing.T) {
			c := env.goClient(t, implicit, env.key)
			to := "go-" + name + "@sink.test"

			// An unverified From domain is refused for a live key.
			got := send(c, "x@elsewhere.test", []string{to}, mime("x@unverified.test", to, "<u-"+name+"@unverified.test>", "hi"))
			if !strings.HasPrefix(got, "550 5.7.1") || !strings.Contains(got, "unverified.test") {
				t.Errorf("unverified From: %q, want 550 5.7.1 naming the domain", got)
			}
			// At most 50 recipients.
			rcpts := make([]string, 51)
			for i := range rcpts {
				rcpts[i] = fmt.Sprintf("r%d-%s@sink.test", i, name)
			}
			if got := send(c, "x@bench.test", rcpts, ""); !strings.HasPrefix(got, "452 4.5.3") {
				t.Errorf("51 recipients: %q, want 452 4.5.3", got)
			}
			// A recipient that is no address.
			if got := send(c, "x@bench.test", []string{"not an address"}, ""); !strings.HasPrefix(got, "5") {
				t.Errorf("a bad recipient: %q", got)
			}

			// The same Message-ID, envelope and bytes twice: one message.
			msgid := "<dup-" + name + "@bench.test>"
			data := mime("App <app@bench.test>", to, msgid, "once only")
			first := send(c, "x@bench.test", []string{to}, data)
			if !strings.HasPrefix(first, "250 2.0.0") {
				t.Fatalf("first submission: %q", first)
			}
			again := send(c, "x@bench.test", []string{to}, data)
			if idFromReply(t, again) != idFromReply(t, first) {
				t.Errorf("a resubmission got %q, want the first id (%q)", again, first)
			}
			other := send(c, "x@bench.test", []string{to}, mime("App <app@bench.test>", to, msgid, "something else"))
			if !strings.HasPrefix(other, "550 5.7.0") || !strings.Contains(other, msgid) {
				t.Errorf("the same Message-ID with another message: %q, want 550 5.7.0 naming it", other)
			}
			env.waitStatus(t, env.key, idFromReply(t, first))
			n := 0
			for _, m := range env.sink.Messages() {
				if bytes.Contains(m.Data, []byte(msgid)) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the sink got the message %d times, want once", n)
			}
			var list struct {
				Data []messageView `json:"data"`
			}
			env.get(t, env.key, "/v1/messages?recipient="+to, &list)
			if len(list.Data) != 1 {
				t.Errorf("GET /v1/messages lists %d messages to %s, want 1", len(list.Data), to)
			}
			c.Quit()
		})
	}

	t.Run("sandbox", func(t *testing.T) {
		c := env.goClient(t, false, env.testKey)
		got := send(c, "x@anywhere.test", []string{"bounce@sink.test"}, mime("me@unverified.test", "bounce@sink.test", "<sb@unverified.test>", "sandbox"))
		id := idFromReply(t, got)
		m := env.waitStatus(t, env.testKey, id)
		if m.Mode != "test" || m.Status != app.StatusBounced {
			t.Errorf("sandbox message: %+v, want a simulated hard bounce", m)
		}
		for _, sm := range env.sink.Messages() {
			if bytes.Contains(sm.Data, []byte("<sb@unverified.test>")) {
				t.Error("a test key's message reached the sink")
			}
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		acct, err := env.s.app.CreateAccount(app.AccountInput{Name: "slow", Plan: "free", RateLimit: 1})
		if err != nil {
			t.Fatal(err)
		}
		op, _ := env.s.app.OperatorIn(acct.ID)
		k, err := env.s.app.CreateKey(op, app.KeyInput{Name: "slow", Scopes: []string{app.ScopeMessagesWrite}, Mode: app.ModeTest})
		if err != nil {
			t.Fatal(err)
		}
		c := env.goClient(t, false, k.Secret)
		// One message per second: of two MAIL commands in a row, one is
		// refused (both could pass only a second apart).
		limited := false
		for range 5 {
			err := c.Mail("x@bench.test")
			c.Reset()
			if err != nil {
				if !strings.HasPrefix(errText(err), "451 4.7.0") {
					t.Fatalf("over the rate limit: %v, want 451 4.7.0", err)
				}
				limited = true
				break
			}
		}
		if !limited {
			t.Fatal("five MAIL commands in a row at one message per second were all taken")
		}
		// The session stays open and usable.
		if err := c.Noop(); err != nil {
			t.Fatalf("the session after a 451: %v", err)
		}
	})

	t.Run("no scope", func(t *testing.T) {
		p, _ := env.s.app.Authenticate(env.key)
		k, err := env.s.app.CreateKey(p, app.KeyInput{Name: "reader", Scopes: []string{app.ScopeMessagesRead}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := smtp.Dial(env.starttls)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.StartTLS(&tls.Config{RootCAs: env.pool, ServerName: "127.0.0.1"})
		if err := c.Auth(smtp.PlainAuth("", "apikey", k.Secret, "127.0.0.1")); err == nil || !strings.Contains(err.Error(), "messages:write") {
			t.Errorf("a key without messages:write: %v", err)
		}
	})

	t.Run("no AUTH before TLS", func(t *testing.T) {
		c, err := smtp.Dial(env.starttls)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Hello("client.test"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := c.Extension("AUTH"); ok {
			t.Error("AUTH offered before STARTTLS")
		}
		if err := c.Mail("x@bench.test"); err == nil || !strings.HasPrefix(errText(err), "530 5.7.0") {
			t.Errorf("MAIL before TLS: %v, want 530 5.7.0", err)
		}
	})
}

// TestSubmissionSwaks: swaks, the SMTP test tool of many admins, over
// STARTTLS and TLS on connect, with AUTH LOGIN and AUTH PLAIN.
func TestSubmissionSwaks(t *testing.T) {
	if _, err := exec.LookPath("swaks"); err != nil {
		t.Skip("swaks is not installed (Debian package swaks; .ci/run installs it)")
	}
	env := startSubmission(t, smtptest.Options{})
	for _, c := range []struct {
		name, addr, tls, auth string
	}{
		{"starttls", env.starttls, "--tls", "LOGIN"},
		{"implicit", env.implicit, "--tls-on-connect", "PLAIN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			to := "swaks-" + c.name + "@sink.test"
			out, err := exec.Command("swaks", "--server", c.addr, c.tls, "--auth", c.auth, "--auth-user", "apikey",
				"--auth-password", env.key, "--from", "app@bench.test", "--to", to,
				"--header", "Subject: swaks "+c.name, "--header", "X-Mailbolt-Tags: swaks",
				"--header", "X-Mailbolt-Stream: broadcast", "--body", "sent by swaks").CombinedOutput()
			if err != nil {
				t.Fatalf("swaks: %v\n%s", err, out)
			}
			var reply string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "queued as") {
					reply = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "<-~"))
				}
			}
			if !strings.HasPrefix(reply, "250 2.0.0") {
				t.Fatalf("no 250 with a message id in:\n%s", out)
			}
			id := idFromReply(t, reply)
			got := env.delivered(t, to)
			if ok, why := verifyDKIM(got.Data, env.dom); !ok {
				t.Errorf("DKIM: %s", why)
			}
			// The broadcast stream adds the one-click unsubscribe fields.
			if !bytes.Contains(got.Data, []byte("List-Unsubscribe-Post: List-Unsubscribe=One-Click")) {
				t.Errorf("X-Mailbolt-Stream: broadcast gave no List-Unsubscribe:\n%s", got.Data)
			}
			var m struct {
				messageView
				Stream string `json:"stream"`
			}
			env.get(t, env.key, "/v1/messages/"+id, &m)
			if m.Stream != "broadcast" || strings.Join(m.Tags, ",") != "swaks" || m.Subject != "swaks "+c.name {
				t.Errorf("as listed: %+v", m)
			}
		})
	}
}

// TestSubmissionWire: what delivery does with a submitted message's bytes.
// The next hop here offers neither 8BITMIME nor SMTPUTF8. An 8-bit body
// arrives converted to 7-bit (quoted-printable) and signed after the
// conversion (RFC 6152); with tracking on, the HTML part is rewritten in
// place while the attachment's bytes are kept; a UTF-8 header bounces
// with 5.6.7 (RFC 6531).
func TestSubmissionWire(t *testing.T) {
	env := startSubmission(t, smtptest.Options{No8BitMIME: true})
	p, _ := env.s.app.Authenticate(env.key)
	on := true
	if _, err := env.s.app.UpdateAccount(p.Account.ID, app.AccountUpdate{TrackOpens: &on, TrackClicks: &on}); err != nil {
		t.Fatal(err)
	}
	c := env.goClient(t, false, env.key)

	attachment := "Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n" +
		"Content-Disposition: attachment; filename=\"x.bin\"\r\n\r\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYX\r\n"
	data := "From: App <app@bench.test>\r\nTo: eight@sink.test\r\nSubject: 8bit\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\npreamble\r\n--b1\r\n" +
		"Content-Type: multipart/alternative; boundary=\"b2\"\r\n\r\n--b2\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln\r\n--b2\r\n" +
		"Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" +
		"<html><body><p>Grüße <a href=\"https://example.com/page\">hier</a></p></body></html>\r\n--b2--\r\n" +
		"--b1\r\n" + attachment + "--b1--\r\n"
	id := idFromReply(t, send(c, "x@bench.test", []string{"eight@sink.test"}, data))
	got := env.delivered(t, "eight@sink.test")
	if message8bit(got.Data) {
		t.Errorf("8-bit bytes reached a hop without 8BITMIME:\n%s", got.Data)
	}
	if ok, why := verifyDKIM(got.Data, env.dom); !ok {
		t.Errorf("DKIM of the converted message: %s", why)
	}
	for _, want := range []string{"Content-Transfer-Encoding: quoted-printable", "Gr=C3=BC=C3=9Fe aus K=C3=B6ln",
		"/t/c/", "/t/o/", attachment, "preamble\r\n"} {
		if !bytes.Contains(got.Data, []byte(want)) {
			t.Errorf("the delivered message lacks %q:\n%s", want, got.Data)
		}
	}
	if bytes.Contains(got.Data, []byte("https://example.com/page")) {
		t.Errorf("the link was not rewritten for click tracking:\n%s", got.Data)
	}
	var m messageView
	env.get(t, env.key, "/v1/messages/"+id, &m)
	if m.Content.Text != "Grüße aus Köln" {
		t.Errorf("content text %q", m.Content.Text)
	}

	// A header in UTF-8 needs SMTPUTF8 all the way.
	utf := "From: App <app@bench.test>\r\nTo: utf@sink.test\r\nSubject: Grüße\r\n\r\nhi\r\n"
	id = idFromReply(t, send(c, "x@bench.test", []string{"utf@sink.test"}, utf))
	var b struct {
		Status     string `json:"status"`
		Recipients []struct {
			BounceType   string `json:"bounce_type"`
			LastResponse struct {
				Enhanced string `json:"enhanced_code"`
			} `json:"last_response"`
		} `json:"recipients"`
	}
	env.waitStatus(t, env.key, id)
	env.get(t, env.key, "/v1/messages/"+id, &b)
	if b.Status != app.StatusBounced || b.Recipients[0].LastResponse.Enhanced != "5.6.7" {
		var raw map[string]any
		env.get(t, env.key, "/v1/messages/"+id, &raw)
		t.Errorf("a UTF-8 header to a hop without SMTPUTF8: %+v, want bounced 5.6.7", raw)
	}
	for _, sm := range env.sink.Messages() {
		if slicesContains(sm.To, "utf@sink.test") {
			t.Error("the UTF-8 message reached a hop without SMTPUTF8")
		}
	}
}

func message8bit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestSubmissionFlags: a submission listener needs a certificate (only
// --submission-addr may go without, with --dev) and a host:port.
func TestSubmissionFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--submission-addr", "127.0.0.1:0"}, "--submission-addr needs a certificate"},
		{[]string{"--submissions-addr", "127.0.0.1:0", "--dev"}, "--submissions-addr speaks TLS"},
		{[]string{"--submission-addr", "587", "--dev"}, "is not host:port"},
	} {
		_, err := run(t, append([]string{"serve", "--data-dir", t.TempDir()}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
