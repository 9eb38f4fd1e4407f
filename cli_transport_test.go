package main

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/smtptest"
	"mailbolt/tlsconf/tlstest"
)

// --dnssec trusts the resolver's AD bit, so only a resolver on this host
// will do; --tls-roots must load; --mta-sts-port must be a port.
func TestServeTransportFlagsRefused(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "roots.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dnssec"}, "--dnssec needs --dns-server at a loopback address"},
		{[]string{"--dnssec", "--dns-server", "192.0.2.53:53"}, "--dnssec needs --dns-server at a loopback address"},
		{[]string{"--tls-roots", bad}, "holds no PEM certificate"},
		{[]string{"--tls-roots", bad + ".missing"}, "--tls-roots"},
		{[]string{"--mta-sts-port", "0"}, "--mta-sts-port"},
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

// issue makes a certificate for name signed by the test CA.
func issue(t *testing.T, ca *tlstest.CA, name string) tls.Certificate {
	t.Helper()
	cert, err := ca.Leaf(time.Now().UnixNano(), name)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// serve with --mta-sts-port, --tls-roots and the webhook guard opened to
// loopback: the recipient domain's enforced policy is fetched over HTTPS
// from a server with a test CA's certificate, and the message reaches the
// MX over verified TLS, which GET /v1/messages/{id} shows.
func TestServeEnforcesMTASTS(t *testing.T) {
	ca := newTLSTestCA(t)
	roots := filepath.Join(t.TempDir(), "roots.pem")
	os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o600)
	policy := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "version: STSv1\nmode: enforce\nmx: mx.dest.test\nmax_age: 86400\n")
	}))
	policy.TLS = &tls.Config{Certificates: []tls.Certificate{issue(t, ca, "mta-sts.dest.test")}}
	policy.StartTLS()
	defer policy.Close()
	_, policyPort, _ := net.SplitHostPort(policy.Listener.Addr().String())
	sink, err := smtptest.Start("127.0.0.1:0", smtptest.Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{issue(t, ca, "mx.dest.test")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	zone := destZone(t)
	zone.TXT("_mta-sts.dest.test", "v=STSv1; id=1")
	zone.A("mta-sts.dest.test", "127.0.0.1")

	base, out, stop := startServe(t, t.TempDir(), "--dns-server", zone.Addr, "--mx-port", strconv.Itoa(sink.Port),
		"--mx-allow-cidrs", "127.0.0.0/8", "--webhook-allow-cidrs", "127.0.0.0/8", "--hostname", "mx.mailbolt.test",
		"--mta-sts-port", policyPort, "--tls-roots", roots)
	defer stop()
	live := liveKeyRe.FindStringSubmatch(out.String())[1]
	call := apiCaller(t, base, live)
	dom := call("POST", "/v1/domains", `{"name":"acme.test"}`, 201)
	publishRecords(zone, dom)
	call("POST", "/v1/domains/"+dom["id"].(string)+"/verify", "", 200)
	id := call("POST", "/v1/messages", `{"from":"a@acme.test","to":["ann@dest.test"],"subject":"s","text":"t"}`, 202)["id"].(string)
	var r map[string]any
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		m := call("GET", "/v1/messages/"+id, "", 200)
		r = m["recipients"].([]any)[0].(map[string]any)
		if m["status"] == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: %v", m)
		}
	}
	d, _ := r["tls_details"].(map[string]any)
	if d == nil || d["policy"] != "mta-sts" || d["verified"] != true || len(sink.Messages()) != 1 {
		t.Fatalf("recipient %v", r)
	}
}

// apiCaller calls a running serve's API at base with key: a JSON body, the
// status wanted, and the answer decoded.
func apiCaller(t *testing.T, base, key string) func(method, path, body string, want int) map[string]any {
	return func(method, path, body string, want int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, m)
		}
		return m
	}
}
