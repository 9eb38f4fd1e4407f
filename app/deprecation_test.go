package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dkim"
	"mailbolt/storage"
)

// noticeEnv is a live sending environment with a system sender on the
// verified acme.test, and accounts of every kind: two active owners (and
// an admin, who is not told), an invited owner only and a contact email,
// and none at all (acme itself). The invitations come from a key holding
// "*": only such a caller grants owner and admin.
func noticeEnv(t *testing.T, systemFrom string) (*sendEnv, []string) {
	t.Helper()
	e := newSendEnv(t, dkim.AlgEd25519, func(o *Options) { o.SystemFrom = "Mailbolt <team@acme.test>" })
	owned, _ := e.app.CreateAccount(AccountInput{Name: "Owned Co", Email: "contact@dest.test"})
	for _, m := range []struct{ email, role string }{{"ann@dest.test", "owner"}, {"bob@dest.test", "owner"}, {"cy@dest.test", "admin"}} {
		inv, ae := e.app.Invite(keyIn(owned.ID, ScopeAll), m.email, m.role)
		if ae != nil {
			t.Fatal(ae)
		}
		if _, ae := e.app.AcceptInvitation(inv.Token, "", ""); ae != nil {
			t.Fatal(ae)
		}
	}
	contact, _ := e.app.CreateAccount(AccountInput{Name: "Contact Co", Email: "desk@dest.test"})
	if _, ae := e.app.Invite(keyIn(contact.ID, ScopeAll), "later@dest.test", "owner"); ae != nil {
		t.Fatal(ae)
	}
	e.drain() // the invitations
	e.app.opts.SystemFrom = systemFrom
	return e, []string{e.acct, owned.ID, contact.ID}
}

// notices are the deprecation notices the sink received, by recipient.
func notices(e *sendEnv) map[string][]string {
	out := map[string][]string{}
	for _, m := range e.sink.Messages() {
		data := strings.ReplaceAll(string(m.Data), "=\r\n", "")
		if strings.Contains(data, "Subject: Mailbolt API v1 is deprecated") {
			out[m.To[0]] = append(out[m.To[0]], data)
		}
	}
	return out
}

func TestDeprecationNoticeReachesEachOwnerOnce(t *testing.T) {
	e, accts := noticeEnv(t, "Mailbolt <team@acme.test>")
	now := e.clock.now()
	sunset := now.AddDate(1, 0, 0).Truncate(24 * time.Hour)
	d := Deprecation{Version: "v1", Sunset: sunset, NotesURL: "https://mail.acme.test/docs/v2-migration"}
	res, err := e.app.AnnounceDeprecation(d)
	if err != nil || !res.New || res.Warning != "" {
		t.Fatalf("first announcement: %+v %v", res, err)
	}
	e.drain()
	got := notices(e)
	want := []string{"ann@dest.test", "bob@dest.test", "desk@dest.test"}
	if keys := slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(keys, want) {
		t.Fatalf("notices went to %v, want %v", keys, want)
	}
	sunsetHeader, warning := DeprecationHeaders("v1", sunset)
	for to, mails := range got {
		body := mails[0]
		for _, s := range []string{"<team@acme.test>", sunset.Format("2006-01-02"), "Sunset: " + sunsetHeader,
			"Warning: " + warning, "Deprecation: true", d.NotesURL} {
			if !strings.Contains(body, s) {
				t.Errorf("the notice to %s does not say %q:\n%s", to, s, body)
			}
		}
	}
	// What was recorded: the sent notices with their messages, and acme,
	// which has neither an owner nor a contact address.
	byAccount := map[string][]storage.Notice{}
	for _, n := range res.Notices {
		byAccount[n.AccountID] = append(byAccount[n.AccountID], n)
	}
	if n := byAccount[accts[0]]; len(n) != 1 || n[0].Reason != NoticeNoRecipient {
		t.Errorf("acme: %+v", n)
	}
	if n := byAccount[accts[1]]; len(n) != 2 || n[0].MessageID == "" || n[1].MessageID == "" {
		t.Errorf("owned: %+v", n)
	}

	// A restart with the same pair sends nothing; a new date sends again.
	e.clock.add(24 * time.Hour)
	if res, err := e.app.AnnounceDeprecation(d); err != nil || res.New {
		t.Fatalf("restart: %+v %v", res, err)
	}
	e.drain()
	if n := len(notices(e)["ann@dest.test"]); n != 1 {
		t.Fatalf("ann got %d notices after a restart, want 1", n)
	}
	d.Sunset = sunset.AddDate(0, 1, 0)
	if res, err := e.app.AnnounceDeprecation(d); err != nil || !res.New {
		t.Fatalf("a new sunset date: %+v %v", res, err)
	}
	e.drain()
	if mails := notices(e)["ann@dest.test"]; len(mails) != 2 || !strings.Contains(mails[1], d.Sunset.Format("2006-01-02")) {
		t.Fatalf("ann got %d notices after a new date, want 2", len(mails))
	}
}

func TestShortSunsetIsRefused(t *testing.T) {
	e, _ := noticeEnv(t, "Mailbolt <team@acme.test>")
	now := e.clock.now()
	if _, err := e.app.AnnounceDeprecation(Deprecation{Version: "v1", Sunset: now.AddDate(1, 0, 0)}); err != nil {
		t.Fatal(err)
	}
	// Two months on, a sunset five months after the first announcement.
	e.clock.add(60 * 24 * time.Hour)
	short := now.AddDate(0, 5, 0)
	_, err := e.app.AnnounceDeprecation(Deprecation{Version: "v1", Sunset: short})
	if err == nil || !strings.Contains(err.Error(), day(short)) || !strings.Contains(err.Error(), day(now)) {
		t.Fatalf("a short sunset: %v, want a refusal naming %s and %s", err, day(short), day(now))
	}
	e.drain()
	if n := len(notices(e)["ann@dest.test"]); n != 1 {
		t.Fatalf("a refused start sent notices: ann has %d", n)
	}
	res, err := e.app.AnnounceDeprecation(Deprecation{Version: "v1", Sunset: short, Dev: true})
	if err != nil || !res.New || !strings.Contains(res.Warning, day(now)) {
		t.Fatalf("--dev: %+v %v", res, err)
	}
	var list []storage.Announcement
	e.app.db.View(func(tx *storage.Tx) error { list, _ = tx.Announcements(); return nil })
	if w := ShortWarningPhase(list, "v1"); !strings.Contains(w, day(short)) {
		t.Fatalf("doctor's check of the newest sunset: %q", w)
	}
}

// CheckSunset refuses what AnnounceDeprecation would, from the records
// alone: on a first start the announcement is now.
func TestCheckSunsetWithoutTheDatabase(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	short, long := now.AddDate(0, 2, 0), now.AddDate(0, 7, 0)
	earlier := []storage.Announcement{{Version: "v1", Sunset: now.AddDate(0, 8, 0), AnnouncedAt: now.AddDate(0, -5, 0)}}
	for _, c := range []struct {
		name     string
		list     []storage.Announcement
		upgraded bool
		d        Deprecation
		refused  bool
	}{
		{"first start, short", nil, false, Deprecation{Version: "v1", Sunset: short}, true},
		{"first start, six months", nil, false, Deprecation{Version: "v1", Sunset: long}, false},
		{"first start, no sunset", nil, false, Deprecation{Version: "v1"}, false},
		{"first start, short, --dev", nil, false, Deprecation{Version: "v1", Sunset: short, Dev: true}, false},
		{"announced five months ago", earlier, false, Deprecation{Version: "v1", Sunset: short}, false},
		{"another version announced", []storage.Announcement{{Version: "v0", AnnouncedAt: now.AddDate(-1, 0, 0)}}, false,
			Deprecation{Version: "v1", Sunset: short}, true},
		{"upgraded while deprecating", nil, true, Deprecation{Version: "v1", Sunset: short}, false},
		{"not deprecating", nil, false, Deprecation{}, false},
	} {
		err := CheckSunset(c.list, c.upgraded, c.d, now)
		if c.refused != (err != nil) {
			t.Errorf("%s: %v, refused %v", c.name, err, c.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "--sunset") || !strings.Contains(err.Error(), day(short)) ||
			!strings.Contains(err.Error(), day(now))) {
			t.Errorf("%s: %v, want the flag, the sunset and the first announcement named", c.name, err)
		}
	}
}

func TestNoSenderIsRecordedPerAccount(t *testing.T) {
	for _, c := range []struct{ from, reason string }{{"", NoticeNotConfigured}, {"team@unverified.test", NoticeSenderUnverified}} {
		e, accts := noticeEnv(t, c.from)
		res, err := e.app.AnnounceDeprecation(Deprecation{Version: "v1", Sunset: e.clock.now().AddDate(1, 0, 0)})
		if err != nil || !res.New {
			t.Fatalf("%q: %+v %v", c.from, res, err)
		}
		e.drain()
		if len(notices(e)) != 0 {
			t.Fatalf("%q: notices sent without a sender", c.from)
		}
		reasons := map[string]string{}
		for _, n := range res.Notices {
			reasons[n.AccountID] = n.Reason
		}
		if reasons[accts[0]] != NoticeNoRecipient || reasons[accts[1]] != c.reason || reasons[accts[2]] != c.reason {
			t.Fatalf("%q: reasons %v", c.from, reasons)
		}
	}
}
