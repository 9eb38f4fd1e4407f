package app

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

func TestClientUserAgents(t *testing.T) {
	cases := []struct {
		name, ua           string
		device, os, client string
	}{
		{"Chrome Windows",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
			"desktop", "Windows", "Chrome"},
		{"Edge Windows",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.80",
			"desktop", "Windows", "Edge"},
		{"Chrome macOS",
			"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
			"desktop", "macOS", "Chrome"},
		{"Safari macOS",
			"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15",
			"desktop", "macOS", "Safari"},
		{"Safari iPhone",
			"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
			"mobile", "iOS", "Safari"},
		{"Chrome iPhone",
			"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1",
			"mobile", "iOS", "Chrome"},
		{"Facebook in-app iPhone is not Apple Mail",
			"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/460.0.0.0]",
			"mobile", "iOS", "Facebook App"},
		{"Chrome Android phone",
			"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36",
			"mobile", "Android", "Chrome"},
		{"Chrome Android tablet",
			"Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
			"tablet", "Android", "Chrome"},
		{"Safari iPad",
			"Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
			"tablet", "iOS", "Safari"},
		{"Firefox Linux",
			"Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
			"desktop", "Linux", "Firefox"},
		{"Apple Mail macOS",
			"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)",
			"desktop", "macOS", "Apple Mail"},
		{"Apple Mail iPhone",
			"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
			"mobile", "iOS", "Apple Mail"},
		{"Apple Mail iPad",
			"Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
			"tablet", "iOS", "Apple Mail"},
		{"Gmail image proxy",
			"Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)",
			"", "", "Gmail image proxy"},
		{"Yahoo Mail proxy",
			"YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html",
			"", "", "Yahoo Mail image proxy"},
		{"Outlook 2016",
			"Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)",
			"desktop", "Windows", "Outlook"},
		{"Outlook ms-office short",
			"Mozilla/4.0 (compatible; ms-office; MSOffice 16)",
			"desktop", "Windows", "Outlook"},
		{"Outlook ms-office Trident",
			"Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 10.0; WOW64; Trident/7.0; .NET4.0C; .NET4.0E; Microsoft Outlook 16.0.5134; ms-office; MSOffice 16)",
			"desktop", "Windows", "Outlook"},
		{"Thunderbird Linux",
			"Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Thunderbird/115.10.1",
			"desktop", "Linux", "Thunderbird"},
		{"Thunderbird Windows",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:115.0) Gecko/20100101 Thunderbird/115.10.1",
			"desktop", "Windows", "Thunderbird"},
		{"curl", "curl/8.5.0", "bot", "", "curl"},
		{"python-requests", "python-requests/2.31.0", "bot", "", "python-requests"},
		{"Go client", "Go-http-client/1.1", "bot", "", "Go-http-client"},
		{"Googlebot",
			"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
			"bot", "", "Googlebot"},
		{"Barracuda link scanner",
			"Mozilla/5.0 (compatible; BarracudaCentral; +http://www.barracudacentral.org)",
			"bot", "", "BarracudaCentral"},
		{"headless Chrome",
			"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36",
			"bot", "Windows", "Headless Chrome"},
		{"empty", "", "", "", ""},
		{"garbage", "???", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClientContext(nil, "203.0.113.7", tc.ua)
			if c.Device != tc.device || c.OS != tc.os || c.Client != tc.client {
				t.Errorf("device/os/client = %q/%q/%q, want %q/%q/%q",
					c.Device, c.OS, c.Client, tc.device, tc.os, tc.client)
			}
			if c.UserAgent != tc.ua {
				t.Errorf("userAgent = %q, want it unchanged", c.UserAgent)
			}
		})
	}
}

func TestClientContextIP(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":          "203.0.113.7",
		" 203.0.113.7 ":        "203.0.113.7",
		"::ffff:203.0.113.7":   "203.0.113.7",
		"[::ffff:203.0.113.7]": "203.0.113.7",
		"203.0.113.7:4321":     "203.0.113.7",
		"[2001:db8::1]:4321":   "2001:db8::1",
		"2001:DB8:0::1":        "2001:db8::1",
		"fe80::1%eth0":         "fe80::1",
		"":                     "",
		"not an address":       "",
		"unknown":              "",
	} {
		if got := NewClientContext(nil, in, "").IP; got != want {
			t.Errorf("IP(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClientContextUserAgentCleaned(t *testing.T) {
	c := NewClientContext(nil, "", "Mozilla/5.0\r\n(X11;\x00 Linux\tx86_64)\x7f\xff Firefox/125.0")
	if c.UserAgent != "Mozilla/5.0(X11; Linuxx86_64) Firefox/125.0" {
		t.Errorf("userAgent = %q", c.UserAgent)
	}

	long := "Mozilla/5.0 " + strings.Repeat("é", 600) // two bytes each
	c = NewClientContext(nil, "", long)
	if len(c.UserAgent) > 512 || len(c.UserAgent) < 510 {
		t.Errorf("len(userAgent) = %d, want 511 or 512", len(c.UserAgent))
	}
	if !strings.HasPrefix(long, c.UserAgent) || !strings.HasSuffix(c.UserAgent, "é") {
		t.Errorf("truncation cut a character: ...%q", c.UserAgent[len(c.UserAgent)-4:])
	}
}

func TestClientContextJSON(t *testing.T) {
	b, err := json.Marshal(NewClientContext(nil, "::ffff:198.51.100.1", "curl/8.5.0"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ip":"198.51.100.1","userAgent":"curl/8.5.0","device":"bot","os":"","client":"curl",` +
		`"geo":{"country":"","region":"","city":""}}`
	if string(b) != want {
		t.Errorf("json = %s\nwant   %s", b, want)
	}
}

// writeGeoDB writes a small City-style .mmdb file and returns its path.
func writeGeoDB(t *testing.T) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: "GeoLite2-City",
		Languages:    []string{"en"},
		RecordSize:   24,
	})
	if err != nil {
		t.Fatal(err)
	}
	names := func(en string) mmdbtype.Map {
		return mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(en), "de": mmdbtype.String(en + " (de)")}}
	}
	records := map[string]mmdbtype.Map{
		// Berlin, with subdivision code and name.
		"89.246.0.0/16": {
			"country":            mmdbtype.Map{"iso_code": mmdbtype.String("DE")},
			"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String("DE")},
			"subdivisions": mmdbtype.Slice{
				mmdbtype.Map{"iso_code": mmdbtype.String("BE"), "names": names("Land Berlin")["names"]},
			},
			"city": names("Berlin"),
		},
		// A subdivision known only by name.
		"2a02:8100::/32": {
			"country":      mmdbtype.Map{"iso_code": mmdbtype.String("FR")},
			"subdivisions": mmdbtype.Slice{mmdbtype.Map{"names": names("Île-de-France")["names"]}},
			"city":         names("Paris"),
		},
		// Country-level only: registered_country stands in for country.
		"81.2.69.0/24": {
			"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String("GB")},
		},
	}
	for cidr, rec := range records {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(network, rec); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "city.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGeoDBLookup(t *testing.T) {
	db, err := OpenGeoDB(writeGeoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	for ip, want := range map[string]GeoInfo{
		"89.246.12.34":        {Country: "DE", Region: "BE", City: "Berlin"},
		"::ffff:89.246.12.34": {Country: "DE", Region: "BE", City: "Berlin"},
		"2a02:8100:1::5":      {Country: "FR", Region: "Île-de-France", City: "Paris"},
		"81.2.69.142":         {Country: "GB"},
		"8.8.8.8":             {},
		"2001:4860::8888":     {},
	} {
		if got := db.Lookup(net.ParseIP(ip)); got != want {
			t.Errorf("Lookup(%s) = %+v, want %+v", ip, got, want)
		}
	}
	if got := db.Lookup(nil); got != (GeoInfo{}) {
		t.Errorf("Lookup(nil) = %+v", got)
	}
	if got := db.Lookup(net.IP{1, 2, 3}); got != (GeoInfo{}) {
		t.Errorf("Lookup(3 bytes) = %+v", got)
	}

	c := NewClientContext(db, "[::ffff:89.246.12.34]:443", "curl/8.5.0")
	if c.IP != "89.246.12.34" || c.Geo != (GeoInfo{Country: "DE", Region: "BE", City: "Berlin"}) {
		t.Errorf("NewClientContext = %+v", c)
	}
	if c := NewClientContext(db, "garbage", ""); c.Geo != (GeoInfo{}) {
		t.Errorf("geo for an unparsable address = %+v", c.Geo)
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got := db.Lookup(net.ParseIP("89.246.12.34")); got != (GeoInfo{}) {
		t.Errorf("Lookup after Close = %+v", got)
	}
}

func TestGeoDBNil(t *testing.T) {
	var db *GeoDB
	if got := db.Lookup(net.ParseIP("89.246.12.34")); got != (GeoInfo{}) {
		t.Errorf("nil Lookup = %+v", got)
	}
	if err := db.Close(); err != nil {
		t.Errorf("nil Close: %v", err)
	}
	if c := NewClientContext(nil, "89.246.12.34", ""); c.Geo != (GeoInfo{}) {
		t.Errorf("geo without a database = %+v", c.Geo)
	}
}

func TestGeoDBOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if db, err := OpenGeoDB(filepath.Join(dir, "missing.mmdb")); err == nil || db != nil {
		t.Errorf("missing file: db=%v err=%v", db, err)
	}
	bad := filepath.Join(dir, "bad.mmdb")
	if err := os.WriteFile(bad, []byte("not a MaxMind database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if db, err := OpenGeoDB(bad); err == nil || db != nil {
		t.Errorf("bad file: db=%v err=%v", db, err)
	}
}

func TestGeoDBConcurrentClose(t *testing.T) {
	db, err := OpenGeoDB(writeGeoDB(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				db.Lookup(net.ParseIP("89.246.12.34"))
			}
		}()
	}
	db.Close()
	for range 4 {
		<-done
	}
}
