package mta

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"

	"mailbolt/mta/dns/dnstest"
)

func TestRoute(t *testing.T) {
	zone := dnstest.Start(t)
	zone.MX("pref.test", 20, "b.pref.test")
	zone.MX("pref.test", 10, "a.pref.test")
	zone.MX("pref.test", 10, "A.pref.test.") // the same host twice
	zone.MX("pref.test", 30, "c.pref.test")
	zone.MX("mixed.test", 10, "mx.mixed.test")
	zone.MX("mixed.test", 0, ".") // not alone: not a null MX, just unusable
	zone.MX("null.test", 0, ".")
	zone.A("implicit.test", "192.0.2.1")
	zone.MX("xn--caf-dma.test", 10, "mx.xn--caf-dma.test")
	d := newDeliverer(t, zone, 2525)
	ctx := context.Background()

	tests := []struct {
		domain string
		want   []Hop
		enh    string // the failure's enhanced code, when it fails
		perm   bool
	}{
		{"pref.test", []Hop{{Host: "a.pref.test", Port: 2525}, {Host: "b.pref.test", Port: 2525}, {Host: "c.pref.test", Port: 2525}}, "", false},
		{"PREF.test.", []Hop{{Host: "a.pref.test", Port: 2525}, {Host: "b.pref.test", Port: 2525}, {Host: "c.pref.test", Port: 2525}}, "", false},
		{"mixed.test", []Hop{{Host: "mx.mixed.test", Port: 2525}}, "", false},
		{"implicit.test", []Hop{{Host: "implicit.test", Port: 2525, Implicit: true}}, "", false},
		{"nowhere.test", []Hop{{Host: "nowhere.test", Port: 2525, Implicit: true}}, "", false},
		{"café.test", []Hop{{Host: "mx.xn--caf-dma.test", Port: 2525}}, "", false},
		{"[192.0.2.7]", []Hop{{Host: "192.0.2.7", Port: 2525, Implicit: true}}, "", false},
		{"[IPv6:2001:db8::1]", []Hop{{Host: "2001:db8::1", Port: 2525, Implicit: true}}, "", false},
		{"null.test", nil, "5.1.10", true},
		{"[not-an-ip]", nil, "5.1.2", true},
		{"", nil, "5.1.2", true},
	}
	for _, tt := range tests {
		got, err := d.Route(ctx, tt.domain)
		if tt.enh != "" {
			var de *DeliveryError
			if !errors.As(err, &de) || de.Enhanced != tt.enh || de.Permanent != tt.perm {
				t.Errorf("Route(%q) = %v, %v; want failure %s", tt.domain, got, err, tt.enh)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Route(%q) = %+v, %v; want %+v", tt.domain, got, err, tt.want)
		}
	}

	// DNS trouble is temporary.
	zone.ServFail("broken.test", true)
	if _, err := d.Route(ctx, "broken.test"); err == nil || err.(*DeliveryError).Permanent || err.(*DeliveryError).Enhanced != "4.4.3" {
		t.Fatalf("Route(broken.test) = %v", err)
	}

	// A relay replaces MX routing and needs no DNS.
	relayed := newDeliverer(t, nil, 0)
	relayed.opts.Relay = &Relay{Addr: "smtp.relay.test:587"}
	if got, err := relayed.Route(ctx, "null.test"); err != nil || !reflect.DeepEqual(got, []Hop{{Host: "smtp.relay.test", Port: 587, Relay: true}}) {
		t.Fatalf("relay route = %+v, %v", got, err)
	}
	relayed.opts.Relay.Addr = "no-port"
	if _, err := relayed.Route(ctx, "x.test"); err == nil || err.(*DeliveryError).Permanent {
		t.Fatalf("bad relay address: %v (want a temporary failure)", err)
	}
}

// Hosts of equal preference come in any order, and every order shows up.
func TestRouteShufflesEqualPreference(t *testing.T) {
	zone := dnstest.Start(t)
	for _, h := range []string{"a", "b", "c"} {
		zone.MX("equal.test", 10, h+".equal.test")
	}
	zone.MX("equal.test", 20, "backup.equal.test")
	d := newDeliverer(t, zone, 0)
	firsts := map[string]bool{}
	for range 200 {
		hops, err := d.Route(context.Background(), "equal.test")
		if err != nil || len(hops) != 4 || hops[3].Host != "backup.equal.test" {
			t.Fatalf("hops = %+v, %v", hops, err)
		}
		names := []string{hops[0].Host, hops[1].Host, hops[2].Host}
		firsts[names[0]] = true
		sort.Strings(names)
		if !reflect.DeepEqual(names, []string{"a.equal.test", "b.equal.test", "c.equal.test"}) {
			t.Fatalf("hops = %+v", hops)
		}
		if len(firsts) == 3 {
			return
		}
	}
	t.Fatalf("first hosts seen in 200 routes: %v", firsts)
}
