package app

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"mailbolt/storage"
)

func TestPasswordHashes(t *testing.T) {
	h := hashPassword("a password of some length")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if h2 := hashPassword("a password of some length"); h2 == h {
		t.Error("two hashes of one password are equal: no salt")
	}
	if !checkPassword(h, "a password of some length") {
		t.Error("the password does not match its hash")
	}
	for _, bad := range []string{"a password of some lengtH", "", "a password of some length "} {
		if checkPassword(h, bad) {
			t.Errorf("%q matches", bad)
		}
	}
	for _, malformed := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$AAAA$AAAA", strings.Replace(h, "m=19456", "m=99999999", 1),
		strings.Replace(h, "t=2", "t=0", 1), h[:len(h)-10] + "!!!!"} {
		if checkPassword(malformed, "a password of some length") {
			t.Errorf("malformed hash %q matches", malformed)
		}
	}
	for pw, ok := range map[string]bool{"elevenchars": false, "twelve chars": true, "ünïcödé-pw12": true,
		strings.Repeat("x", MaxPasswordBytes+1): false, "bad\xffutf8 more": false} {
		if err := checkPasswordRules("password", pw); (err == nil) != ok {
			t.Errorf("%q: %v", pw, err)
		}
	}
}

// Each role's scopes: a viewer reads only, a developer does not change the
// team, an admin holds everything but "*", and only "*" grants ownership.
func TestRoleScopes(t *testing.T) {
	for _, s := range RoleScopes["viewer"] {
		if !strings.HasSuffix(s, ":read") {
			t.Errorf("viewer holds %s", s)
		}
	}
	if HasScope(RoleScopes["developer"], ScopeTeamWrite) || !HasScope(RoleScopes["developer"], ScopeAPIKeysWrite) {
		t.Error("developer: team:write held, or api_keys:write not held")
	}
	if slices.Contains(RoleScopes["admin"], ScopeAll) || !CoversScopes(RoleScopes["admin"], Scopes) {
		t.Error("admin must hold every scope but *")
	}
	for _, role := range Roles {
		if _, ok := RoleScopes[role]; !ok {
			t.Errorf("no scopes for role %s", role)
		}
		admin := Principal{Kind: KindSession, Scopes: RoleScopes["admin"]}
		owner := Principal{Kind: KindSession, Scopes: RoleScopes["owner"]}
		if err := mayGrant(owner, role); err != nil {
			t.Errorf("an owner may not grant %s: %v", role, err)
		}
		if err := mayGrant(admin, role); (err == nil) != (role == "developer" || role == "viewer") {
			t.Errorf("an admin granting %s: %v", role, err)
		}
	}
}

// A member creates keys only inside the role's scopes.
func TestSessionsCreateKeysInsideTheirRole(t *testing.T) {
	a, _ := newTestApp(t)
	acct, err := a.CreateAccount(AccountInput{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := a.OperatorIn(acct.ID)
	login := func(email, role string) Principal {
		t.Helper()
		_, link, err := a.AddMember(op, email, role)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.SetPassword(link.Token, "", "a good long password", ""); err != nil {
			t.Fatal(err)
		}
		_, s, err := a.Login(email, "a good long password", "")
		if err != nil {
			t.Fatal(err)
		}
		return s.Principal
	}
	dev, admin, viewer := login("dev@example.com", "developer"), login("ada@example.com", "admin"), login("vic@example.com", "viewer")
	if _, err := a.CreateKey(dev, KeyInput{Name: "ci", Scopes: []string{ScopeMessagesWrite}}); err != nil {
		t.Errorf("a developer's key inside the role: %v", err)
	}
	for _, c := range []struct {
		p      Principal
		scopes []string
		code   string
	}{
		{dev, []string{ScopeTeamWrite}, CodeInsufficientScopes},
		{dev, []string{ScopeAll}, CodeInsufficientScopes},
		{admin, []string{ScopeAll}, CodeInsufficientScopes},
		{viewer, []string{ScopeMessagesRead}, CodeInsufficientScopes}, // no api_keys:write at all
	} {
		_, err := a.CreateKey(c.p, KeyInput{Name: "x", Scopes: c.scopes})
		var e *Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s creating a key with %v: %v", c.p.Role, c.scopes, err)
		}
	}
	if _, err := a.CreateKey(admin, KeyInput{Name: "all but *", Scopes: Scopes}); err != nil {
		t.Errorf("an admin's key with every scope: %v", err)
	}
}

// The sweeper removes expired password links, sessions and audit entries.
func TestDashboardRecordsExpire(t *testing.T) {
	a, clock := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	op, _ := a.OperatorIn(acct.ID)
	_, link, err := a.AddMember(op, "ann@example.com", "owner")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.LinkInfo(link.Token); err != nil {
		t.Fatal(err)
	}
	clock.add(PasswordLinkTTL)
	var e *Error
	if _, err := a.LinkInfo(link.Token); !errors.As(err, &e) || e.Code != CodeNotFound {
		t.Errorf("an expired link: %v", err)
	}
	if _, err := a.SetPassword(link.Token, "", "a good long password", ""); !errors.As(err, &e) || e.Code != CodeNotFound {
		t.Errorf("setting a password with an expired link: %v", err)
	}
	clock.add(a.opts.EventRetention)
	if _, err := a.Sweep(); err != nil {
		t.Fatal(err)
	}
	a.db.View(func(tx *storage.Tx) error {
		if _, err := tx.PasswordLink(HashSecret(link.Token)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the expired link is still stored: %v", err)
		}
		if list, _, _ := tx.AuditLog(acct.ID, storage.ListOptions{Limit: 10}); len(list) != 0 || tx.AuditCount(acct.ID) != 0 {
			t.Errorf("audit entries past retention: %v (count %d)", list, tx.AuditCount(acct.ID))
		}
		return nil
	})
}

// RFC 6238 Appendix B's SHA-1 vectors (seed "12345678901234567890"), cut
// to 6 digits as RFC 4226 §5.3 does.
func TestTOTPVectors(t *testing.T) {
	seed := []byte("12345678901234567890")
	for unix, want := range map[int64]string{59: "287082", 1111111109: "081804", 1111111111: "050471",
		1234567890: "005924", 2000000000: "279037", 20000000000: "353130"} {
		if got := TOTPCode(seed, time.Unix(unix, 0)); got != want {
			t.Errorf("T=%d: %s, want %s", unix, got, want)
		}
	}
	now := time.Unix(1111111111, 0)
	step := now.Unix() / 30
	for _, c := range []struct {
		at   time.Time
		last int64
		ok   bool
	}{
		{now, 0, true}, {now.Add(-30 * time.Second), 0, true}, {now.Add(30 * time.Second), 0, true},
		{now.Add(-60 * time.Second), 0, false}, {now.Add(90 * time.Second), 0, false},
		{now, step, false}, // used already
	} {
		if _, ok := checkTOTP(seed, TOTPCode(seed, now), c.at, c.last); ok != c.ok {
			t.Errorf("a code of %v checked at %v after step %d: %v", now, c.at, c.last, ok)
		}
	}
}
