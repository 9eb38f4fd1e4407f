package spf

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

func testZone(t *testing.T, data map[string][]any) zone {
	t.Helper()
	z, err := newZone(data)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func TestCheckIdentities(t *testing.T) {
	z := testZone(t, map[string][]any{
		"example.com":      {map[string]any{"TXT": "v=spf1 ip4:192.0.2.0/24 -all exp=why.example.com"}},
		"why.example.com":  {map[string]any{"TXT": "%{l} via %{h}: not from %{i}"}},
		"helo.example.net": {map[string]any{"TXT": "v=spf1 a -all"}, map[string]any{"A": "198.51.100.7"}},
	})
	ctx := context.Background()
	in, out := net.ParseIP("192.0.2.9"), net.ParseIP("198.51.100.7")
	for _, tc := range []struct {
		name    string
		got     func() (Result, string, error)
		want    Result
		wantExp string
	}{
		{"mail from pass", func() (Result, string, error) {
			return CheckMailFrom(ctx, z, in, "bob@example.com", "helo.example.net")
		}, Pass, ""},
		{"mail from fail with exp", func() (Result, string, error) {
			return CheckMailFrom(ctx, z, out, "bob@example.com", "helo.example.net")
		}, Fail, "bob via helo.example.net: not from 198.51.100.7"},
		{"trailing dot and case", func() (Result, string, error) {
			return CheckMailFrom(ctx, z, in, "bob@EXAMPLE.com.", "helo.example.net")
		}, Pass, ""},
		{"null reverse-path uses HELO", func() (Result, string, error) {
			return CheckMailFrom(ctx, z, out, "", "helo.example.net")
		}, Pass, ""},
		{"helo", func() (Result, string, error) { return CheckHelo(ctx, z, in, "helo.example.net") }, Fail, ""},
		{"ipv4-mapped client is IPv4", func() (Result, string, error) {
			return CheckMailFrom(ctx, z, net.ParseIP("::ffff:192.0.2.9"), "bob@example.com", "h")
		}, Pass, ""},
		{"domain literal", func() (Result, string, error) { return CheckHelo(ctx, z, in, "[192.0.2.9]") }, None, ""},
	} {
		res, exp, err := tc.got()
		if res != tc.want || exp != tc.wantExp || err != nil {
			t.Errorf("%s: got %s %q %v, want %s %q", tc.name, res, exp, err, tc.want, tc.wantExp)
		}
	}
}

func TestCheckInvalidIP(t *testing.T) {
	res, _, err := Check(context.Background(), zone{}, net.IP{1, 2, 3}, "example.com", "", "")
	if res != None || !errors.Is(err, ErrInvalidIP) {
		t.Errorf("got %s, %v", res, err)
	}
}

func TestWithVoidLimit(t *testing.T) {
	z := testZone(t, map[string][]any{
		"example.com": {map[string]any{"TXT": "v=spf1 a:nx1.example.com a:nx2.example.com a:nx3.example.com -all"}},
	})
	ip := net.ParseIP("192.0.2.1")
	if res, _, err := Check(context.Background(), z, ip, "example.com", "", ""); res != PermError || !errors.Is(err, ErrTooManyVoidLookups) {
		t.Errorf("default limit: %s, %v", res, err)
	}
	if res, _, _ := Check(context.Background(), z, ip, "example.com", "", "", WithVoidLimit(3)); res != Fail {
		t.Errorf("limit 3: %s", res)
	}
	if res, _, _ := Check(context.Background(), z, ip, "example.com", "", "", WithVoidLimit(-1)); res != Fail {
		t.Errorf("no limit: %s", res)
	}
}

// stallResolver answers nothing until the context ends.
type stallResolver struct{ zone }

func (stallResolver) LookupTXT(ctx context.Context, _ string) ([]string, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestWithTimeout(t *testing.T) {
	start := time.Now()
	res, _, err := Check(context.Background(), stallResolver{}, net.ParseIP("192.0.2.1"), "example.com", "", "", WithTimeout(50*time.Millisecond))
	if res != TempError || !errors.Is(err, ErrDNS) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %s, %v", res, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestErrorsNameTheirCause(t *testing.T) {
	z := testZone(t, map[string][]any{
		"example.com":     {map[string]any{"TXT": "v=spf1 include:inc.example.com -all"}},
		"inc.example.com": {map[string]any{"TXT": "v=spf1 mx"}, map[string]any{"MX": []any{0, "mx.example.com"}}},
		"mx.example.com":  {"TIMEOUT"},
	})
	_, _, err := Check(context.Background(), z, net.ParseIP("192.0.2.1"), "example.com", "", "")
	want := "example.com: include:inc.example.com: inc.example.com: mx: spf: DNS lookup failed: mx.example.com: dns lookup of mx.example.com failed: i/o timeout (test zone)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
}

// netResolver answers the way a net.Resolver-based adapter would.
type netResolver struct{ zone }

func (netResolver) LookupTXT(context.Context, string) ([]string, error) {
	return nil, &net.DNSError{Err: "no such host", Name: "example.com", IsNotFound: true}
}

func TestNetDNSErrorNotFound(t *testing.T) {
	res, _, err := Check(context.Background(), netResolver{}, net.ParseIP("192.0.2.1"), "example.com", "", "")
	if res != None || err != nil {
		t.Errorf("got %s, %v; want none", res, err)
	}
}
