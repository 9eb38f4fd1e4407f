package app

import (
	"strings"
	"testing"
	"time"

	"mailbolt/storage"
)

// An invitation is accepted within InvitationTTL or not at all; after
// that it can be sent again, and the old link stays dead.
func TestInvitationsExpire(t *testing.T) {
	a, clk := newTestApp(t)
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	owner := keyIn(acct.ID)
	late, e := a.Invite(owner, "late@example.com", "developer")
	if e != nil {
		t.Fatal(e)
	}
	clk.add(6 * 24 * time.Hour)
	onTime, e := a.Invite(owner, "ontime@example.com", "viewer")
	if e != nil {
		t.Fatal(e)
	}
	// Six days on, the first is still good; a second invitation of the
	// same address is a conflict, as it always was.
	if _, e := a.Invitee(late.Token); e != nil {
		t.Fatalf("a 6-day-old invitation: %v", e)
	}
	if _, e := a.Invite(owner, "late@example.com", "admin"); !HasCode(e, CodeConflict) {
		t.Fatalf("inviting a pending address again: %v, want CONFLICT", e)
	}

	clk.add(24 * time.Hour) // the first is 7 days old now
	if _, e := a.Invitee(late.Token); !HasCode(e, CodeGone) || !strings.Contains(AsError(e).Message, "expired on 29 November 2026 at 12:00 UTC") {
		t.Fatalf("the accept page of a 7-day-old invitation: %v, want GONE with its end", e)
	}
	if _, e := a.AcceptInvitation(late.Token, "", "192.0.2.1"); !HasCode(e, CodeGone) {
		t.Fatalf("accepting a 7-day-old invitation: %v, want GONE", e)
	}
	if _, e := a.AcceptInvitation(late.Token, "a long enough password", "192.0.2.1"); !HasCode(e, CodeGone) {
		t.Fatalf("accepting a 7-day-old invitation with a password: %v, want GONE", e)
	}
	if a.HasPassword("late@example.com") {
		t.Error("an expired invitation set a password")
	}
	// The one sent a day later still works, and once accepted it is
	// never expired.
	if m, e := a.AcceptInvitation(onTime.Token, "", "192.0.2.1"); e != nil || m.Status != "active" {
		t.Fatalf("accepting a 1-day-old invitation: %+v %v", m, e)
	}
	clk.add(30 * 24 * time.Hour)
	if m, e := a.Invitee(onTime.Token); e != nil || m.Status != "active" {
		t.Errorf("an accepted invitation's page a month on: %+v %v", m, e)
	}
	if _, e := a.Invite(owner, "ontime@example.com", "admin"); !HasCode(e, CodeConflict) {
		t.Errorf("inviting an active member again: %v, want CONFLICT", e)
	}

	// The expired one is sent again: a new member and token, the old link
	// not found, the new one accepted.
	again, e := a.Invite(owner, "late@example.com", "admin")
	if e != nil {
		t.Fatalf("inviting an expired address again: %v", e)
	}
	if again.Member.ID == late.Member.ID || again.Token == late.Token || again.Member.Role != "admin" {
		t.Errorf("the new invitation %+v reuses the old one %+v", again.Member, late.Member)
	}
	if _, e := a.Invitee(late.Token); !HasCode(e, CodeNotFound) {
		t.Errorf("the replaced invitation: %v, want NOT_FOUND", e)
	}
	if m, e := a.AcceptInvitation(again.Token, "", "192.0.2.1"); e != nil || m.Status != "active" || m.Role != "admin" {
		t.Errorf("accepting the new invitation: %+v %v", m, e)
	}
	team, _, _, e := a.Team(owner, storage.ListOptions{Limit: 100})
	if e != nil {
		t.Fatal(e)
	}
	n := 0
	for _, m := range team {
		if m.Email == "late@example.com" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("late@example.com is on the team %d times", n)
	}
}

// Replacing an expired invitation removes it, so it takes what removing
// takes: an owner or admin invitation only by a caller holding "*".
func TestReplacingAnExpiredInvitationFollowsTheRemovalRule(t *testing.T) {
	a, clk := newTestApp(t)
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	boss, e := a.Invite(keyIn(acct.ID), "boss@example.com", "owner")
	if e != nil {
		t.Fatal(e)
	}
	clk.add(8 * 24 * time.Hour)
	narrow := keyIn(acct.ID, ScopeTeamWrite, ScopeTeamRead)
	if _, e := a.Invite(narrow, "boss@example.com", "viewer"); !HasCode(e, CodeForbidden) {
		t.Fatalf("team:write replacing an expired owner invitation: %v, want FORBIDDEN", e)
	}
	if _, e := a.Invitee(boss.Token); !HasCode(e, CodeGone) {
		t.Fatalf("the refused replacement changed the old invitation: %v", e)
	}
	again, e := a.Invite(keyIn(acct.ID), "boss@example.com", "viewer")
	if e != nil {
		t.Fatal(e)
	}
	entries, _, _, e := a.AuditLog(keyIn(acct.ID), storage.ListOptions{Limit: 10})
	if e != nil {
		t.Fatal(e)
	}
	var removed, invited bool
	for _, en := range entries {
		removed = removed || en.Action == "team.remove" && strings.Contains(en.Target, boss.Member.ID) && strings.Contains(en.Target, "invitation expired")
		invited = invited || en.Action == "team.invite" && strings.Contains(en.Target, "boss@example.com as viewer")
	}
	if !removed || !invited || again.Member.ID == boss.Member.ID {
		t.Errorf("audit log %+v: want the expired invitation's removal and the new one", entries)
	}
}

func TestDaysSaysHowLongALinkWorks(t *testing.T) {
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7 days", 48 * time.Hour: "2 days",
		47 * time.Hour: "47 hours", time.Hour: "1 hour"} {
		if got := days(d); got != want {
			t.Errorf("days(%v) = %q, want %q", d, got, want)
		}
	}
}
