package app

import (
	"errors"
	"testing"
	"time"

	"mailbolt/storage"
)

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

// An invitation never changes a password that exists, nor sets one once
// accepted: its token is seen by whoever invited, and a person's password
// is shared by all their accounts, so an admin of one account must not
// take over the owner of another with it.
func TestInvitationsDoNotTakeOverPasswords(t *testing.T) {
	a, _ := newTestApp(t)
	victim, err := a.CreateAccount(AccountInput{Name: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	attacker, err := a.CreateAccount(AccountInput{Name: "attacker"})
	if err != nil {
		t.Fatal(err)
	}
	vop, _ := a.OperatorIn(victim.ID)
	_, link, err := a.AddMember(vop, "boss@victim.test", "owner")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetPassword(link.Token, "", "the owner's own password", ""); err != nil {
		t.Fatal(err)
	}
	aop, _ := a.OperatorIn(attacker.ID)
	inv, err := a.Invite(aop, "boss@victim.test", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.AcceptInvitation(inv.Token, "a password the attacker chose", "")
	wantCode(t, err, CodeConflict)
	if _, _, err := a.Login("boss@victim.test", "the owner's own password", ""); err != nil {
		t.Fatalf("the owner's password no longer works: %v", err)
	}
	if _, _, err := a.Login("boss@victim.test", "a password the attacker chose", ""); err == nil {
		t.Fatal("the attacker's password logs in")
	}
	if m, err := a.AcceptInvitation(inv.Token, "", ""); err != nil || m.Status != "active" {
		t.Fatalf("accepting without a password: %+v %v", m, err)
	}

	// A newcomer sets a password when accepting, once: the accepted
	// token sets none after that.
	inv2, err := a.Invite(aop, "new@attacker.test", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AcceptInvitation(inv2.Token, "the newcomer's password", ""); err != nil {
		t.Fatal(err)
	}
	_, err = a.AcceptInvitation(inv2.Token, "another password entirely", "")
	wantCode(t, err, CodeConflict)
	if _, _, err := a.Login("new@attacker.test", "the newcomer's password", ""); err != nil {
		t.Fatalf("the newcomer's password: %v", err)
	}
	// A bad token is refused before any password is hashed or kept.
	_, err = a.AcceptInvitation("not-a-token", "some long password", "")
	wantCode(t, err, CodeNotFound)
}

// A set-password link made before the password last changed is void.
func TestOlderPasswordLinksAreVoid(t *testing.T) {
	a, c := newTestApp(t)
	acct, err := a.CreateAccount(AccountInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := a.OperatorIn(acct.ID)
	_, first, err := a.AddMember(op, "ann@example.com", "developer")
	if err != nil {
		t.Fatal(err)
	}
	c.add(time.Minute)
	second, err := a.ResetPassword(op, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	c.add(time.Minute)
	if _, err := a.SetPassword(second.Token, "", "ann's chosen password", ""); err != nil {
		t.Fatal(err)
	}
	c.add(time.Minute)
	_, err = a.LinkInfo(first.Token)
	wantCode(t, err, CodeNotFound)
	_, err = a.SetPassword(first.Token, "", "somebody else's password", "")
	wantCode(t, err, CodeNotFound)
	if _, _, err := a.Login("ann@example.com", "ann's chosen password", ""); err != nil {
		t.Fatalf("ann's password: %v", err)
	}
	// A link made after the change works.
	c.add(time.Minute)
	third, err := a.ResetPassword(op, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetPassword(third.Token, "", "ann's next password", ""); err != nil {
		t.Fatalf("a link made after the change: %v", err)
	}
}

// Five wrong second-factor codes in a row lock the person's codes, the
// right one included, for 15 minutes; the lock lives in the person's
// record, so a new login does not lift it.
func TestSecondFactorLocksAfterWrongCodes(t *testing.T) {
	a, c := newTestApp(t)
	acct, err := a.CreateAccount(AccountInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := a.OperatorIn(acct.ID)
	_, link, err := a.AddMember(op, "ann@example.com", "owner")
	if err != nil {
		t.Fatal(err)
	}
	const pw = "ann's long password"
	if _, err := a.SetPassword(link.Token, "", pw, ""); err != nil {
		t.Fatal(err)
	}
	_, s, err := a.Login("ann@example.com", pw, "")
	if err != nil {
		t.Fatal(err)
	}
	setup, err := a.BeginTOTP(s)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := b32.DecodeString(setup.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ConfirmTOTP(s, TOTPCode(seed, a.Now())); err != nil {
		t.Fatal(err)
	}
	c.add(time.Minute)
	_, s, err = a.Login("ann@example.com", pw, "")
	if err != nil || !s.SecondFactorDue {
		t.Fatalf("login with TOTP on: %+v %v", s, err)
	}
	right := TOTPCode(seed, a.Now())
	wrong := "000000"
	if wrong == right {
		wrong = "000001"
	}
	for range codeFailuresPerLock {
		wantCode(t, a.SecondFactor(s, wrong), CodeUnauthorized)
	}
	wantCode(t, a.SecondFactor(s, right), CodeRateLimitExceeded)
	_, s, err = a.Login("ann@example.com", pw, "")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.SecondFactor(s, right), CodeRateLimitExceeded)
	c.add(codeLock(codeFailuresPerLock) + time.Second)
	if err := a.SecondFactor(s, TOTPCode(seed, a.Now())); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
	if got := []time.Duration{codeLock(5), codeLock(10), codeLock(15), codeLock(500)}; got[0] != 15*time.Minute ||
		got[1] != 30*time.Minute || got[2] != time.Hour || got[3] != 24*time.Hour {
		t.Errorf("locks %v", got)
	}
}

// Roles change under the granting rules: an admin moves members between
// developer and viewer but neither makes nor unmakes an admin or owner;
// the last owner keeps the role; each change is in the audit log.
func TestChangeRole(t *testing.T) {
	a, _ := newTestApp(t)
	acct, err := a.CreateAccount(AccountInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := a.OperatorIn(acct.ID)
	member := func(email, role string) string {
		m, _, err := a.AddMember(op, email, role)
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	owner := member("olga@example.com", "owner")
	dev := member("dev@example.com", "developer")
	adm := member("adm@example.com", "admin")
	admin := Principal{Kind: KindSession, Account: acct, Scopes: RoleScopes["admin"], Actor: "adm@example.com"}

	if m, err := a.ChangeRole(admin, dev, "viewer"); err != nil || m.Role != "viewer" {
		t.Fatalf("an admin making a developer a viewer: %+v %v", m, err)
	}
	_, err = a.ChangeRole(admin, dev, "admin")
	wantCode(t, err, CodeForbidden)
	_, err = a.ChangeRole(admin, adm, "developer")
	wantCode(t, err, CodeForbidden)
	_, err = a.ChangeRole(op, dev, "boss")
	wantCode(t, err, CodeValidation)
	_, err = a.ChangeRole(op, "nope", "viewer")
	wantCode(t, err, CodeNotFound)

	// The last owner keeps the role; once another owner exists, not.
	_, err = a.ChangeRole(op, owner, "admin")
	wantCode(t, err, CodeConflict)
	if m, err := a.ChangeRole(op, dev, "owner"); err != nil || m.Role != "owner" {
		t.Fatalf("the operator making an owner: %+v %v", m, err)
	}
	if m, err := a.ChangeRole(op, owner, "admin"); err != nil || m.Role != "admin" {
		t.Fatalf("an owner stepping down beside another: %+v %v", m, err)
	}
	list, _, _, err := a.AuditLog(op, storage.ListOptions{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, e := range list {
		if e.Action == "team.role" {
			changes++
		}
	}
	if changes != 3 {
		t.Errorf("%d team.role entries in the audit log, want 3 (refused changes leave none)", changes)
	}
}
