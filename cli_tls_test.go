package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"mailbolt/tlsconf/tlstest"
)

var (
	httpsListenRe = regexp.MustCompile(`listening on https://(\S+)`)
	plainHTTPRe   = regexp.MustCompile(`plain HTTP on http://(\S+):`)
	inboundRe     = regexp.MustCompile(`inbound SMTP \([^)]*\) on (\S+)`)
)

// tlsServer is one `mailbolt serve` process with HTTPS on.
type tlsServer struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	https, http    string // host:port
	smtp           string
	dataDir        string
	key            string
}

// tlsTestBinary builds mailbolt into the test's temporary directory (the
// build cache makes the second build of a run quick).
func tlsTestBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mailbolt")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// startTLSServer runs serve as its own process (SIGHUP goes to it, not
// to the test) with HTTPS on and waits until it listens.
func startTLSServer(t *testing.T, env []string, args ...string) *tlsServer {
	t.Helper()
	bin := tlsTestBinary(t)
	s := &tlsServer{stdout: &syncBuffer{}, stderr: &syncBuffer{}, dataDir: filepath.Join(t.TempDir(), "data")}
	s.cmd = exec.Command(bin, append([]string{"serve", "--data-dir", s.dataDir,
		"--http-addr", "127.0.0.1:0", "--https-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
		"--metrics-addr=", "--hostname", "mta.example.net"}, args...)...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("serve stdout:\n%s\nstderr:\n%s", s.stdout, s.stderr)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !inboundRe.MatchString(s.stdout.String()) {
		select {
		case <-exited:
			t.Fatalf("serve exited\nstdout:\n%s\nstderr:\n%s", s.stdout, s.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start\nstdout:\n%s\nstderr:\n%s", s.stdout, s.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := s.stdout.String()
	s.https = httpsListenRe.FindStringSubmatch(out)[1]
	s.http = plainHTTPRe.FindStringSubmatch(out)[1]
	s.smtp = inboundRe.FindStringSubmatch(out)[1]
	s.key = liveKeyRe.FindStringSubmatch(out)[1]
	return s
}

// noRedirects is a client that shows a redirect instead of following it.
func noRedirects(tc *tls.Config) *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: tc},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func call(t *testing.T, c *http.Client, method, url, key, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(data, &out)
	return resp, out
}

// serial is the serial number of the certificate a new TLS connection to
// addr is given.
func serial(t *testing.T, addr string, tc *tls.Config) int64 {
	t.Helper()
	c, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestServeHTTPSWithCertificateFiles runs serve with --tls-cert/--tls-key
// and checks the HTTPS API, what plain HTTP answers, the TLS versions,
// the reload on SIGHUP with a connection open across it, and STARTTLS on
// the inbound listener.
func TestServeHTTPSWithCertificateFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	ca := newTLSTestCA(t)
	certDir := t.TempDir()
	certFile, keyFile := writeTestLeaf(t, ca, certDir, 1001)
	s := startTLSServer(t, nil, "--tls-cert", certFile, "--tls-key", keyFile)
	tc := &tls.Config{RootCAs: ca.Pool}
	secure := noRedirects(tc)
	httpsURL := "https://" + s.https

	// The API over HTTPS, with Strict-Transport-Security.
	resp, body := call(t, secure, "GET", httpsURL+"/v1/account", s.key, "")
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("GET /v1/account over HTTPS: %d %v", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=") {
		t.Fatalf("Strict-Transport-Security %q", got)
	}
	if resp, _ := call(t, secure, "GET", httpsURL+"/v1/nothing-here", s.key, ""); resp.StatusCode != 404 ||
		resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("an HTTPS error answer: %d, HSTS %q", resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
	}

	// TLS 1.0 and 1.1 refused, 1.2 and 1.3 accepted.
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13} {
		c := tc.Clone()
		c.MinVersion, c.MaxVersion = v, v
		conn, err := tls.Dial("tcp", s.https, c)
		if ok := v >= tls.VersionTLS12; ok != (err == nil) {
			t.Errorf("%s: handshake error %v", tls.VersionName(v), err)
		}
		if err == nil {
			conn.Close()
		}
	}

	// Plain HTTP: probes answer; API calls get HTTPS_REQUIRED naming the
	// HTTPS URL and never a redirect, whatever the method; dashboard
	// pages redirect.
	plain := noRedirects(nil)
	httpURL := "http://" + s.http
	if resp, body := call(t, plain, "GET", httpURL+"/healthz", "", ""); resp.StatusCode != 200 || body["status"] != "ok" {
		t.Fatalf("GET /healthz over HTTP: %d %v", resp.StatusCode, body)
	}
	if resp, _ := call(t, plain, "GET", httpURL+"/readyz", "", ""); resp.StatusCode != 200 {
		t.Fatalf("GET /readyz over HTTP: %d", resp.StatusCode)
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/account", ""},
		{"POST", "/v1/messages", `{"from":"a@b.test","to":["c@d.test"],"subject":"s","text":"t"}`},
		{"GET", "/v1/openapi.json", ""},
	} {
		resp, body := call(t, plain, r.method, httpURL+r.path, s.key, r.body)
		e, _ := body["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		if resp.StatusCode != 403 || e["code"] != "HTTPS_REQUIRED" || details["https_url"] != httpsURL ||
			!strings.Contains(e["message"].(string), httpsURL+r.path) {
			t.Errorf("%s %s over HTTP: %d %v", r.method, r.path, resp.StatusCode, body)
		}
		if loc := resp.Header.Get("Location"); loc != "" {
			t.Errorf("%s %s over HTTP redirected to %s", r.method, r.path, loc)
		}
		if resp.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s %s: Strict-Transport-Security over plain HTTP", r.method, r.path)
		}
	}
	for _, p := range []string{"/", "/dashboard/messages?page=2"} {
		resp, _ := call(t, plain, "GET", httpURL+p, "", "")
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != httpsURL+p {
			t.Errorf("GET %s over HTTP: %d to %q", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}

	// SIGHUP: an HTTPS connection opened before it keeps working, new
	// connections get the new certificate.
	old, err := tls.Dial("tcp", s.https, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	oldR := bufio.NewReader(old)
	get := func() int {
		t.Helper()
		if _, err := io.WriteString(old, "GET /healthz HTTP/1.1\r\nHost: "+s.https+"\r\n\r\n"); err != nil {
			t.Fatalf("request on the open connection: %v", err)
		}
		resp, err := http.ReadResponse(oldR, nil)
		if err != nil {
			t.Fatalf("answer on the open connection: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Fatalf("healthz before reload: %d", code)
	}
	if got := serial(t, s.https, tc); got != 1001 {
		t.Fatalf("serial %d, want 1001", got)
	}
	writeTestLeaf(t, ca, certDir, 2002)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for serial(t, s.https, tc) != 2002 {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not load the new certificate")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := get(); code != 200 {
		t.Fatalf("healthz on the connection opened before the reload: %d", code)
	}
	if got := old.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); got != 1001 {
		t.Fatalf("the open connection's certificate changed to %d", got)
	}

	// A broken file on SIGHUP: the process stays up with the certificate
	// it has, and says why.
	if err := os.WriteFile(certFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.cmd.Process.Signal(syscall.SIGHUP)
	for !strings.Contains(s.stderr.String(), "not reloaded") {
		if time.Now().After(deadline) {
			t.Fatal("a failed reload was not logged")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := serial(t, s.https, tc); got != 2002 {
		t.Fatalf("after a failed reload serial %d, want 2002", got)
	}

	// The inbound listener offers STARTTLS with the same certificate.
	c, err := smtp.Dial(s.smtp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("sender.example"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		t.Fatal("inbound SMTP does not offer STARTTLS")
	}
	if err := c.StartTLS(&tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"}); err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	st, _ := c.TLSConnectionState()
	if st.Version < tls.VersionTLS12 || st.PeerCertificates[0].SerialNumber.Int64() != 2002 {
		t.Fatalf("STARTTLS gave %s, serial %v", tls.VersionName(st.Version), st.PeerCertificates[0].SerialNumber)
	}
	if err := c.Noop(); err != nil {
		t.Fatalf("NOOP after STARTTLS: %v", err)
	}
	c.Quit()
}

// TestServeTLSFlagsRefused: contradictory or incomplete TLS settings stop
// serve before anything is written, with the flag named.
func TestServeTLSFlagsRefused(t *testing.T) {
	ca := newTLSTestCA(t)
	certFile, keyFile := writeTestLeaf(t, ca, t.TempDir(), 1)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certFile, "--tls-key", keyFile, "--acme-domains", "mail.example.com"}, "mutually exclusive"},
		{[]string{"--https-addr", "127.0.0.1:0"}, "--https-addr needs a certificate"},
		{[]string{"--tls-cert", certFile}, "--tls-cert and --tls-key go together"},
		{[]string{"--https-addr", "nope", "--tls-cert", certFile, "--tls-key", keyFile}, "--https-addr"},
		{[]string{"--acme-domains", "mail.example.com", "--acme-directory", "http://ca.example/dir"}, "--acme-directory"},
		{[]string{"--https-addr", "127.0.0.1:0", "--tls-cert", certFile + ".missing", "--tls-key", keyFile}, "--tls-cert"},
	} {
		dir := t.TempDir()
		args := append([]string{"serve", "--data-dir", dir, "--http-addr", "127.0.0.1:0", "--smtp-addr", "127.0.0.1:0",
			"--metrics-addr=", "--hostname", "mta.example.net"}, c.args...)
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a refusal containing %q\n%s", c.args, err, c.want, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "mailbolt.db")); err == nil {
			t.Errorf("%v: a refused start wrote a database", c.args)
		}
	}
}

// TestTLSDefaultsAndWarnings: --public-url follows the first ACME domain,
// and ACME without port 80 or 443 bound is warned about.
func TestTLSDefaultsAndWarnings(t *testing.T) {
	cfg := defaultServeConfig()
	cfg.acmeDomains = []string{"mail.example.com", "mta.example.com"}
	cfg.httpsAddr = "127.0.0.1:8443"
	if got := cfg.defaultPublicURL("127.0.0.1:8443", ""); got != "https://mail.example.com:8443" {
		t.Errorf("public URL with ACME on 8443: %q", got)
	}
	cfg.acmeDomains[0] = "Mail.Example.COM."
	if got := cfg.defaultPublicURL("[::]:443", ""); got != "https://mail.example.com" {
		t.Errorf("public URL with ACME: %q", got)
	}
	if _, warned := cfg.acmePortsFinding(); !warned {
		t.Error("ACME on 8080 and 8443: no warning")
	}
	for _, c := range []struct{ http, https string }{{"0.0.0.0:80", "127.0.0.1:8443"}, {"127.0.0.1:8080", ":443"}} {
		cfg.httpAddr, cfg.httpsAddr = c.http, c.https
		if f, warned := cfg.acmePortsFinding(); warned {
			t.Errorf("%v: warned %q", c, f.msg)
		}
	}
	files := defaultServeConfig()
	files.tlsCert, files.tlsKey = "c.pem", "k.pem"
	if _, warned := files.acmePortsFinding(); warned {
		t.Error("certificate files: ACME warning")
	}
	if got := files.defaultPublicURL("127.0.0.1:8443", "127.0.0.1:8080"); got != "https://127.0.0.1:8443" {
		t.Errorf("public URL with files: %q", got)
	}
	// Listening on every address with files and no --public-url: refused,
	// naming --https-addr, as for --http-addr.
	files.httpsAddr = "0.0.0.0:8443"
	refused := false
	for _, f := range files.startupFindings() {
		refused = refused || f.refuse && strings.Contains(f.msg, "--https-addr")
	}
	if !refused {
		t.Error("--https-addr 0.0.0.0 without --public-url not refused")
	}
}

// TestServeSIGHUPWithoutTLS: with no certificate configured, SIGHUP (the
// unit's ExecReload) is logged and changes nothing; it used to stop the
// process.
func TestServeSIGHUPWithoutTLS(t *testing.T) {
	bin := tlsTestBinary(t)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd := exec.Command(bin, "serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--http-addr", "127.0.0.1:0",
		"--smtp-addr", "127.0.0.1:0", "--metrics-addr=", "--hostname", "mta.example.net")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	wait := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !done() {
			select {
			case <-exited:
				t.Fatalf("serve exited waiting for %s\nstdout:\n%s\nstderr:\n%s", what, stdout, stderr)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s\nstdout:\n%s\nstderr:\n%s", what, stdout, stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait("start", func() bool { return listening.MatchString(stdout.String()) })
	base := listening.FindStringSubmatch(stdout.String())[1]
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	wait("log of the SIGHUP", func() bool { return strings.Contains(stderr.String(), "nothing to reload") })
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("after SIGHUP: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz after SIGHUP: %d", resp.StatusCode)
	}
}

// TestHTTPErrorLogQuietsHandshakes: failed TLS handshakes, which a public
// port sees all day, are logged at debug; the rest of what net/http says
// stays at warn.
func TestHTTPErrorLogQuietsHandshakes(t *testing.T) {
	var buf bytes.Buffer
	l := httpErrorLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Print("http: TLS handshake error from 203.0.113.9:4711: EOF")
	l.Print("http: panic serving 203.0.113.9:4712: boom")
	out := buf.String()
	if !strings.Contains(out, `level=DEBUG msg="http: TLS handshake error from 203.0.113.9:4711: EOF"`) ||
		!strings.Contains(out, `level=WARN msg="http: panic serving 203.0.113.9:4712: boom"`) {
		t.Fatalf("logged:\n%s", out)
	}
}

// newTLSTestCA signs the test's server certificates; clients trust it alone.
func newTLSTestCA(t *testing.T) *tlstest.CA {
	t.Helper()
	ca, err := tlstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// writeTestLeaf writes cert.pem and key.pem for 127.0.0.1 and localhost
// with the given serial number into dir, replacing what was there.
func writeTestLeaf(t *testing.T, ca *tlstest.CA, dir string, serial int64) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := ca.WriteLeaf(dir, serial)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
