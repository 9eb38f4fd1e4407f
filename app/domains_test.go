package app

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"mailbolt/mta/dkim"
	"mailbolt/mta/dns"
	"mailbolt/mta/dns/dnstest"
	"mailbolt/storage"
	"mailbolt/storage/storagetest"
)

type domainEnv struct {
	t     *testing.T
	app   *App
	clock *clock
	zone  *dnstest.Server
	acct  string
}

func newDomainEnv(t *testing.T, opts DomainOptions) *domainEnv {
	t.Helper()
	zone := dnstest.Start(t)
	opts.Resolver = &dns.Resolver{Server: zone.Addr, Timeout: 300 * time.Millisecond}
	if opts.Hostname == "" {
		opts.Hostname = "mx.mailbolt.test"
	}
	db, err := storage.Open(t.TempDir(), storagetest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c := &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	o := options(c.now)
	o.Domains.Resolver, o.Domains.Hostname, o.Domains.SPFInclude = opts.Resolver, opts.Hostname, opts.SPFInclude
	o.Domains.SendingIPs, o.Domains.TrackingHost = opts.SendingIPs, opts.TrackingHost
	if opts.RecheckInterval != 0 {
		o.Domains.RecheckInterval = opts.RecheckInterval
	}
	if opts.RotationGrace != 0 {
		o.Domains.RotationGrace = opts.RotationGrace
	}
	a := mustNew(t, db, o)
	acct, _ := a.CreateAccount(AccountInput{Name: "acme"})
	return &domainEnv{t: t, app: a, clock: c, zone: zone, acct: acct.ID}
}

func (e *domainEnv) create(name string) storage.Domain {
	e.t.Helper()
	d, ae := e.app.CreateDomain(keyIn(e.acct), name, "")
	if ae != nil {
		e.t.Fatal(ae)
	}
	return d
}

func (e *domainEnv) record(d storage.Domain, purpose string) DNSRecord {
	e.t.Helper()
	for _, r := range e.app.Records(d) {
		if r.Purpose == purpose && (purpose != PurposeDKIM || r.RemovableAfter == nil) {
			return r
		}
	}
	e.t.Fatalf("no %s record", purpose)
	return DNSRecord{}
}

// publish puts the DKIM and SPF records the domain asks for into the zone.
func (e *domainEnv) publish(d storage.Domain) {
	k := d.DKIMKeys[len(d.DKIMKeys)-1]
	e.zone.LongTXT(dkimName(k.Selector, d.Name), dkim.Key{Algorithm: k.Algorithm, PublicB64: k.PublicKey}.RecordValue())
	e.zone.Remove(d.Name)
	e.zone.TXT(d.Name, e.record(d, PurposeSPF).Value)
}

func (e *domainEnv) verify(d storage.Domain) storage.Domain {
	e.t.Helper()
	got, ae := e.app.VerifyDomain(context.Background(), keyIn(e.acct), d.ID)
	if ae != nil {
		e.t.Fatal(ae)
	}
	return got
}

func statusOf(a *App, d storage.Domain, purpose string) string {
	for _, r := range a.Records(d) {
		if r.Purpose == purpose {
			return r.Status
		}
	}
	return ""
}

func TestNormalizeDomain(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM":       "example.com",
		"mail.example.com.": "mail.example.com",
		"bücher.example":    "xn--bcher-kva.example",
	} {
		if got, e := NormalizeDomain("name", in); e != nil || got != want {
			t.Errorf("%q -> %q, %v; want %q", in, got, e, want)
		}
	}
	for _, bad := range []string{"", "com", "co.uk", "localhost", "1.2.3.4", "a..b.com", "-a.com", "exa mple.com", "a_b.com", strings.Repeat("a", 64) + ".com"} {
		if got, e := NormalizeDomain("name", bad); e == nil {
			t.Errorf("%q accepted as %q", bad, got)
		}
	}
}

// A name or address that is not UTF-8 is refused as such at the use
// case, whatever entry point let it through: idna would otherwise read each
// bad byte as U+FFFD and make a valid-looking name of it.
func TestNormalizeRefusesInvalidUTF8(t *testing.T) {
	for _, c := range []struct {
		name string
		norm func(field, s string) (string, error)
		in   string
	}{
		{"domain", NormalizeDomain, "ex\xffample.com"},
		{"domain", NormalizeDomain, "b\xfccher.example"},
		{"address", NormalizeAddress, "ann@ex\xffample.com"},
		{"address", NormalizeAddress, "a\xffnn@example.com"},
	} {
		got, err := c.norm("f", c.in)
		var ae *Error
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), ReasonNotUTF8) {
			t.Errorf("%s %q: %q, %v; want %q", c.name, c.in, got, err, ReasonNotUTF8)
		}
	}
}

func TestDomainRecordsToPublish(t *testing.T) {
	e := newDomainEnv(t, DomainOptions{SPFInclude: "_spf.mailbolt.test", TrackingHost: "track.mailbolt.test"})
	d := e.create("Example.test")
	if d.Status != DomainPending || len(d.DKIMKeys) != 1 || d.DKIMKeys[0].Algorithm != dkim.AlgRSA2048 {
		t.Fatalf("created %+v", d)
	}
	recs := e.app.Records(d)
	want := map[string][2]string{
		PurposeDKIM:       {"TXT", d.DKIMKeys[0].Selector + "._domainkey.example.test"},
		PurposeSPF:        {"TXT", "example.test"},
		PurposeReturnPath: {"CNAME", "bounces.example.test"},
		PurposeDMARC:      {"TXT", "_dmarc.example.test"},
		PurposeTracking:   {"CNAME", "track.example.test"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if w := want[r.Purpose]; r.Type != w[0] || r.Name != w[1] || r.Status != RecordPending {
			t.Errorf("%s record = %+v", r.Purpose, r)
		}
	}
	dkimRec := e.record(d, PurposeDKIM)
	if !strings.HasPrefix(dkimRec.Value, `"v=DKIM1; k=rsa; p=`) || !strings.Contains(dkimRec.Value, `" "`) {
		t.Errorf("a 2048-bit key's record must be split into quoted strings: %s", dkimRec.Value)
	}
	if v := e.record(d, PurposeSPF).Value; v != "v=spf1 include:_spf.mailbolt.test ~all" {
		t.Errorf("SPF value %q", v)
	}
	if _, ae := e.app.CreateDomain(keyIn(e.acct), "EXAMPLE.test", ""); ae == nil || AsError(ae).Code != CodeConflict {
		t.Errorf("same name twice: %v", ae)
	}
	ed, ae := e.app.CreateDomain(keyIn(e.acct), "ed.test", dkim.AlgEd25519)
	if ae != nil || !strings.HasPrefix(e.record(ed, PurposeDKIM).Value, "v=DKIM1; k=ed25519; p=") {
		t.Errorf("ed25519 domain: %v", ae)
	}
	if _, ae := e.app.CreateDomain(keyIn(e.acct), "x.test", "dsa"); ae == nil || AsError(ae).Code != CodeValidation {
		t.Errorf("unknown algorithm: %v", ae)
	}
}

func TestVerifyOutcomes(t *testing.T) {
	e := newDomainEnv(t, DomainOptions{SendingIPs: []net.IP{net.ParseIP("192.0.2.10")}})

	t.Run("all records right", func(t *testing.T) {
		d := e.create("good.test")
		e.publish(d)
		e.zone.TXT("_dmarc.good.test", "v=DMARC1; p=reject")
		e.zone.CNAME("bounces.good.test", "mx.mailbolt.test")
		d = e.verify(d)
		if d.Status != DomainVerified || d.VerifiedAt == nil || d.CheckError != "" {
			t.Fatalf("status %s (%s) err %q", d.Status, d.StatusReason, d.CheckError)
		}
		for _, p := range []string{PurposeDKIM, PurposeSPF, PurposeDMARC, PurposeReturnPath} {
			if s := statusOf(e.app, d, p); s != RecordVerified {
				t.Errorf("%s: %s", p, s)
			}
		}
		if _, ok := d.ActiveKey(); !ok {
			t.Error("no signing key after verification")
		}
		if _, ae := e.app.DomainForSending(e.acct, "GOOD.test"); ae != nil {
			t.Errorf("verified domain refused for sending: %v", ae)
		}
	})
	t.Run("DMARC missing does not block", func(t *testing.T) {
		d := e.create("nodmarc.test")
		e.publish(d)
		d = e.verify(d)
		if d.Status != DomainVerified || statusOf(e.app, d, PurposeDMARC) != RecordMissing {
			t.Fatalf("status %s, dmarc %s", d.Status, statusOf(e.app, d, PurposeDMARC))
		}
	})
	t.Run("DKIM missing", func(t *testing.T) {
		d := e.create("nodkim.test")
		e.zone.TXT("nodkim.test", "v=spf1 ip4:192.0.2.0/24 -all")
		d = e.verify(d)
		if d.Status != DomainPending || statusOf(e.app, d, PurposeDKIM) != RecordMissing || !strings.Contains(d.StatusReason, "DKIM") {
			t.Fatalf("status %s (%s), dkim %s", d.Status, d.StatusReason, statusOf(e.app, d, PurposeDKIM))
		}
		if statusOf(e.app, d, PurposeSPF) != RecordVerified {
			t.Error("SPF covering the IP by CIDR not accepted")
		}
		if _, ae := e.app.DomainForSending(e.acct, "nodkim.test"); ae == nil || AsError(ae).Code != CodeDomainNotVerified || AsError(ae).Status() != 422 {
			t.Errorf("pending domain allowed for sending: %v", ae)
		}
	})
	t.Run("DKIM mismatched (old key)", func(t *testing.T) {
		d := e.create("oldkey.test")
		other, _ := dkim.GenerateKey(dkim.AlgRSA2048)
		e.zone.LongTXT(dkimName(d.DKIMKeys[0].Selector, d.Name), other.RecordValue())
		e.zone.TXT(d.Name, e.record(d, PurposeSPF).Value)
		d = e.verify(d)
		r := e.record(d, PurposeDKIM)
		if d.Status != DomainPending || r.Status != RecordMismatch || len(r.Found) != 1 || !strings.Contains(r.Found[0], other.PublicB64) {
			t.Fatalf("status %s, dkim %+v", d.Status, r)
		}
	})
	t.Run("SPF without our mechanism", func(t *testing.T) {
		d := e.create("otherspf.test")
		e.publish(d)
		e.zone.Remove("otherspf.test")
		e.zone.TXT("otherspf.test", "v=spf1 include:_spf.google.com ~all")
		e.zone.TXT("otherspf.test", "google-site-verification=abc")
		d = e.verify(d)
		r := e.record(d, PurposeSPF)
		if d.Status != DomainPending || r.Status != RecordMismatch || !strings.Contains(d.StatusReason, "SPF") {
			t.Fatalf("status %s, spf %+v", d.Status, r)
		}
		if r.Value != "v=spf1 include:_spf.google.com ip4:192.0.2.10 ~all" {
			t.Errorf("suggested merge %q", r.Value)
		}
	})
	t.Run("two SPF records", func(t *testing.T) {
		d := e.create("twospf.test")
		e.publish(d)
		e.zone.TXT("twospf.test", "v=spf1 -all")
		if d = e.verify(d); statusOf(e.app, d, PurposeSPF) != RecordMismatch {
			t.Fatal("two SPF records accepted")
		}
	})
	t.Run("NXDOMAIN", func(t *testing.T) {
		d := e.verify(e.create("nxdomain.test"))
		if d.Status != DomainPending || d.CheckError != "" || statusOf(e.app, d, PurposeDKIM) != RecordMissing || statusOf(e.app, d, PurposeSPF) != RecordMissing {
			t.Fatalf("status %s err %q", d.Status, d.CheckError)
		}
	})
	t.Run("SERVFAIL keeps the previous status", func(t *testing.T) {
		d := e.create("flaky.test")
		e.publish(d)
		if d = e.verify(d); d.Status != DomainVerified {
			t.Fatal(d.StatusReason)
		}
		e.zone.ServFail(dkimName(d.DKIMKeys[0].Selector, d.Name), true)
		defer e.zone.ServFail(dkimName(d.DKIMKeys[0].Selector, d.Name), false)
		d = e.verify(d)
		r := e.record(d, PurposeDKIM)
		if d.Status != DomainVerified || !strings.Contains(d.CheckError, "SERVFAIL") || r.Status != RecordVerified || r.Error == "" {
			t.Fatalf("status %s err %q dkim %+v", d.Status, d.CheckError, r)
		}
	})
	t.Run("timeout is never missing", func(t *testing.T) {
		d := e.create("slow.test")
		e.zone.Silent("slow.test", true)
		d = e.verify(d)
		r := e.record(d, PurposeSPF)
		if d.Status != DomainPending || r.Status != RecordPending || r.Error == "" || d.CheckError == "" {
			t.Fatalf("status %s spf %+v", d.Status, r)
		}
	})
	t.Run("another tenant's domain is not found", func(t *testing.T) {
		d := e.create("mine.test")
		other, _ := e.app.CreateAccount(AccountInput{Name: "other"})
		for _, err := range []error{
			func() error { _, ae := e.app.VerifyDomain(context.Background(), keyIn(other.ID), d.ID); return ae }(),
			func() error { _, ae := e.app.Domain(keyIn(other.ID), d.ID); return ae }(),
			func() error { _, ae := e.app.RotateDKIM(keyIn(other.ID), d.ID, ""); return ae }(),
			e.app.DeleteDomain(keyIn(other.ID), d.ID),
		} {
			if err == nil || !HasCode(err, CodeNotFound) {
				t.Errorf("cross-tenant: %v", err)
			}
		}
	})
}

func TestScheduledRecheckFailsAndRecovers(t *testing.T) {
	e := newDomainEnv(t, DomainOptions{RecheckInterval: time.Hour})
	d := e.create("watched.test")
	e.publish(d)
	if d = e.verify(d); d.Status != DomainVerified {
		t.Fatal(d.StatusReason)
	}
	// Not due yet: nothing is checked.
	if n, _ := e.app.CheckDueDomains(context.Background()); n != 0 {
		t.Fatalf("checked %d before due", n)
	}
	e.zone.Remove(dkimName(d.DKIMKeys[0].Selector, d.Name))
	e.clock.add(time.Hour + time.Second)
	if n, err := e.app.CheckDueDomains(context.Background()); n != 1 || err != nil {
		t.Fatalf("checked %d, %v", n, err)
	}
	d, _ = e.app.Domain(keyIn(e.acct), d.ID)
	if d.Status != DomainFailed || !strings.Contains(d.StatusReason, "DKIM") {
		t.Fatalf("after records vanished: %s (%s)", d.Status, d.StatusReason)
	}
	if _, ae := e.app.DomainForSending(e.acct, d.Name); ae == nil || !strings.Contains(AsError(ae).Message, "DKIM") {
		t.Errorf("failed domain allowed for sending: %v", ae)
	}
	e.publish(d)
	if d = e.verify(d); d.Status != DomainVerified {
		t.Fatalf("did not recover: %s", d.StatusReason)
	}
}

func TestDKIMRotation(t *testing.T) {
	e := newDomainEnv(t, DomainOptions{RotationGrace: 48 * time.Hour})
	d := e.create("rotate.test")
	if _, ae := e.app.RotateDKIM(keyIn(e.acct), d.ID, ""); ae == nil || AsError(ae).Code != CodeConflict {
		t.Fatalf("rotation before the first key verified: %v", ae)
	}
	e.publish(d)
	d = e.verify(d)
	oldSel, _, _ := SigningKey(d)

	d, ae := e.app.RotateDKIM(keyIn(e.acct), d.ID, "")
	if ae != nil || len(d.DKIMKeys) != 2 {
		t.Fatalf("rotate: %v %d keys", ae, len(d.DKIMKeys))
	}
	if _, ae := e.app.RotateDKIM(keyIn(e.acct), d.ID, ""); ae == nil || AsError(ae).Code != CodeConflict {
		t.Errorf("second rotation while one is pending: %v", ae)
	}
	newSel := d.DKIMKeys[1].Selector
	dkims := 0
	for _, r := range e.app.Records(d) {
		if r.Purpose == PurposeDKIM {
			dkims++
		}
	}
	if dkims != 2 {
		t.Fatalf("both DKIM records must be listed, got %d", dkims)
	}
	// A failing lookup of the waiting key does not freeze the verdict.
	e.zone.ServFail(dkimName(newSel, d.Name), true)
	e.zone.Remove(d.Name) // SPF gone: the domain must fail despite the SERVFAIL
	d = e.verify(d)
	if d.Status != DomainFailed || d.CheckError == "" {
		t.Fatalf("with the new key's lookup failing: %s (%q)", d.Status, d.CheckError)
	}
	e.zone.ServFail(dkimName(newSel, d.Name), false)
	e.zone.TXT(d.Name, e.record(d, PurposeSPF).Value)
	// Not yet published: signing stays on the old key.
	d = e.verify(d)
	if sel, _, _ := SigningKey(d); sel != oldSel || d.Status != DomainVerified {
		t.Fatalf("switched to an unpublished key: %s (%s)", sel, d.Status)
	}
	// Published: the new key signs, the old one is retired.
	e.publish(d)
	d = e.verify(d)
	if sel, _, _ := SigningKey(d); sel != newSel {
		t.Fatalf("did not switch after the new record verified: %s", sel)
	}
	var old DNSRecord
	for _, r := range e.app.Records(d) {
		if r.Selector == oldSel {
			old = r
		}
	}
	if old.RemovableAfter == nil || old.Status == RecordRemovable || old.Required {
		t.Fatalf("old record right after the switch: %+v", old)
	}
	// After the grace period the old record is reported removable.
	e.clock.add(49 * time.Hour)
	for _, r := range e.app.Records(d) {
		if r.Selector == oldSel && r.Status != RecordRemovable {
			t.Fatalf("old record after grace: %+v", r)
		}
	}
	// Unpublishing it does not affect the domain.
	e.zone.Remove(dkimName(oldSel, d.Name))
	if d = e.verify(d); d.Status != DomainVerified {
		t.Fatalf("removing the retired record failed the domain: %s", d.StatusReason)
	}
	// A further rotation forgets keys past their grace period.
	d, _ = e.app.RotateDKIM(keyIn(e.acct), d.ID, dkim.AlgEd25519)
	if len(d.DKIMKeys) != 2 || d.DKIMKeys[0].Selector != newSel || d.DKIMKeys[1].Algorithm != dkim.AlgEd25519 {
		t.Fatalf("keys after second rotation: %+v", d.DKIMKeys)
	}
}

func TestDeleteDomain(t *testing.T) {
	e := newDomainEnv(t, DomainOptions{})
	d := e.create("gone.test")
	if ae := e.app.DeleteDomain(keyIn(e.acct), d.ID); ae != nil {
		t.Fatal(ae)
	}
	if _, ae := e.app.Domain(keyIn(e.acct), d.ID); ae == nil || AsError(ae).Status() != 404 {
		t.Fatal("domain still there")
	}
	e.app.db.View(func(tx *storage.Tx) error {
		if ids := tx.DueDomainChecks(e.clock.now().Add(100*24*time.Hour), 10); len(ids) != 0 {
			t.Errorf("deleted domain still scheduled: %v", ids)
		}
		return nil
	})
	// The name can be added again, with a new key.
	d2 := e.create("gone.test")
	if d2.DKIMKeys[0].PublicKey == d.DKIMKeys[0].PublicKey {
		t.Error("key reused")
	}
}

func TestSPFMatching(t *testing.T) {
	ips := DomainOptions{SendingIPs: []net.IP{net.ParseIP("192.0.2.10"), net.ParseIP("2001:db8::1")}}
	for rec, want := range map[string]bool{
		"v=spf1 ip4:192.0.2.10 ip6:2001:db8::/32 -all":  true,
		"v=spf1 +ip4:192.0.2.0/24 ip6:2001:db8::1 ~all": true,
		"v=spf1 ip4:192.0.2.10 -all":                    false,
		"v=spf1 -ip4:192.0.2.10 ip6:2001:db8::1 -all":   false,
	} {
		if got := spfAuthorizes(rec, ips); got != want {
			t.Errorf("%q: %v, want %v", rec, got, want)
		}
	}
	host := DomainOptions{Hostname: "mx.mailbolt.test"}
	if !spfAuthorizes("v=spf1 a:MX.mailbolt.test ~all", host) || spfAuthorizes("v=spf1 a ~all", host) {
		t.Error("a: mechanism matching")
	}
	if got := mergeSPF("v=spf1 mx redirect=_spf.example.test", []string{"include:x.test"}); got != "v=spf1 mx include:x.test redirect=_spf.example.test" {
		t.Errorf("merge with redirect: %q", got)
	}
}
