package app

import (
	"strings"
	"testing"

	"mailbolt/storage"
)

func TestLocalAdminViews(t *testing.T) {
	a, _ := newTestApp(t)
	admin := LocalAdmin{App: a}
	acct, err := admin.CreateAccount(AccountInput{Name: "Big", Plan: "enterprise", RateLimit: 777})
	if err != nil {
		t.Fatal(err)
	}
	if acct.RateLimit != 777 || acct.BatchSize != Limits(storage.Account{Plan: "enterprise"}).BatchSize {
		t.Errorf("account limits: %+v", acct)
	}
	all, err := admin.ListAccounts()
	if err != nil || len(all) != 1 || all[0] != acct {
		t.Errorf("accounts %+v, %v", all, err)
	}
	k, err := admin.CreateKey(KeyInput{AccountID: acct.ID, Name: "ci"})
	if err != nil || k.Secret == "" || !strings.HasPrefix(k.Secret, k.Key.Prefix) || k.Key.Scopes[0] != ScopeAll {
		t.Fatalf("key %+v, %v", k, err)
	}
	revoked, err := admin.RevokeKey(k.Key.ID)
	if err != nil || revoked.RevokedAt == nil || revoked.ID != k.Key.ID {
		t.Fatalf("revoked %+v, %v", revoked, err)
	}
	if keys, err := admin.ListKeys(acct.ID); err != nil || len(keys) != 1 || keys[0].RevokedAt == nil {
		t.Errorf("keys %+v, %v", keys, err)
	}
	if _, err := admin.ListKeys("nobody"); !HasCode(err, CodeNotFound) {
		t.Errorf("keys of an unknown account: %v", err)
	}
}
