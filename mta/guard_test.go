package mta

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"mailbolt/mta/dns/dnstest"
	"mailbolt/netguard"
)

// TestMXOnLoopbackRefused: a recipient domain whose MX (or implicit MX, or
// address literal) is on loopback or a private address is not connected
// to unless the guard allows the range; the recipient hard-bounces with
// the refused address in the text.
func TestMXOnLoopbackRefused(t *testing.T) {
	mx := startMX(t, ipMX+":0")
	zone := dnstest.Start(t)
	zone.MX("loop.test", 10, "mx.loop.test")
	zone.A("mx.loop.test", ipMX)
	zone.MX("private.test", 10, "mx1.private.test")
	zone.MX("private.test", 20, "mx2.private.test")
	zone.A("mx1.private.test", "10.1.2.3")
	zone.A("mx2.private.test", "169.254.169.254")
	zone.A("implicit.test", ipMX) // no MX: the domain is its own mail host
	d := newDeliverer(t, zone, mx.Port)
	d.opts.MXGuard = netguard.Policy{} // the default: nothing special allowed

	for rcpt, addr := range map[string]string{
		"a@loop.test":               ipMX,
		"a@private.test":            "169.254.169.254", // the last hop tried is reported; both were refused
		"a@implicit.test":           ipMX,
		"a@[127.0.0.1]":             ipMX,
		"a@[IPv6:::1]":              "::1",
		"a@[IPv6:::ffff:127.0.0.1]": ipMX,
	} {
		r := only(t, d.Send(context.Background(), envelope(rcpt)))
		wantStatus(t, r, StatusPermanent, Bounce{BounceHard, CategoryBadDomain})
		if r.Enhanced != "5.1.2" || r.Code != 0 || !strings.Contains(r.Text, addr+" is in ") {
			t.Errorf("%s: result %+v does not name %s", rcpt, r, addr)
		}
	}
	if n := mx.Conns(); n != 0 {
		t.Fatalf("the MX on loopback got %d connections", n)
	}

	// Allowed explicitly (--mx-allow-cidrs), the same MX takes the mail.
	d.opts.MXGuard = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	r := only(t, d.Send(context.Background(), envelope("a@loop.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	// So with --dev.
	d.opts.MXGuard = netguard.Policy{AllowPrivate: true}
	r = only(t, d.Send(context.Background(), envelope("a@implicit.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if n := len(mx.Messages()); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
}

// TestMXRefusedAddressesAreSkipped: a refused MX, or a refused address of
// an MX, is passed over for the allowed ones.
func TestMXRefusedAddressesAreSkipped(t *testing.T) {
	mx := startMX(t, ipBackup+":0")
	zone := dnstest.Start(t)
	zone.MX("mixed.test", 10, "bad.mixed.test")
	zone.MX("mixed.test", 20, "good.mixed.test")
	zone.A("bad.mixed.test", ipMX)
	zone.A("good.mixed.test", ipBackup)
	d := newDeliverer(t, zone, mx.Port)
	d.opts.MXGuard = netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix(ipBackup + "/32")}}
	r := only(t, d.Send(context.Background(), envelope("a@mixed.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
	if r.Host != "good.mixed.test" {
		t.Fatalf("delivered through %q", r.Host)
	}

	// A refused MX next to one that is only unreachable: temporary, since
	// the unreachable one may come back.
	zone.MX("flaky.test", 10, "bad.mixed.test")
	zone.MX("flaky.test", 20, "down.flaky.test")
	zone.A("down.flaky.test", ipRefused)
	d.opts.MXGuard.Allow = append(d.opts.MXGuard.Allow, netip.MustParsePrefix(ipRefused+"/32"))
	r = only(t, d.Send(context.Background(), envelope("a@flaky.test")))
	if r.Status != StatusTemporary {
		t.Fatalf("result %+v, want temporary", r)
	}
}

// TestRelayOnLoopbackIsTrusted: an explicitly configured relay is not
// subject to the guard.
func TestRelayOnLoopbackIsTrusted(t *testing.T) {
	mx, roots := startRelay(t)
	d := newDeliverer(t, nil, 0)
	d.opts.MXGuard = netguard.Policy{}
	d.opts.Relay = &Relay{Addr: mx.Addr, Username: "mailbolt", Password: "s3cret", TLSConfig: roots}
	r := only(t, d.Send(context.Background(), envelope("a@one.test")))
	wantStatus(t, r, StatusDelivered, Bounce{})
}

func TestInvalidAllowedRangeRefused(t *testing.T) {
	o := DefaultOptions()
	o.MXGuard.Allow = []netip.Prefix{{}}
	if _, err := NewDeliverer(o); err == nil || !strings.Contains(err.Error(), "invalid address range") {
		t.Fatalf("NewDeliverer: %v", err)
	}
}
