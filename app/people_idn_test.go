package app

import (
	"strings"
	"testing"
	"time"

	"mailbolt/storage"
)

// TestPeopleEitherIDNSpelling: team members, dashboard logins and contact
// addresses take the one form recipients do, the domain in A-labels, so
// the two spellings of an internationalised domain are one member and one
// login (they were two members, and a login in the other spelling
// failed); the address is shown in that form; a domain outside ASCII that
// is no IDN is refused naming the field.
func TestPeopleEitherIDNSpelling(t *testing.T) {
	a, _ := newTestApp(t)
	const ann = "ann@" + idnALabel
	acct, err := a.CreateAccount(AccountInput{Name: "acme", Email: "Ops@" + idnUnicode})
	if err != nil || acct.Email != "ops@"+idnALabel {
		t.Fatalf("contact address %q, %v", acct.Email, err)
	}
	email := "desk@bücher.example"
	if acct, err := a.UpdateAccount(acct.ID, AccountUpdate{Email: &email}); err != nil || acct.Email != "desk@xn--bcher-kva.example" {
		t.Errorf("contact address updated to %q, %v", acct.Email, err)
	}
	op := operatorOf(t, a, acct.ID)
	m, link, err := a.AddMember(op, "Ann@"+idnUnicode, "admin")
	if err != nil || m.Email != ann || link.Email != ann {
		t.Fatalf("member %+v, link %+v, %v", m, link, err)
	}
	if _, _, err := a.AddMember(op, ann, "viewer"); AsError(err).Code != CodeConflict {
		t.Errorf("the other spelling added as a second member: %v", err)
	}
	if _, err := a.Invite(op, "ANN@"+strings.ToUpper(idnUnicode), "viewer"); AsError(err).Code != CodeConflict {
		t.Errorf("the other spelling invited as a second member: %v", err)
	}
	if got, err := a.SetPassword(link.Token, "", "a good long password", ""); err != nil || got != ann {
		t.Fatalf("set password: %q %v", got, err)
	}
	var sessions []Session
	for _, spelling := range []string{ann, "Ann@" + idnUnicode} {
		_, s, err := a.Login(spelling, "a good long password", "")
		if err != nil || s.Email != ann || s.Principal.Role != "admin" {
			t.Errorf("login as %s: %+v %v", spelling, s, err)
		}
		sessions = append(sessions, s)
		if got, err := a.MemberByEmail(op, spelling); err != nil || got.ID != m.ID {
			t.Errorf("member by %s: %+v %v", spelling, got, err)
		}
	}
	if l, err := a.ResetPassword(op, "ann@"+idnUnicode); err != nil || l.Email != ann {
		t.Errorf("reset by the other spelling: %+v %v", l, err)
	}

	// The keys the person made are theirs under either spelling: one
	// made from a session, and one stored before this change with the
	// Unicode spelling as its maker.
	made, err := a.CreateKey(sessions[1].Principal, KeyInput{Name: "ci", Scopes: []string{ScopeMessagesWrite}})
	if err != nil || made.Key.CreatedBy != ann {
		t.Fatalf("key made from a session: %+v %v", made.Key, err)
	}
	legacy := storage.APIKey{ID: NewID(), AccountID: acct.ID, Name: "old", Prefix: "svc_live_oldoldol", Hash: HashSecret("old"),
		Scopes: []string{ScopeMessagesWrite}, CreatedBy: "ann@" + idnUnicode}
	if err := a.db.Update(func(tx *storage.Tx) error { return tx.InsertAPIKey(legacy) }); err != nil {
		t.Fatal(err)
	}
	if counts, err := a.MemberKeys(op, []storage.TeamMember{m}); err != nil || counts[m.ID] != 2 {
		t.Errorf("keys of %s: %v %v, want 2", ann, counts, err)
	}
	r, err := a.RemoveMember(op, m.ID, false)
	if err != nil || len(r.RevokedKeys) != 2 {
		t.Errorf("removal revoked %+v, %v; want both keys", r.RevokedKeys, err)
	}

	// The first start's owner link takes the address in either spelling.
	fresh, _ := newTestApp(t)
	boot, err := fresh.BootstrapIfEmpty()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fresh.SetPassword(boot.OwnerLink, "Boss@"+idnUnicode, "the owner's long password", ""); err != nil || got != "boss@"+idnALabel {
		t.Fatalf("owner link: %q %v", got, err)
	}
	if _, s, err := fresh.Login("boss@"+idnALabel, "the owner's long password", ""); err != nil || s.Principal.Role != "owner" {
		t.Errorf("the owner's login in the other spelling: %+v %v", s, err)
	}

	const noIDN = "x@a\u00a0b.org"
	_, _, memberErr := a.AddMember(op, noIDN, "viewer")
	_, inviteErr := a.Invite(op, noIDN, "viewer")
	_, contactErr := a.CreateAccount(AccountInput{Name: "b", Email: noIDN})
	for name, err := range map[string]error{"member": memberErr, "invite": inviteErr, "contact": contactErr} {
		if e := AsError(err); e == nil || e.Code != CodeValidation || e.Details["field"] != "email" {
			t.Errorf("%s with a domain that is no IDN: %v", name, err)
		}
	}
}

// Addresses with a domain outside ASCII that is no valid IDN were taken
// before schema 20 (members, logins) and 19 (recipients), and stay keyed in
// lower case. They are refused for anything new, but still found: a member
// that `team remove` could not find would keep its keys, and its login
// would always fail.
func TestPeopleStoredWithADomainThatIsNoIDN(t *testing.T) {
	a, _ := newTestApp(t)
	acct, err := a.CreateAccount(AccountInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	op := operatorOf(t, a, acct.ID)
	const stored = "ann@ab--cü.de" // "ab--cü": IDNA refuses "--" in the third and fourth places
	if _, err := storage.AddressKey(stored); err == nil {
		t.Fatalf("%s is a valid IDN; the test needs one that is not", stored)
	}
	err = a.db.Update(func(tx *storage.Tx) error {
		if err := tx.InsertTeamMember(storage.TeamMember{ID: "m-old", AccountID: acct.ID, Email: stored,
			Role: "admin", Status: "active", InvitedAt: time.Now()}); err != nil {
			return err
		}
		_, _, err := tx.PutSuppression(storage.Suppression{AccountID: acct.ID, Recipient: stored, Reason: "manual", CreatedAt: time.Now()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := a.MemberByEmail(op, "ANN@AB--CÜ.DE"); err != nil || m.ID != "m-old" {
		t.Fatalf("member by its stored address: %+v %v", m, err)
	}
	link, err := a.ResetPassword(op, stored)
	if err != nil {
		t.Fatalf("reset password: %v", err)
	}
	if _, err := a.SetPassword(link.Token, "", "a good long password", ""); err != nil {
		t.Fatalf("set password: %v", err)
	}
	if _, s, err := a.Login(stored, "a good long password", ""); err != nil || s.Principal.Role != "admin" {
		t.Errorf("login: %+v %v", s, err)
	}
	if list, err := a.FindSuppressions(op, stored); err != nil || len(list) != 1 {
		t.Errorf("suppressions of %s: %+v %v", stored, list, err)
	}
	if _, _, err := a.AddMember(op, "bob@ab--cü.de", "viewer"); AsError(err) == nil || AsError(err).Code != CodeValidation {
		t.Errorf("a new member with a domain that is no IDN: %v", err)
	}
}
