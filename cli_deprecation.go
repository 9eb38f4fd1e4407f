package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
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

// deprecation is the deprecation serve is started with (wc is its
// webConfig).
func (cfg serveConfig) deprecation(wc web.Config) app.Deprecation {
	d := app.Deprecation{Sunset: wc.Sunset, NotesURL: cfg.deprecationNotesURL, Dev: cfg.dev}
	if wc.Deprecated {
		d.Version = cfg.deprecate
	}
	return d
}

// checkSunset refuses, before serve opens the database for writing (or
// creates it), a --sunset that announceDeprecation would refuse once it
// had: less than six months after the version's first announcement, which
// on a first start is now. A sunset six months away or more needs no
// records; otherwise the announcements are read from the database,
// read-only, and a missing database has none. A database that cannot be
// read here, or that this build would migrate first (the migration may
// mark it upgraded), is left to announceDeprecation after the open.
func (cfg serveConfig) checkSunset(wc web.Config, now time.Time) error {
	d := cfg.deprecation(wc)
	if d.Version == "" || d.Dev || !d.Sunset.Before(app.EarliestSunset(now)) {
		return nil
	}
	o := cfg.storage
	o.ReadOnly, o.MustExist = true, true
	db, err := storage.Open(cfg.dataDir, o)
	if errors.Is(err, storage.ErrNoDatabase) {
		return app.CheckSunset(nil, false, d, now)
	}
	if err != nil {
		return nil
	}
	defer db.Close()
	if v, err := db.SchemaVersion(); err != nil || v != storage.LatestSchemaVersion() {
		return nil
	}
	var list []storage.Announcement
	upgraded := false
	err = db.View(func(tx *storage.Tx) error {
		var err error
		list, err = tx.Announcements()
		upgraded = tx.UpgradeMarked()
		return err
	})
	if err != nil {
		return nil
	}
	return app.CheckSunset(list, upgraded, d, now)
}

// announceDeprecation tells the account owners of the deprecation serve
// starts with, once per (version, sunset) pair, and refuses a sunset that
// leaves under six months of warning (app.AnnounceDeprecation). It says in
// the log what was sent, and when no notice could be sent.
func announceDeprecation(a *app.App, cfg serveConfig, wc web.Config, log *slog.Logger) error {
	d := cfg.deprecation(wc)
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
