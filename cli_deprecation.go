package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"mailbolt/app"
	"mailbolt/web"
)

// validNotesURL checks --deprecation-notes-url: an http(s) URL, which the
// deprecation notice links to.
func validNotesURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--deprecation-notes-url: %q is not an http(s) URL", s)
	}
	return nil
}

// announceDeprecation tells the account owners of the deprecation serve
// starts with, once per (version, sunset) pair, and refuses a sunset that
// leaves under six months of warning (app.AnnounceDeprecation). It says in
// the log what was sent, and when no notice could be sent.
func announceDeprecation(a *app.App, cfg serveConfig, wc web.Config, log *slog.Logger) error {
	d := app.Deprecation{Sunset: wc.Sunset, NotesURL: cfg.deprecationNotesURL, Dev: cfg.dev}
	if wc.Deprecated {
		d.Version = cfg.deprecate
	}
	res, err := a.AnnounceDeprecation(d)
	if err != nil {
		return err
	}
	if res.Warning != "" {
		log.Warn(res.Warning)
	}
	if !res.New {
		return nil
	}
	sent, untold := 0, 0
	for _, n := range res.Notices {
		if n.Reason == "" {
			sent++
			continue
		}
		untold++
		log.Warn("no deprecation notice could be sent to this account", "account", n.AccountID, "reason", n.Reason)
	}
	sunset := ""
	if !wc.Sunset.IsZero() {
		sunset = wc.Sunset.Format(time.RFC3339)
	}
	log.Info("deprecation announced; `mailbolt accounts notices` lists who was told", "version", d.Version,
		"sunset", sunset, "notices_sent", sent, "accounts_not_told", untold)
	return nil
}
