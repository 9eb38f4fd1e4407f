package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"mailbolt/app"
	"mailbolt/mta/dns"
	"mailbolt/web"
)

// graderSettings are the spec's GRADER_* deployment settings (§8), read
// from the environment under exactly those names.
type graderSettings struct {
	rateLimit         int
	rateWindow        time.Duration
	maxBody           int64
	cacheTTL          time.Duration
	selectors         []string
	authHostname      string
	disabled          bool
	ipBlocklists      []string
	domainBlocklists  []string
	trustForwardedFor bool
}

// readGraderSettings reads the GRADER_* variables; a malformed one is an
// error naming it.
func readGraderSettings(lookupEnv func(string) (string, bool)) (graderSettings, error) {
	getenv := func(name string) string { v, _ := lookupEnv(name); return v }
	wd := web.DefaultConfig()
	g := graderSettings{rateLimit: wd.GraderRateLimit, rateWindow: wd.GraderRateWindow, maxBody: wd.GraderMaxBody,
		cacheTTL: app.DefaultOptions().Grader.CacheTTL}
	var err error
	num := func(name string, dst *int) {
		if v := getenv(name); v != "" && err == nil {
			n, e := strconv.Atoi(v)
			if e != nil || n < 1 {
				err = fmt.Errorf("%s: %q is not a positive integer", name, v)
			}
			*dst = n
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v := getenv(name); v != "" && err == nil {
			d, e := time.ParseDuration(v)
			if e != nil || d <= 0 {
				err = fmt.Errorf("%s: %q is not a positive duration such as 1h", name, v)
			}
			*dst = d
		}
	}
	boolean := func(name string, dst *bool) {
		if v := getenv(name); v != "" && err == nil {
			b, e := strconv.ParseBool(v)
			if e != nil {
				err = fmt.Errorf("%s: %q is not true or false (1, t, TRUE, True and 0, f, FALSE, False are taken too)", name, v)
			}
			*dst = b
		}
	}
	list := func(name string, dst *[]string) {
		if v, ok := lookupEnv(name); ok {
			*dst = []string{}
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					*dst = append(*dst, s)
				}
			}
		}
	}
	num("GRADER_RATE_LIMIT", &g.rateLimit)
	dur("GRADER_RATE_WINDOW", &g.rateWindow)
	var body int
	num("GRADER_MAX_BODY_SIZE", &body)
	if body > 0 {
		g.maxBody = int64(body)
	}
	dur("GRADER_CACHE_TTL", &g.cacheTTL)
	boolean("GRADER_DISABLED", &g.disabled)
	boolean("GRADER_TRUST_FORWARDED_FOR", &g.trustForwardedFor)
	list("GRADER_DKIM_SELECTORS", &g.selectors)
	list("GRADER_IP_BLOCKLISTS", &g.ipBlocklists)
	list("GRADER_DOMAIN_BLOCKLISTS", &g.domainBlocklists)
	g.authHostname = strings.TrimSpace(getenv("GRADER_AUTH_HOSTNAME"))
	return g, err
}

// appOptions are def with the settings.
func (g graderSettings) appOptions(def app.GraderOptions, resolver *dns.Resolver) app.GraderOptions {
	def.Disabled, def.CacheTTL = g.disabled, g.cacheTTL
	c := &def.Config
	c.Resolver, c.Selectors, c.IPBlocklists, c.DomainBlocklists = resolver, g.selectors, g.ipBlocklists, g.domainBlocklists
	return def
}

func (g graderSettings) web(wc *web.Config) {
	wc.GraderRateLimit, wc.GraderRateWindow, wc.GraderMaxBody = g.rateLimit, g.rateWindow, g.maxBody
	wc.GraderAuthHostname, wc.TrustForwardedFor = g.authHostname, g.trustForwardedFor
}
