package app

import (
	"slices"
	"testing"

	"mailbolt/storage"
)

// A key records who made it, and removing a member revokes the live keys
// that person made, from the dashboard or with a key they made (and so on
// down the chain), in the removal's own transaction and audited; other
// people's keys, the operator's and keys made before makers were recorded
// stay. keepKeys keeps them.
func TestRemovingAMemberRevokesTheKeysTheyMade(t *testing.T) {
	a, _ := newTestApp(t)
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	op := operatorOf(t, a, acct.ID)
	var members []storage.TeamMember
	for _, m := range []struct{ email, role string }{{"Dev@Example.com", "developer"}, {"ann@example.com", "developer"}, {"kim@example.com", "developer"}} {
		mem, _, err := a.AddMember(op, m.email, m.role)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, mem)
	}
	dev, ann, kim := members[0], members[1], members[2]
	session := func(m storage.TeamMember) Principal {
		return Principal{Kind: KindSession, Account: acct, Scopes: RoleScopes[m.Role], Actor: m.Email, Role: m.Role}
	}
	mk := func(p Principal, name string) storage.APIKey {
		t.Helper()
		k, err := a.CreateKey(p, KeyInput{Name: name, Scopes: []string{ScopeMessagesWrite, ScopeAPIKeysWrite}})
		if err != nil {
			t.Fatal(err)
		}
		return k.Key
	}
	devKey := mk(session(dev), "dev's")
	child := mk(KeyPrincipal(devKey, acct), "made with dev's")
	grandchild := mk(KeyPrincipal(child, acct), "made with that")
	annKey := mk(session(ann), "ann's")
	opKey := mk(op, "the operator's")
	revokedEarlier := mk(session(dev), "revoked earlier")
	if _, err := a.RevokeKey(op, revokedEarlier.ID); err != nil {
		t.Fatal(err)
	}
	kimKey := mk(session(kim), "kim's")
	// A key stored before makers were recorded has none.
	old := storage.APIKey{ID: NewID(), AccountID: acct.ID, Name: "old", Prefix: "svc_live_oldoldol", Hash: HashSecret("old"), Scopes: []string{ScopeMessagesWrite}}
	if err := a.db.Update(func(tx *storage.Tx) error { return tx.InsertAPIKey(old) }); err != nil {
		t.Fatal(err)
	}

	for k, want := range map[string]string{devKey.ID: dev.Email, child.ID: devKey.ID, grandchild.ID: child.ID, opKey.ID: "operator", old.ID: ""} {
		if got, _ := a.Key(op, k); got.CreatedBy != want {
			t.Errorf("key %s %q: created_by %q, want %q", k, got.Name, got.CreatedBy, want)
		}
	}
	counts, err := a.MemberKeys(op, members)
	if err != nil {
		t.Fatal(err)
	}
	if counts[dev.ID] != 3 || counts[ann.ID] != 1 || counts[kim.ID] != 1 {
		t.Errorf("live keys per member %v, want dev 3, ann 1, kim 1", counts)
	}

	r, err := a.RemoveMember(op, dev.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	var revoked []string
	for _, k := range r.RevokedKeys {
		revoked = append(revoked, k.ID)
	}
	if !slices.Equal(revoked, []string{devKey.ID, child.ID, grandchild.ID}) || r.Member.Email != dev.Email {
		t.Errorf("removal revoked %v (%s), want dev's key and the two made down its chain", revoked, r.Member.Email)
	}
	for _, k := range []storage.APIKey{devKey, child, grandchild} {
		if got, _ := a.Key(op, k.ID); got.RevokedAt == nil {
			t.Errorf("%q still live after its maker's removal", k.Name)
		}
	}
	for _, k := range []storage.APIKey{annKey, opKey, old, kimKey} {
		if got, _ := a.Key(op, k.ID); got.RevokedAt != nil {
			t.Errorf("%q revoked by dev's removal", k.Name)
		}
	}
	audit, _, _, err := a.AuditLog(op, storage.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var audited []string
	for _, e := range audit {
		if e.Action == "api_key.revoke" && e.Target != revokedEarlier.ID {
			audited = append(audited, e.Target)
		}
	}
	slices.Sort(audited)
	slices.Sort(revoked)
	if !slices.Equal(audited, revoked) {
		t.Errorf("api_key.revoke entries for %v, want %v", audited, revoked)
	}

	// keepKeys: ann goes, her key stays.
	if r, err := a.RemoveMember(op, ann.ID, true); err != nil || len(r.RevokedKeys) != 0 {
		t.Fatalf("removal keeping keys: %+v %v", r, err)
	}
	if got, _ := a.Key(op, annKey.ID); got.RevokedAt != nil {
		t.Error("ann's key revoked though the removal kept it")
	}
	// A removal that fails revokes nothing.
	if _, err := a.RemoveMember(session(kim), kim.ID, false); !HasCode(err, CodeInsufficientScopes) {
		t.Fatalf("a developer removing a member: %v", err)
	}
	if got, _ := a.Key(op, kimKey.ID); got.RevokedAt != nil {
		t.Error("a refused removal revoked a key")
	}
}

// A removal takes away no more than its remover could take away itself:
// an admin removing a former owner who made a "*" key is refused, naming
// the key, unless it keeps the keys; cancelling a pending invitation of an
// address whose earlier membership's keys were kept revokes nothing.
func TestRemovalRevokesOnlyWhatTheRemoverCould(t *testing.T) {
	a, _ := newTestApp(t)
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	op := operatorOf(t, a, acct.ID)
	bob, _, err := a.AddMember(op, "bob@example.com", "owner")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range [][2]string{{"olga@example.com", "owner"}, {"carl@example.com", "admin"}} {
		if _, _, err := a.AddMember(op, m[0], m[1]); err != nil {
			t.Fatal(err)
		}
	}
	star, err := a.CreateKey(Principal{Kind: KindSession, Account: acct, Scopes: RoleScopes["owner"], Actor: bob.Email, Role: "owner"}, KeyInput{Name: "production"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ChangeRole(op, bob.ID, "developer"); err != nil {
		t.Fatal(err)
	}
	carl := Principal{Kind: KindSession, Account: acct, Scopes: RoleScopes["admin"], Actor: "carl@example.com", Role: "admin"}
	_, err = a.RemoveMember(carl, bob.ID, false)
	if !HasCode(err, CodeInsufficientScopes) || !slices.Equal(AsError(err).Details["keys"].([]string), []string{star.Key.ID}) {
		t.Fatalf("an admin removing a former owner with a * key: %v, want INSUFFICIENT_SCOPES naming the key", err)
	}
	if k := mustKeyOf(t, a, op, star.Key.ID); k.RevokedAt != nil {
		t.Fatal("a refused removal revoked the key")
	}
	if _, err := a.MemberByEmail(op, bob.Email); err != nil {
		t.Fatalf("a refused removal removed the member: %v", err)
	}
	// Keeping the keys, the admin may remove him; the key lives on.
	if r, err := a.RemoveMember(carl, bob.ID, true); err != nil || len(r.RevokedKeys) != 0 {
		t.Fatalf("the admin removing him, keeping keys: %+v %v", r, err)
	}
	// Invited again and the invitation cancelled: the kept key stays.
	inv, err := a.Invite(carl, "bob@example.com", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := a.RemoveMember(carl, inv.Member.ID, false); err != nil || len(r.RevokedKeys) != 0 {
		t.Fatalf("cancelling the invitation: %+v %v", r, err)
	}
	if k := mustKeyOf(t, a, op, star.Key.ID); k.RevokedAt != nil {
		t.Error("cancelling an invitation revoked a key the earlier removal kept")
	}
}

// A request that began before its caller lost its standing cannot mint a
// key after: a key revoked meanwhile, or a person removed meanwhile, is
// refused inside the transaction that would store the new key.
func TestCreateKeyRechecksItsCreator(t *testing.T) {
	a, _ := newTestApp(t)
	acct, e := a.CreateAccount(AccountInput{Name: "acme"})
	if e != nil {
		t.Fatal(e)
	}
	op := operatorOf(t, a, acct.ID)
	dee, _, err := a.AddMember(op, "dee@example.com", "developer")
	if err != nil {
		t.Fatal(err)
	}
	session := Principal{Kind: KindSession, Account: acct, Scopes: RoleScopes["developer"], Actor: dee.Email, Role: "developer"}
	k, err := a.CreateKey(session, KeyInput{Name: "hers", Scopes: []string{ScopeAPIKeysWrite}})
	if err != nil {
		t.Fatal(err)
	}
	withKey := KeyPrincipal(k.Key, acct) // authenticated before the removal
	if _, err := a.RemoveMember(op, dee.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateKey(withKey, KeyInput{Name: "late"}); !HasCode(err, CodeInvalidAPIKey) {
		t.Errorf("a key revoked meanwhile making a key: %v, want INVALID_API_KEY", err)
	}
	if _, err := a.CreateKey(session, KeyInput{Name: "late"}); !HasCode(err, CodeUnauthorized) {
		t.Errorf("a removed person's session making a key: %v, want UNAUTHORIZED", err)
	}
	keys, _, _, _ := a.ListKeys(op, storage.ListOptions{Limit: 10})
	for _, k := range keys {
		if k.Name == "late" {
			t.Errorf("a key was made after its creator's removal: %+v", k)
		}
	}
}

func mustKeyOf(t *testing.T, a *App, p Principal, id string) storage.APIKey {
	t.Helper()
	k, err := a.Key(p, id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
