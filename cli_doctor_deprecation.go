package main

import (
	"errors"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
	"mailbolt/web"
)

// checkDeprecation fails while a deprecated version's newest sunset is
// less than six months after its first announcement (spec §9.4), as a
// server upgraded while already deprecating may run with; the --sunset
// doctor is given counts as announced now when it is not recorded yet.
func (d *doctor) checkDeprecation() {
	list, ok := d.announcements()
	if !ok {
		return
	}
	wc, _ := d.cfg.webConfig(nil)
	if wc.Deprecated {
		known := false
		for _, a := range list {
			known = known || a.Version == d.cfg.deprecate && a.Sunset.Equal(wc.Sunset)
		}
		if !known {
			list = append(list, storage.Announcement{Version: d.cfg.deprecate, Sunset: wc.Sunset, AnnouncedAt: time.Now().UTC()})
		}
	}
	versions := map[string]bool{}
	short := ""
	for _, a := range list {
		if !versions[a.Version] {
			versions[a.Version] = true
			if w := app.ShortWarningPhase(list, a.Version); w != "" {
				short = w
			}
		}
	}
	switch {
	case short != "":
		d.report(checkFail, "deprecation: "+short,
			"set a later --sunset (MAILBOLT_SUNSET); a new date is announced to the account owners at the next start")
	case len(list) == 0:
		d.report(checkOK, "deprecation: no version is deprecated", "")
	default:
		d.report(checkOK, "deprecation: every sunset is at least six months after its version's first announcement", "")
	}
}

// announcements are the recorded deprecation announcements, through the
// management socket while serve runs; none when there is no database yet.
// ok is false when there is nothing to check: a database that cannot be
// read (checkDatabase has said why), or none and no --deprecate.
func (d *doctor) announcements() (list []storage.Announcement, ok bool) {
	if c, err := web.DialAdmin(d.cfg.dataDir); err == nil {
		v, err := c.Notices()
		if err != nil {
			d.report(checkFail, "deprecation: the announcements could not be listed through the management socket: "+err.Error(), "")
			return nil, false
		}
		for _, a := range v.Announcements {
			an := storage.Announcement{Version: a.Version, AnnouncedAt: a.AnnouncedAt, Upgrade: a.Upgrade}
			if a.Sunset != nil {
				an.Sunset = *a.Sunset
			}
			list = append(list, an)
		}
		return list, true
	}
	db, err := d.openReadOnly()
	if errors.Is(err, storage.ErrNoDatabase) {
		// Nothing is recorded yet: serve's first start would announce
		// the --deprecate doctor is given now, and refuse its --sunset
		// as checkDeprecation does.
		return nil, d.cfg.deprecate != ""
	}
	if err != nil {
		return nil, false
	}
	defer db.Close()
	err = db.View(func(tx *storage.Tx) error {
		list, err = tx.Announcements()
		return err
	})
	if err != nil {
		d.report(checkFail, "deprecation: the announcements could not be read: "+err.Error(), "")
		return nil, false
	}
	return list, true
}
