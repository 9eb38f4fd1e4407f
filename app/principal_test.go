package app

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"mailbolt/grader"
	"mailbolt/storage"
)

// keyIn is the principal of a key in the account with the given scopes
// (none: "*"), as Authenticate would make it. Only the account's id is
// filled in.
func keyIn(accountID string, scopes ...string) Principal {
	if len(scopes) == 0 {
		scopes = []string{ScopeAll}
	}
	return KeyPrincipal(storage.APIKey{ID: "key-in-" + accountID, AccountID: accountID, Scopes: scopes},
		storage.Account{ID: accountID})
}

// storedKeyIn is keyIn for a key that is stored: a use case that re-reads
// its caller's key (CreateKey does, so a key revoked meanwhile cannot
// mint another) finds it live.
func storedKeyIn(t testing.TB, a *App, accountID string, scopes ...string) Principal {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []string{ScopeAll}
	}
	k, err := a.CreateKey(operatorOf(t, a, accountID), KeyInput{Name: "stored", Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return KeyPrincipal(k.Key, storage.Account{ID: accountID})
}

// operatorOf is the operator in an account, or fails the test.
func operatorOf(t testing.TB, a *App, accountID string) Principal {
	t.Helper()
	p, e := a.OperatorIn(accountID)
	if e != nil {
		t.Fatal(e)
	}
	return p
}

// useCase is one use case that acts in an account, called with arguments
// that pass no other check before authorization.
type useCase struct {
	name, scope string
	call        func(Principal) error
}

// useCases is every use case that acts in an account, with the scope it
// requires: the table web's routes are checked against over HTTP
// (TestRouteScopesAreEnforcedAndDocumented).
func useCases(a *App) []useCase {
	ctx := context.Background()
	none := storage.ListOptions{Limit: 1}
	return []useCase{
		{"Account", ScopeAccountRead, func(p Principal) error { _, e := a.Account(p); return e }},
		{"ListKeys", ScopeAPIKeysRead, func(p Principal) error { _, _, _, e := a.ListKeys(p, none); return e }},
		{"Key", ScopeAPIKeysRead, func(p Principal) error { _, e := a.Key(p, "nope"); return e }},
		{"CreateKey", ScopeAPIKeysWrite, func(p Principal) error { _, e := a.CreateKey(p, KeyInput{}); return e }},
		{"RevokeKey", ScopeAPIKeysWrite, func(p Principal) error { _, e := a.RevokeKey(p, "nope"); return e }},
		{"ListSuppressions", ScopeSuppressionsRead, func(p Principal) error { _, _, _, e := a.ListSuppressions(p, none); return e }},
		{"AddSuppression", ScopeSuppressionsWrite, func(p Principal) error { _, _, e := a.AddSuppression(p, "", "", ""); return e }},
		{"DeleteSuppression", ScopeSuppressionsWrite, func(p Principal) error { return a.DeleteSuppression(p, "nope@x.test", "") }},
		{"ListDomains", ScopeDomainsRead, func(p Principal) error { _, _, _, e := a.ListDomains(p, none); return e }},
		{"Domain", ScopeDomainsRead, func(p Principal) error { _, e := a.Domain(p, "nope"); return e }},
		{"CreateDomain", ScopeDomainsWrite, func(p Principal) error { _, e := a.CreateDomain(p, "", ""); return e }},
		{"DeleteDomain", ScopeDomainsWrite, func(p Principal) error { return a.DeleteDomain(p, "nope") }},
		{"VerifyDomain", ScopeDomainsWrite, func(p Principal) error { _, e := a.VerifyDomain(ctx, p, "nope"); return e }},
		{"RotateDKIM", ScopeDomainsWrite, func(p Principal) error { _, e := a.RotateDKIM(p, "nope", ""); return e }},
		{"ListTemplates", ScopeTemplatesRead, func(p Principal) error { _, _, _, e := a.ListTemplates(p, none); return e }},
		{"Template", ScopeTemplatesRead, func(p Principal) error { _, _, e := a.Template(p, "nope", 0); return e }},
		{"TemplateVersions", ScopeTemplatesRead, func(p Principal) error { _, _, _, e := a.TemplateVersions(p, "nope", none); return e }},
		{"RenderTemplate", ScopeTemplatesRead, func(p Principal) error { _, e := a.RenderTemplate(p, "nope", 0, nil); return e }},
		{"RenderDraft", ScopeTemplatesWrite, func(p Principal) error { _, e := a.RenderDraft(p, "nope", TemplateInput{}, nil); return e }},
		{"CreateTemplate", ScopeTemplatesWrite, func(p Principal) error { _, _, e := a.CreateTemplate(p, TemplateInput{}); return e }},
		{"UpdateTemplate", ScopeTemplatesWrite, func(p Principal) error { _, _, e := a.UpdateTemplate(p, "nope", TemplateInput{}); return e }},
		{"Team", ScopeTeamRead, func(p Principal) error { _, _, _, e := a.Team(p, none); return e }},
		{"Invite", ScopeTeamWrite, func(p Principal) error { _, e := a.Invite(p, "", ""); return e }},
		{"ChangeRole", ScopeTeamWrite, func(p Principal) error { _, e := a.ChangeRole(p, "nope", "viewer"); return e }},
		{"ListWebhooks", ScopeWebhooksRead, func(p Principal) error { _, _, _, e := a.ListWebhooks(p, none); return e }},
		{"Webhook", ScopeWebhooksRead, func(p Principal) error { _, e := a.Webhook(p, "nope"); return e }},
		{"Deliveries", ScopeWebhooksRead, func(p Principal) error { _, _, _, e := a.Deliveries(p, "nope", "", none); return e }},
		{"CreateWebhook", ScopeWebhooksWrite, func(p Principal) error { _, e := a.CreateWebhook(ctx, p, WebhookInput{}); return e }},
		{"DeleteWebhook", ScopeWebhooksWrite, func(p Principal) error { return a.DeleteWebhook(p, "nope") }},
		{"RotateWebhookSecret", ScopeWebhooksWrite, func(p Principal) error { _, e := a.RotateWebhookSecret(p, "nope"); return e }},
		{"Replay", ScopeWebhooksWrite, func(p Principal) error { _, e := a.Replay(p, "nope", "nope"); return e }},
		{"SendMessage", ScopeMessagesWrite, func(p Principal) error { _, e := a.SendMessage(p, MessageInput{}); return e }},
		{"SendBatch", ScopeMessagesWrite, func(p Principal) error { _, e := a.SendBatch(p, nil, true); return e }},
		{"CancelMessage", ScopeMessagesWrite, func(p Principal) error { _, e := a.CancelMessage(p, "nope"); return e }},
		{"Message", ScopeMessagesRead, func(p Principal) error { _, _, e := a.Message(p, "nope"); return e }},
		{"ListMessages", ScopeMessagesRead, func(p Principal) error {
			_, _, _, e := a.ListMessages(p, MessageQuery{}, none, false)
			return e
		}},
		{"ListEvents", ScopeEventsRead, func(p Principal) error {
			_, _, _, e := a.ListEvents(p, EventQuery{}, none, false)
			return e
		}},
		{"AnalyticsSummary", ScopeAnalyticsRead, func(p Principal) error {
			_, e := a.AnalyticsSummary(p, SummaryQuery{From: a.Now(), To: a.Now()})
			return e
		}},
		{"AccountIPs", ScopeIPsRead, func(p Principal) error { _, e := a.AccountIPs(p); return e }},
		{"AccountPools", ScopeIPsRead, func(p Principal) error { _, e := a.AccountPools(p); return e }},
		{"GraderSubmit", ScopeGraderWrite, func(p Principal) error { _, e := a.GraderSubmit(ctx, p, grader.Submission{}); return e }},
		{"GraderResult", ScopeGraderRead, func(p Principal) error { _, e := a.GraderResult(p, "nope"); return e }},
		{"GraderHistory", ScopeGraderRead, func(p Principal) error { _, _, e := a.GraderHistory(p, 1, 10); return e }},
		{"ListInboundDomains", ScopeInboundRead, func(p Principal) error { _, _, _, e := a.ListInboundDomains(p, none); return e }},
		{"InboundDomain", ScopeInboundRead, func(p Principal) error { _, e := a.InboundDomain(p, "nope"); return e }},
		{"CreateInboundDomain", ScopeInboundWrite, func(p Principal) error { _, e := a.CreateInboundDomain(p, ""); return e }},
		{"DeleteInboundDomain", ScopeInboundWrite, func(p Principal) error { return a.DeleteInboundDomain(p, "nope") }},
		{"VerifyInboundDomain", ScopeInboundWrite, func(p Principal) error { _, e := a.VerifyInboundDomain(ctx, p, "nope"); return e }},
		{"ListInboundRoutes", ScopeInboundRead, func(p Principal) error { _, _, _, e := a.ListInboundRoutes(p, none); return e }},
		{"InboundRoute", ScopeInboundRead, func(p Principal) error { _, e := a.InboundRoute(p, "nope"); return e }},
		{"CreateInboundRoute", ScopeInboundWrite, func(p Principal) error { _, e := a.CreateInboundRoute(p, InboundRouteInput{}); return e }},
		{"DeleteInboundRoute", ScopeInboundWrite, func(p Principal) error { return a.DeleteInboundRoute(p, "nope") }},
		{"InboundRaw", ScopeInboundRead, func(p Principal) error { _, e := a.InboundRaw(p, "nope"); return e }},
	}
}

// refusal is the code of an authentication or authorization refusal, or
// "" for any other outcome.
func refusal(err error) string {
	if err == nil {
		return ""
	}
	if s := AsError(err).Status(); s == http.StatusUnauthorized || s == http.StatusForbidden {
		return AsError(err).Code
	}
	return ""
}

func without(scope string) []string {
	var out []string
	for _, s := range Scopes {
		if s != scope {
			out = append(out, s)
		}
	}
	return out
}

// Every use case that acts in an account requires exactly its scope, of
// every kind of caller: an API key (live or test) needs the scope and no
// other, the operator in an account may do everything there, the operator
// across accounts and nobody may do nothing, and an expired credential is
// refused even when it was valid when the principal was made.
func TestUseCasesAuthorizeEveryKindOfCaller(t *testing.T) {
	a, c := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	soon := c.now().Add(time.Minute)
	expired := keyIn(acct.ID)
	expired.ExpiresAt = &soon
	c.add(time.Hour)
	seen := map[string]bool{}
	for _, uc := range useCases(a) {
		seen[uc.scope] = true
		for _, test := range []bool{false, true} {
			lacking := keyIn(acct.ID, without(uc.scope)...)
			lacking.Test = test
			err := uc.call(lacking)
			wantCode := CodeInsufficientScopes
			if uc.scope == ScopeGraderRead || uc.scope == ScopeGraderWrite {
				wantCode = CodeInsufficientScope // spec §7
			}
			if refusal(err) != wantCode || AsError(err).Details["required_scope"] != uc.scope {
				t.Errorf("%s by a key (test=%v) lacking %s: %v, want %s naming it", uc.name, test, uc.scope, err, wantCode)
			}
			only := keyIn(acct.ID, uc.scope)
			only.Test = test
			if err := uc.call(only); refusal(err) != "" {
				t.Errorf("%s by a key (test=%v) holding only %s: %v", uc.name, test, uc.scope, err)
			}
		}
		if err := uc.call(operatorOf(t, a, acct.ID)); refusal(err) != "" {
			t.Errorf("%s by the operator in the account: %v", uc.name, err)
		}
		if err := uc.call(Operator()); refusal(err) != CodeForbidden && uc.name != "RevokeKey" {
			t.Errorf("%s by the operator in no account: %v, want FORBIDDEN", uc.name, err)
		}
		if err := uc.call(Principal{}); refusal(err) != CodeUnauthorized {
			t.Errorf("%s by nobody: %v, want UNAUTHORIZED", uc.name, err)
		}
		if err := uc.call(expired); refusal(err) != CodeTokenExpired {
			t.Errorf("%s by an expired key: %v, want TOKEN_EXPIRED", uc.name, err)
		}
	}
	for _, s := range Scopes {
		if !seen[s] {
			t.Errorf("no use case requires %s", s)
		}
	}
}

// A new key gets at most what its creator has: its scopes, and a test
// creator's mode. Left out, scopes and mode are the creator's. The
// operator holds everything and is live, so it may make any key.
func TestCreateKeyNeverGrantsMoreThanTheCreatorHas(t *testing.T) {
	a, _ := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	narrow := storedKeyIn(t, a, acct.ID, ScopeAPIKeysWrite, ScopeMessagesRead)
	sandbox := storedKeyIn(t, a, acct.ID)
	sandbox.Test = true
	op := operatorOf(t, a, acct.ID)
	for _, tc := range []struct {
		name       string
		by         Principal
		in         KeyInput
		code       string   // "" for success
		wantScopes []string // of the new key
		wantTest   bool
	}{
		{"narrow key, its own scopes by default", narrow, KeyInput{Name: "k"}, "", []string{ScopeAPIKeysWrite, ScopeMessagesRead}, false},
		{"narrow key, a subset", narrow, KeyInput{Name: "k", Scopes: []string{ScopeMessagesRead}}, "", []string{ScopeMessagesRead}, false},
		{"narrow key, a scope it lacks", narrow, KeyInput{Name: "k", Scopes: []string{ScopeMessagesWrite}}, CodeInsufficientScopes, nil, false},
		{"narrow key, every scope", narrow, KeyInput{Name: "k", Scopes: []string{ScopeAll}}, CodeInsufficientScopes, nil, false},
		{"narrow key, a test key", narrow, KeyInput{Name: "k", Mode: ModeTest}, "", []string{ScopeAPIKeysWrite, ScopeMessagesRead}, true},
		{"test key, its own mode by default", sandbox, KeyInput{Name: "k"}, "", []string{ScopeAll}, true},
		{"test key, a live key", sandbox, KeyInput{Name: "k", Mode: ModeLive}, CodeForbidden, nil, false},
		{"operator, every scope by default", op, KeyInput{Name: "k"}, "", []string{ScopeAll}, false},
		{"operator, a test key", op, KeyInput{Name: "k", Mode: ModeTest, Scopes: []string{ScopeEventsRead}}, "", []string{ScopeEventsRead}, true},
		{"nobody", Principal{}, KeyInput{Name: "k"}, CodeUnauthorized, nil, false},
		{"operator in no account", Operator(), KeyInput{Name: "k"}, CodeForbidden, nil, false},
	} {
		k, err := a.CreateKey(tc.by, tc.in)
		if tc.code != "" {
			if !HasCode(err, tc.code) {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(k.Key.Scopes, tc.wantScopes) || k.Key.Test != tc.wantTest || k.Key.AccountID != acct.ID {
			t.Errorf("%s: made %+v", tc.name, k.Key)
		}
		if p, err := a.Authenticate(k.Secret); err != nil || p.Test != tc.wantTest {
			t.Errorf("%s: the new key does not authenticate as made: %+v %v", tc.name, p, err)
		}
	}
	// The refusal names what was asked and what is held.
	_, err := a.CreateKey(narrow, KeyInput{Name: "k", Scopes: []string{ScopeAll}})
	if d := AsError(err).Details; !slices.Equal(d["requested"].([]string), []string{ScopeAll}) || !slices.Equal(d["held"].([]string), narrow.Scopes) {
		t.Errorf("details = %v", d)
	}
}

// A key cannot take away access it could not grant; the operator across
// accounts may revoke any key, the operator in an account only its keys.
func TestRevokeKeyRules(t *testing.T) {
	a, _ := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	other, _ := a.CreateAccount(AccountInput{Name: "other"})
	op := operatorOf(t, a, acct.ID)
	mk := func(in KeyInput) string {
		k, err := a.CreateKey(op, in)
		if err != nil {
			t.Fatal(err)
		}
		return k.Key.ID
	}
	live, test, narrowTarget := mk(KeyInput{Name: "live"}), mk(KeyInput{Name: "test", Mode: ModeTest}), mk(KeyInput{Name: "n", Scopes: []string{ScopeEventsRead}})
	narrow := keyIn(acct.ID, ScopeAPIKeysWrite)
	sandbox := keyIn(acct.ID)
	sandbox.Test = true
	for _, tc := range []struct {
		name string
		by   Principal
		key  string
		code string
	}{
		{"key lacking the target's scopes", narrow, live, CodeInsufficientScopes},
		{"key lacking the target's scopes (narrow target)", narrow, narrowTarget, CodeInsufficientScopes},
		{"test key, live target", sandbox, live, CodeForbidden},
		{"key of another account", keyIn(other.ID), live, CodeNotFound},
		{"operator in another account", operatorOf(t, a, other.ID), live, CodeNotFound},
		{"nobody", Principal{}, live, CodeUnauthorized},
		{"test key, test target", sandbox, test, ""},
		{"key holding the target's scopes", keyIn(acct.ID, ScopeAPIKeysWrite, ScopeEventsRead), narrowTarget, ""},
		{"operator across accounts", Operator(), live, ""},
	} {
		k, err := a.RevokeKey(tc.by, tc.key)
		switch {
		case tc.code != "" && !HasCode(err, tc.code):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		case tc.code == "" && (err != nil || k.RevokedAt == nil):
			t.Errorf("%s: %+v %v", tc.name, k, err)
		}
	}
}

// A key does not outlive the key that creates it: a later expiry is 403
// FORBIDDEN naming both times, none means the creator's. The operator and
// keys that never expire are not limited.
func TestCreateKeyDoesNotOutliveItsCreator(t *testing.T) {
	a, c := newTestApp(t)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	now := c.now()
	in := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	expiring := storedKeyIn(t, a, acct.ID)
	expiring.ExpiresAt = in(24 * time.Hour)
	sandbox := expiring
	sandbox.Test = true
	forever := storedKeyIn(t, a, acct.ID)
	for _, tc := range []struct {
		name    string
		by      Principal
		expires *time.Time
		want    *time.Time // the new key's expiry; nil: never
		code    string
	}{
		{"earlier", expiring, in(time.Hour), in(time.Hour), ""},
		{"the same instant", expiring, in(24 * time.Hour), in(24 * time.Hour), ""},
		{"none: the creator's", expiring, nil, in(24 * time.Hour), ""},
		{"none, by a test key: the creator's", sandbox, nil, in(24 * time.Hour), ""},
		{"later", expiring, in(25 * time.Hour), nil, CodeValidation},
		{"later, by a test key", sandbox, in(48 * time.Hour), nil, CodeValidation},
		{"in the past", expiring, in(-time.Hour), nil, CodeValidation},
		{"a key that never expires, any time", forever, in(24 * 365 * time.Hour), in(24 * 365 * time.Hour), ""},
		{"a key that never expires, none", forever, nil, nil, ""},
		{"operator, any time", operatorOf(t, a, acct.ID), in(24 * 365 * time.Hour), in(24 * 365 * time.Hour), ""},
		{"operator, none", operatorOf(t, a, acct.ID), nil, nil, ""},
	} {
		k, err := a.CreateKey(tc.by, KeyInput{Name: "k", ExpiresAt: tc.expires})
		if tc.code != "" {
			if !HasCode(err, tc.code) {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			}
			if tc.code == CodeValidation && tc.expires.After(a.Now()) {
				d := AsError(err).Details
				if d["field"] != "expires_at" || d["max_expires_at"] != tc.by.ExpiresAt.UTC().Format(time.RFC3339Nano) {
					t.Errorf("%s: details %v", tc.name, d)
				}
			}
			continue
		}
		got := k.Key.ExpiresAt
		if err != nil || (got == nil) != (tc.want == nil) || (got != nil && !got.Equal(*tc.want)) {
			t.Errorf("%s: expires %v, want %v (%v)", tc.name, got, tc.want, err)
		}
	}
}
