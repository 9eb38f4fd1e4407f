package app

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"mailbolt/storage"
)

// Deprecation is the deprecation serve was started with (--deprecate,
// --sunset, --deprecation-notes-url, --dev).
type Deprecation struct {
	Version  string    // "" when no version is deprecated
	Sunset   time.Time // zero when no sunset date was given
	NotesURL string    // the migration notes, linked from the notice
	Dev      bool      // a warning phase under six months is warned about, not refused
}

// Reasons a notice could not be sent, as recorded per account.
const (
	NoticeNotConfigured    = "not_configured"    // no --system-from
	NoticeSenderUnverified = "sender_unverified" // no account has the system sender's domain verified
	NoticeNoRecipient      = "no_recipient"      // neither an owner nor a contact email
	NoticeFailed           = "failed"            // the notice could not be built
)

// Announced is what a start with a deprecation did: New when it recorded
// the announcement (and filed its notices), and Warning when the warning
// phase is under six months but the start went on (--dev, or a server
// upgraded while already deprecating).
type Announced struct {
	Announcement storage.Announcement
	New          bool
	Notices      []storage.Notice
	Warning      string
}

// EarliestSunset is the earliest sunset allowed from the first announcement of a
// version to its sunset (spec §9.4: at least six months).
func EarliestSunset(firstAnnounced time.Time) time.Time { return firstAnnounced.AddDate(0, 6, 0) }

// DeprecationHeaders are the Sunset (empty without a sunset date) and
// Warning headers every response carries while version is deprecated:
// the API sends them and the notice quotes them.
func DeprecationHeaders(version string, sunset time.Time) (sunsetHeader, warning string) {
	if sunset.IsZero() {
		return "", `299 - "API version ` + version + ` is deprecated"`
	}
	sunsetHeader = sunset.UTC().Format(http.TimeFormat)
	return sunsetHeader, `299 - "API version ` + version + ` is deprecated and will be removed after ` + sunsetHeader + `"`
}

// ShortWarningPhase names the dates when the announcements of a version
// leave less than six months from the first of them to the sunset of the
// newest; "" when they leave enough, or set no sunset.
func ShortWarningPhase(list []storage.Announcement, version string) string {
	var first, newest storage.Announcement
	for _, a := range list {
		if a.Version != version {
			continue
		}
		if first.Version == "" || a.AnnouncedAt.Before(first.AnnouncedAt) {
			first = a
		}
		if newest.Version == "" || !a.AnnouncedAt.Before(newest.AnnouncedAt) {
			newest = a
		}
	}
	if newest.Version == "" {
		return ""
	}
	return shortPhase(version, first.AnnouncedAt, newest.Sunset)
}

func shortPhase(version string, first, sunset time.Time) string {
	if sunset.IsZero() || !sunset.Before(EarliestSunset(first)) {
		return ""
	}
	return fmt.Sprintf("the sunset of %s on %s is less than six months after its first announcement on %s "+
		"(spec §9: the warning phase lasts at least six months; the earliest sunset is %s)",
		version, day(sunset), day(first), day(EarliestSunset(first)))
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// AnnounceDeprecation records, the first time the server starts with a
// (version, sunset) pair, that it was announced, and files a deprecation
// notice from the system sender to every owner of every account (or its
// contact address when it has no owner), or records why an account could
// not be told. A start with a pair already recorded, by this node or
// another, sends nothing. A sunset less than six months after the
// version's first announcement is refused (d.Dev only warns), except for a
// server upgraded while already deprecating: it records the announcement
// now and warns.
func (a *App) AnnounceDeprecation(d Deprecation) (Announced, error) {
	var list []storage.Announcement
	upgraded := false
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, err = tx.Announcements()
		upgraded = tx.UpgradeMarked()
		return err
	})
	if err != nil {
		return Announced{}, fmt.Errorf("read the deprecation announcements: %w", err)
	}
	if d.Version == "" {
		if upgraded { // not deprecating when upgraded: later announcements are checked in full
			err = a.db.Update(func(tx *storage.Tx) error { return tx.ClearUpgradeMark() })
		}
		return Announced{}, err
	}
	res, seen, err := judgeDeprecation(list, upgraded, d, a.Now())
	if err != nil || seen {
		return res, err
	}
	notices, mail, sent, err := a.deprecationNotices(res.Announcement, d.NotesURL)
	if err != nil {
		return Announced{}, err
	}
	err = a.db.Update(func(tx *storage.Tx) error {
		res.New, res.Notices = false, nil
		if err := tx.ClaimAnnouncement(res.Announcement); err != nil {
			return err
		}
		out := append([]storage.Notice(nil), notices...)
		if len(mail) > 0 {
			msgs, err := fileBatch(tx, mail, sent)
			if err != nil {
				return err
			}
			j := 0
			for i := range out {
				if out[i].Reason == "" {
					out[i].MessageID = msgs[j].ID
					j++
				}
			}
		}
		for _, n := range out {
			if err := tx.PutNotice(n); err != nil {
				return err
			}
		}
		res.New, res.Notices = true, out
		return nil
	})
	if errors.Is(err, storage.ErrExists) {
		return res, nil // another node recorded it first and sent the notices
	}
	if err != nil {
		return Announced{}, fmt.Errorf("record the deprecation announcement: %w", err)
	}
	return res, nil
}

// CheckSunset is AnnounceDeprecation's refusal of d, judged without the
// database from what it records: the announcements (list) and whether it
// carries the mark of a server upgraded while deprecating (upgraded).
// serve asks it before it opens the database for writing, so that a
// --sunset it refuses writes nothing.
func CheckSunset(list []storage.Announcement, upgraded bool, d Deprecation, now time.Time) error {
	if d.Version == "" {
		return nil
	}
	_, _, err := judgeDeprecation(list, upgraded, d, now)
	return err
}

// judgeDeprecation is the announcement a start with d makes at now, given
// those recorded (list) and the upgrade mark: seen when its (version,
// sunset) pair is recorded already, with the warning of a warning phase
// under six months that it starts with anyway, or the refusal of one.
func judgeDeprecation(list []storage.Announcement, upgraded bool, d Deprecation, now time.Time) (res Announced, seen bool, err error) {
	res = Announced{Announcement: storage.Announcement{Version: d.Version, Sunset: d.Sunset, AnnouncedAt: now}}
	first := now
	for _, an := range list {
		if an.Version != d.Version {
			continue
		}
		if an.AnnouncedAt.Before(first) {
			first = an.AnnouncedAt
		}
		if !seen && an.Sunset.Equal(d.Sunset) {
			res.Announcement, seen = an, true
		}
	}
	if short := shortPhase(d.Version, first, d.Sunset); short != "" {
		switch {
		case res.Announcement.Upgrade || !seen && upgraded && first.Equal(now):
			res.Announcement.Upgrade = true
			res.Warning = short + "; this server was already deprecating " + d.Version +
				" when it started recording announcements, so it starts, but `mailbolt doctor` fails until the dates allow six months"
		case d.Dev:
			res.Warning = short + " (--dev: starting anyway)"
		default:
			return Announced{}, false, errors.New("--sunset: " + short + ": choose a later --sunset")
		}
	}
	return res, seen, nil
}

// deprecationNotices lists the notice of an to every account, one per
// recipient, and prepares the mail of those that can be sent, in order.
func (a *App) deprecationNotices(an storage.Announcement, notesURL string) ([]storage.Notice, []prepared, []storage.Event, error) {
	type target struct {
		acct storage.Account
		to   []string
	}
	var targets []target
	err := a.db.View(func(tx *storage.Tx) error {
		accounts, _, err := tx.Accounts(storage.ListOptions{Limit: -1})
		if err != nil {
			return err
		}
		for _, acct := range accounts {
			members, _, err := tx.TeamMembers(acct.ID, storage.ListOptions{Limit: -1})
			if err != nil {
				return err
			}
			t := target{acct: acct}
			for _, m := range members {
				if m.Role == "owner" && m.Status == "active" {
					t.to = append(t.to, m.Email)
				}
			}
			if len(t.to) == 0 && acct.Email != "" {
				t.to = []string{acct.Email}
			}
			targets = append(targets, t)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list the accounts to tell of the deprecation: %w", err)
	}
	sender, why := a.invitationSender()
	var notices []storage.Notice
	var ins []MessageInput
	for _, t := range targets {
		n := storage.Notice{Version: an.Version, Sunset: an.Sunset, AccountID: t.acct.ID, At: an.AnnouncedAt}
		switch {
		case len(t.to) == 0:
			n.Reason = NoticeNoRecipient
			notices = append(notices, n)
			continue
		case sender.ID == "":
			n.Reason = why
			notices = append(notices, n)
			continue
		}
		for _, to := range t.to {
			n.Recipient = to
			notices = append(notices, n)
			ins = append(ins, a.deprecationMail(t.acct, an, to, notesURL))
		}
	}
	if len(ins) == 0 {
		return notices, nil, nil, nil
	}
	mail, sent, err := a.prepareBatch(operatorIn(sender), ins, false)
	if err != nil {
		a.log.Error("preparing the deprecation notices failed", "err", err)
		for i := range notices {
			if notices[i].Reason == "" {
				notices[i].Reason = NoticeFailed
			}
		}
		return notices, nil, nil, nil
	}
	return notices, mail, sent, nil
}

// deprecationMail is the notice of an to one recipient for acct.
func (a *App) deprecationMail(acct storage.Account, an storage.Announcement, to, notesURL string) MessageInput {
	sunsetHeader, warning := DeprecationHeaders(an.Version, an.Sunset)
	subject := "Mailbolt API " + an.Version + " is deprecated"
	when := "No sunset date is set yet; you will be told when one is."
	if !an.Sunset.IsZero() {
		subject += ": it stops working on " + day(an.Sunset)
		when = "From " + an.Sunset.UTC().Format(time.RFC3339) + " (" + day(an.Sunset) + ") on, every request to " +
			an.Version + " is answered 410 Gone."
	}
	body := "Version " + an.Version + " of the Mailbolt API, which the account " + acct.Name + " uses, is deprecated.\n\n" +
		when + "\n\nEvery API response now carries these headers:\n\n    Deprecation: true\n"
	if sunsetHeader != "" {
		body += "    Sunset: " + sunsetHeader + "\n"
	}
	body += "    Warning: " + warning + "\n\n"
	if notesURL != "" {
		body += "How to move on from " + an.Version + ":\n" + notesURL + "\n\n"
	}
	body += "You receive this notice as an owner (or the contact address) of the account " + acct.Name + ".\n"
	off := false
	return MessageInput{From: a.opts.SystemFrom, To: []string{to}, Subject: &subject, Text: &body,
		Unsubscribe: &off, Tags: []string{"deprecation-notice"}}
}

// DeprecationRecords are the recorded announcements and their notices.
func (a *App) DeprecationRecords() (list []storage.Announcement, notices []storage.Notice, err error) {
	err = a.db.View(func(tx *storage.Tx) error {
		if list, err = tx.Announcements(); err != nil {
			return err
		}
		notices, err = tx.Notices()
		return err
	})
	if err != nil {
		return nil, nil, Internal(err)
	}
	return list, notices, nil
}
