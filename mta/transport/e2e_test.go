package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"mailbolt/mta"
	"mailbolt/mta/dns"
	"mailbolt/mta/smtptest"
	"mailbolt/storage"
)

func sink(t *testing.T, addr string, cfg *tls.Config) *smtptest.Server {
	s, err := smtptest.Start(addr, smtptest.Options{TLSConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// End to end: the policy comes from an HTTPS server (test CA) through the
// DNS zone, and go-smtp MX servers play a cleartext MX, one with a
// certificate for another name, and the right one.
func TestEnforcedPolicyAgainstRealMXServers(t *testing.T) {
	f := setup(t)
	good := sink(t, "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{f.ca.issue(t, "mx.example.test")}})
	port := strconv.Itoa(good.Port)
	clear := sink(t, "127.0.0.3:"+port, nil)
	wrong := sink(t, "127.0.0.5:"+port, &tls.Config{Certificates: []tls.Certificate{f.ca.issue(t, "other.example.test")}})
	f.zone.MX("example.test", 10, "mx.example.test")
	counter := NewCounter(f.db, func() time.Time { return f.clock })

	deliverer := func() *mta.Deliverer {
		o := mta.DefaultOptions()
		o.Resolver = &dns.Resolver{Server: f.zone.Addr, Timeout: time.Second}
		o.MXPort, o.HELO = good.Port, "out.mailbolt.test"
		o.MXGuard.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		o.ConnectTimeout, o.CommandTimeout, o.DataTimeout = 5*time.Second, 5*time.Second, 5*time.Second
		o.STS, o.RootCAs = f.sts(), f.ca.pool
		o.OnTLS = func(x mta.TLSOutcome) { counter.Add(x.Domain, x.Policy, x.Failure) }
		d, err := mta.NewDeliverer(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	send := func(ip string) mta.RecipientResult {
		f.zone.Remove("mx.example.test")
		f.zone.A("mx.example.test", ip)
		return deliverer().Send(context.Background(), mta.Envelope{From: "a@mailbolt.test", To: []string{"rcpt@example.test"},
			Data: []byte("Subject: x\r\n\r\nhi\r\n")})[0]
	}
	for ip, want := range map[string]string{"127.0.0.3": "offers no STARTTLS", "127.0.0.5": "certificate is valid for other.example.test"} {
		r := send(ip)
		if r.Status != mta.StatusTemporary || !strings.Contains(r.Text, want) || !strings.Contains(r.Text, "MTA-STS policy of example.test (id one, mode enforce)") {
			t.Fatalf("%s: %+v", ip, r)
		}
	}
	if len(clear.Messages())+len(wrong.Messages()) != 0 {
		t.Fatal("a message went out under a failed policy")
	}
	r := send("127.0.0.1")
	if r.Status != mta.StatusDelivered || !r.TLSVerified || r.TLSPolicy != mta.PolicyMTASTS || len(good.Messages()) != 1 || !good.Messages()[0].TLS {
		t.Fatalf("right MX: %+v", r)
	}

	// testing mode: the wrong certificate gets the mail, and the failure
	// is counted.
	f.ps.set(servePolicy(strings.Replace(enforce, "enforce", "testing", 1)))
	f.zone.Remove("_mta-sts.example.test")
	f.zone.TXT("_mta-sts.example.test", "v=STSv1; id=two")
	if r := send("127.0.0.5"); r.Status != mta.StatusDelivered || r.TLSVerified || r.TLSPolicy != mta.PolicyMTASTS || len(wrong.Messages()) != 1 {
		t.Fatalf("testing mode: %+v", r)
	}
	if err := counter.Flush(); err != nil {
		t.Fatal(err)
	}
	f.db.View(func(tx *storage.Tx) error {
		counts, _ := tx.TLSCounts(Day(f.clock) + 1)
		if len(counts) != 1 || counts[0].Success != 1 || counts[0].Failures["starttls-not-supported"] != 1 ||
			counts[0].Failures["certificate-host-mismatch"] != 2 {
			t.Errorf("counts %s", fmt.Sprintf("%+v", counts))
		}
		return nil
	})
}
