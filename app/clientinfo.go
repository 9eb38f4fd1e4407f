package app

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mileusna/useragent"
	"github.com/oschwald/maxminddb-golang/v2"
)

// ClientContext describes who fetched a tracking URL: the context of
// message.opened and message.clicked (spec §6).
type ClientContext struct {
	IP        string  `json:"ip"`
	UserAgent string  `json:"userAgent"`
	Device    string  `json:"device"` // desktop, mobile, tablet, bot, or "" when unknown
	OS        string  `json:"os"`     // e.g. "iOS", "Windows", "macOS", "Android", "Linux", ""
	Client    string  `json:"client"` // browser or mail client, e.g. "Chrome", "Apple Mail", "Gmail image proxy", ""
	Geo       GeoInfo `json:"geo"`
}

// GeoInfo is where an address is, as far as the configured database knows.
// Every field is empty when no database is configured or it has no answer.
type GeoInfo struct {
	Country string `json:"country"` // ISO 3166-1 alpha-2, e.g. "DE"
	Region  string `json:"region"`  // first subdivision's ISO code, or its English name when the DB has no code
	City    string `json:"city"`    // English name
}

// Device kinds.
const (
	DeviceDesktop = "desktop"
	DeviceMobile  = "mobile"
	DeviceTablet  = "tablet"
	DeviceBot     = "bot"
)

// Mail clients and image proxies recognised on top of the User-Agent parser.
const (
	ClientAppleMail    = "Apple Mail"
	ClientOutlook      = "Outlook"
	ClientThunderbird  = "Thunderbird"
	ClientGmailProxy   = "Gmail image proxy"
	ClientYahooProxy   = "Yahoo Mail image proxy"
	maxStoredUserAgent = 512
)

// NewClientContext describes the fetcher of a tracking URL from its address
// and User-Agent header. geo may be nil: the geo fields are then empty.
//
// The address is normalised (an IPv4-mapped IPv6 address becomes IPv4, a
// port or brackets are dropped); one that does not parse is stored as "".
// The User-Agent is stored without control characters and invalid UTF-8,
// cut to 512 bytes.
func NewClientContext(geo *GeoDB, ip, userAgent string) ClientContext {
	c := ClientContext{UserAgent: cleanUserAgent(userAgent)}
	if addr, ok := parseClientIP(ip); ok {
		c.IP = addr.String()
		c.Geo = geo.lookup(addr)
	}
	c.Device, c.OS, c.Client = classifyUserAgent(c.UserAgent)
	return c
}

// parseClientIP accepts "1.2.3.4", "::ffff:1.2.3.4", "[2001:db8::1]",
// "1.2.3.4:5678" and "[2001:db8::1]:5678". Zones are dropped.
func parseClientIP(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		host, _, serr := net.SplitHostPort(s)
		if serr != nil {
			return netip.Addr{}, false
		}
		if addr, err = netip.ParseAddr(host); err != nil {
			return netip.Addr{}, false
		}
	}
	return addr.Unmap().WithZone(""), true
}

// cleanUserAgent drops control characters and invalid UTF-8 and cuts the
// result to maxStoredUserAgent bytes on a character boundary.
func cleanUserAgent(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > maxStoredUserAgent {
		cut := maxStoredUserAgent
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// automatedTokens mark HTTP libraries, command-line tools, crawlers and the
// link scanners of mail security gateways (matched case-insensitively). A
// fetch by one of them is no person reading the message.
var automatedTokens = []string{
	"curl/", "wget/", "python-requests", "python-urllib", "python-httpx",
	"aiohttp", "go-http-client", "okhttp", "java/", "apache-httpclient",
	"libwww-perl", "node-fetch", "axios/", "undici", "scrapy", "httpclient",
	"headlesschrome", "phantomjs", "bot/", "bot;", "bot)", "bot-", "crawler",
	"spider", "scanner", "slurp", "barracuda", "proofpoint", "mimecast",
	"safelinks",
}

// classifyUserAgent returns the device kind, operating system and client of
// a (cleaned) User-Agent. The maintained parser (mileusna/useragent) does
// the browsers and platforms; mail clients and mailbox providers' image
// proxies, which it does not know, are recognised here first:
//
//   - Gmail's and Yahoo's image proxies fetch images on the reader's behalf
//     and hide who they are: client names the proxy, device and os are "".
//     They are not bots: the proxy fetches when the reader opens the mail.
//   - Outlook for Windows ("Microsoft Outlook", "ms-office", "MSOffice"):
//     client "Outlook", desktop; the ms-office token is Windows Office's, so
//     os is "Windows" when the string names no other.
//   - Thunderbird: client "Thunderbird", desktop.
//   - Apple Mail: a WebKit view on macOS or iOS without the Safari and
//     Version tokens that Safari sends, and no app the parser knows.
//   - Bots: what the parser flags, plus HTTP libraries, command-line tools,
//     crawlers and link scanners (automatedTokens), plus any non-browser
//     string ("name/version" not starting with Mozilla) with no platform.
func classifyUserAgent(s string) (device, os, client string) {
	if s == "" {
		return "", "", ""
	}
	lower := strings.ToLower(s)
	switch {
	case strings.Contains(lower, "googleimageproxy"):
		return "", "", ClientGmailProxy
	case strings.Contains(lower, "yahoomailproxy"):
		return "", "", ClientYahooProxy
	}

	ua := useragent.Parse(s)
	os = normalOS(ua.OS)
	switch {
	case strings.Contains(lower, "microsoft outlook") || strings.Contains(lower, "ms-office") ||
		strings.Contains(lower, "msoffice"):
		if os == "" && strings.Contains(lower, "ms-office") {
			os = useragent.Windows
		}
		return DeviceDesktop, os, ClientOutlook
	case strings.Contains(lower, "thunderbird/"):
		return DeviceDesktop, os, ClientThunderbird
	}

	client = parsedClient(ua)
	switch {
	case ua.Bot || containsAny(lower, automatedTokens):
		device = DeviceBot
	case ua.Tablet:
		device = DeviceTablet
	case os == useragent.Android && !strings.Contains(s, "Mobile"):
		// Android phones' browsers send "Mobile"; tablets' do not.
		device = DeviceTablet
	case ua.Mobile:
		device = DeviceMobile
	case ua.Desktop:
		device = DeviceDesktop
	case os == "" && !strings.HasPrefix(s, "Mozilla/") && strings.Contains(s, "/"):
		// "tool/1.2" with no platform: a program, not a browser.
		device = DeviceBot
	}
	if device == DeviceBot {
		if client == "" {
			client = ua.Name
		}
		return device, os, client
	}
	if client == "" && (os == useragent.MacOS || os == useragent.IOS) &&
		strings.Contains(s, "AppleWebKit/") && !strings.Contains(s, "Safari") &&
		!strings.Contains(s, "Version/") {
		client = ClientAppleMail
	}
	return device, os, client
}

// normalOS maps the parser's operating-system names onto the ones the API
// documents.
func normalOS(os string) string {
	switch os {
	case useragent.CrOS:
		return useragent.ChromeOS
	case useragent.WindowsPhoneOS:
		return useragent.WindowsPhone
	}
	return os
}

// parsedClient is the parser's browser or app name, or "" when the parser
// did not recognise one and fell back on a platform token (it then names
// the client "iPhone", "Intel Mac OS X 10_15_7", "Gecko" and the like) or
// on a string with no letter in it.
func parsedClient(ua useragent.UserAgent) string {
	name := strings.TrimSpace(ua.Name)
	switch {
	case name == "", name == ua.Device, name == ua.OS, strings.IndexFunc(name, unicode.IsLetter) < 0:
		return ""
	case name == useragent.MobileSafari:
		return useragent.Safari
	}
	for _, junk := range []string{"Mozilla", "Gecko", "compatible", "iPhone", "iPad", "iPod", "Macintosh",
		"Mac OS X", "Windows NT", "Linux", "X11", "KHTML", "AppleWebKit"} {
		if strings.Contains(name, junk) {
			return ""
		}
	}
	return name
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// GeoDB looks addresses up in a MaxMind-format (.mmdb) database file
// (GeoLite2-City, GeoIP2-City or compatible). It is safe for concurrent use,
// Close included: lookups after Close find nothing.
type GeoDB struct {
	mu     sync.RWMutex
	reader *maxminddb.Reader
}

// OpenGeoDB opens the database file at path.
func OpenGeoDB(path string) (*GeoDB, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, err
	}
	return &GeoDB{reader: r}, nil
}

// cityRecord is the part of a City-style record Mailbolt reads.
type cityRecord struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	Subdivisions []struct {
		ISOCode string            `maxminddb:"iso_code"`
		Names   map[string]string `maxminddb:"names"`
	} `maxminddb:"subdivisions"`
	City struct {
		Names map[string]string `maxminddb:"names"`
	} `maxminddb:"city"`
}

// Lookup locates ip. It returns the zero GeoInfo when the address is not in
// the database, on a nil *GeoDB, after Close, or on any error.
func (g *GeoDB) Lookup(ip net.IP) GeoInfo {
	addr, ok := netip.AddrFromSlice(ip)
	if !ok {
		return GeoInfo{}
	}
	return g.lookup(addr.Unmap())
}

func (g *GeoDB) lookup(addr netip.Addr) GeoInfo {
	if g == nil || !addr.IsValid() {
		return GeoInfo{}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.reader == nil {
		return GeoInfo{}
	}
	res := g.reader.Lookup(addr)
	if res.Err() != nil || !res.Found() {
		return GeoInfo{}
	}
	var rec cityRecord
	if err := res.Decode(&rec); err != nil {
		return GeoInfo{}
	}
	info := GeoInfo{Country: rec.Country.ISOCode, City: rec.City.Names["en"]}
	if info.Country == "" {
		info.Country = rec.RegisteredCountry.ISOCode
	}
	if len(rec.Subdivisions) > 0 {
		info.Region = rec.Subdivisions[0].ISOCode
		if info.Region == "" {
			info.Region = rec.Subdivisions[0].Names["en"]
		}
	}
	return info
}

// Close releases the database file. It is safe on a nil *GeoDB and when
// called more than once.
func (g *GeoDB) Close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reader == nil {
		return nil
	}
	err := g.reader.Close()
	g.reader = nil
	return err
}
