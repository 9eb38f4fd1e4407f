package app

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"mailbolt/grader"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/storage"
)

func newGraderApp(t *testing.T, fault *atomic.Bool, readFault ...*atomic.Bool) (*App, *dnstest.Server, Principal, Principal) {
	t.Helper()
	zone := dnstest.Start(t)
	zone.MX("good.test", 10, "mx.good.test")
	zone.A("mx.good.test", "127.0.0.1")
	zone.TXT("good.test", "v=spf1 ip4:127.0.0.1 -all")
	zone.TXT("_dmarc.good.test", "v=DMARC1; p=reject; rua=mailto:d@good.test")
	db, err := storage.Open(t.TempDir(), faults(t, func() error {
		if fault != nil && fault.Load() {
			return errors.New("injected write fault")
		}
		return nil
	}, func() error {
		if len(readFault) > 0 && readFault[0].Load() {
			return errors.New("injected read fault")
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	o := options(c.now)
	o.Grader.Config = grader.Config{Resolver: &dns.Resolver{Server: zone.Addr, Timeout: 300 * time.Millisecond},
		IPBlocklists: []string{}, DomainBlocklists: []string{}}
	a := mustNew(t, db, o)
	principal := func(name string) Principal {
		acct, _ := a.CreateAccount(AccountInput{Name: name})
		return KeyPrincipal(storage.APIKey{AccountID: acct.ID, Scopes: []string{ScopeAll}}, acct)
	}
	return a, zone, principal("one"), principal("two")
}

func TestGraderSubmitStoresPerTenant(t *testing.T) {
	var fault atomic.Bool
	a, _, one, two := newGraderApp(t, &fault)
	ctx := context.Background()
	sub := grader.Submission{From: "hello@good.test", To: []string{"x@example.org"}, Subject: "Your receipt", BodyText: "Thanks for your order."}
	stored, ae := a.GraderSubmit(ctx, one, sub)
	if ae != nil {
		t.Fatal(ae)
	}
	var r grader.Result
	if err := json.Unmarshal(stored.Result, &r); err != nil || r.Domain != "good.test" || r.Grade == "" {
		t.Fatalf("stored %s: %v", stored.Result, err)
	}
	if got, ae := a.GraderResult(one, stored.ID); ae != nil || got.Score != r.Score {
		t.Fatalf("read back: %+v %v", got, ae)
	}
	if _, ae := a.GraderResult(two, stored.ID); ae == nil || AsError(ae).Status() != 404 || AsError(ae).Code != CodeNotFound {
		t.Fatalf("another tenant: %v", ae)
	}
	if list, total, ae := a.GraderHistory(one, 1, 1000); ae != nil || total != 1 || len(list) != 1 {
		t.Fatalf("history %d %d %v", len(list), total, ae)
	}
	if _, ae := a.GraderSubmit(ctx, one, grader.Submission{From: "a@good.test", Subject: "a\r\nb"}); ae == nil || AsError(ae).Code != CodeInvalidInput {
		t.Fatalf("CR LF subject: %v", ae)
	}
	fault.Store(true)
	if _, ae := a.GraderSubmit(ctx, one, sub); ae == nil || AsError(ae).Status() != 500 || AsError(ae).Code != CodePersistFailed {
		t.Fatalf("write fault: %v", ae)
	}
}

func TestGraderCheckIsCachedAndCanBeDisabled(t *testing.T) {
	a, zone, _, _ := newGraderApp(t, nil)
	ctx := context.Background()
	first, ae := a.GraderCheck(ctx, "good.test", nil)
	if ae != nil {
		t.Fatal(ae)
	}
	// Within the TTL a changed zone is not looked up again.
	zone.Remove("_dmarc.good.test")
	again, _ := a.GraderCheck(ctx, "GOOD.test", nil)
	if again.Score != first.Score {
		t.Fatalf("cache missed: %d then %d", first.Score, again.Score)
	}
	if _, ae := a.GraderCheck(ctx, "", nil); ae == nil || AsError(ae).Code != CodeInvalidInput {
		t.Fatalf("empty domain: %v", ae)
	}
	a.opts.Grader.Disabled = true
	if _, ae := a.GraderCheck(ctx, "good.test", nil); ae == nil || AsError(ae).Status() != 503 || AsError(ae).Code != CodeGraderDisabled {
		t.Fatalf("disabled: %v", ae)
	}
}

func TestGraderReadFailureIsDBError(t *testing.T) {
	var readFault atomic.Bool
	a, _, one, _ := newGraderApp(t, nil, &readFault)
	stored, ae := a.GraderSubmit(context.Background(), one, grader.Submission{From: "a@good.test", Subject: "s", BodyText: "hello there"})
	if ae != nil {
		t.Fatal(ae)
	}
	readFault.Store(true)
	if _, ae := a.GraderResult(one, stored.ID); ae == nil || AsError(ae).Status() != 500 || AsError(ae).Code != CodeDBError {
		t.Fatalf("result read fault: %v", ae)
	}
	if _, _, ae := a.GraderHistory(one, 1, 10); ae == nil || AsError(ae).Code != CodeDBError {
		t.Fatalf("history read fault: %v", ae)
	}
}
