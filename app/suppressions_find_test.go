package app

import "testing"

func TestFindSuppressionsIsExactAndPerAccount(t *testing.T) {
	a, _ := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	other, _ := a.CreateAccount(AccountInput{Name: "other"})
	p := keyIn(acct.ID)
	a.AddSuppression(p, "ann@example.com", "", "")
	a.AddSuppression(p, "ann@example.com", "unsubscribe", "broadcast")
	a.AddSuppression(p, "anne@example.com", "", "")
	a.AddSuppression(keyIn(other.ID), "bob@example.com", "", "")

	got, err := a.FindSuppressions(p, " Ann@Example.com ")
	if err != nil || len(got) != 2 || got[0].Stream != "" || got[1].Stream != "broadcast" || got[0].Recipient != "ann@example.com" {
		t.Fatalf("ann: %+v, %v", got, err)
	}
	if got, err := a.FindSuppressions(p, "bob@example.com"); err != nil || len(got) != 0 {
		t.Errorf("another account's entry is found: %+v, %v", got, err)
	}
	if _, err := a.FindSuppressions(p, "not an address"); AsError(err).Code != CodeValidation {
		t.Errorf("a bad address: %v", err)
	}
	if _, err := a.FindSuppressions(keyIn(acct.ID, ScopeMessagesRead), "ann@example.com"); AsError(err).Code != CodeInsufficientScopes {
		t.Errorf("without suppressions:read: %v", err)
	}
}
