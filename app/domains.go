package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"mailbolt/mta/dkim"
	"mailbolt/mta/dns"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Domain statuses.
const (
	DomainPending  = storage.DomainPending  // created; its records have not verified yet
	DomainVerified = storage.DomainVerified // DKIM and SPF are in place: mail may be sent from it
	DomainFailed   = storage.DomainFailed   // was verified, then a check found its records gone
)

// NormalizeDomain turns user input into the stored form of a domain name:
// lower case, IDN labels in punycode, no trailing dot. The name must be a
// registrable domain or below one (not a bare public suffix, not an IP).
func NormalizeDomain(field, s string) (string, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), ".")
	if s == "" {
		return "", Validation(field, "is required")
	}
	if !utf8.ValidString(s) {
		// idna would read each bad byte as U+FFFD and make a name of it.
		return "", Validation(field, ReasonNotUTF8)
	}
	name, err := idna.Lookup.ToASCII(s)
	if err != nil {
		return "", Validation(field, fmt.Sprintf("%q is not a valid domain name: %v", s, err))
	}
	name = strings.ToLower(name)
	if len(name) > 253 || !strings.Contains(name, ".") || net.ParseIP(name) != nil {
		return "", Validation(field, fmt.Sprintf("%q is not a valid domain name", s))
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") ||
			strings.IndexFunc(label, func(r rune) bool { return !(r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) >= 0 {
			return "", Validation(field, fmt.Sprintf("%q is not a valid domain name", s))
		}
	}
	if _, err := publicsuffix.EffectiveTLDPlusOne(name); err != nil {
		return "", Validation(field, fmt.Sprintf("%q is a public suffix, not a domain you can own", s))
	}
	return name, nil
}

// newSelector names a DKIM key: "mb" + creation date + a random suffix, so
// selectors are unique per domain and tell when a key was made.
func newSelector(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return "mb" + now.Format("20060102") + "-" + hex.EncodeToString(b[:])
}

func (a *App) newKey(alg string) (storage.DomainKey, error) {
	if alg == "" {
		alg = dkim.AlgRSA2048
	}
	if alg != dkim.AlgRSA2048 && alg != dkim.AlgEd25519 {
		return storage.DomainKey{}, Validation("dkim_algorithm", "must be rsa-2048 or ed25519")
	}
	k, err := dkim.GenerateKey(alg)
	if err != nil {
		return storage.DomainKey{}, Internal(err)
	}
	now := a.Now()
	return storage.DomainKey{Selector: newSelector(now), Algorithm: alg, PrivateKey: k.PrivateDER,
		PublicKey: k.PublicB64, CreatedAt: now}, nil
}

// CreateDomain adds a sending domain with a fresh DKIM key, status pending.
func (a *App) CreateDomain(p Principal, name, alg string) (storage.Domain, error) {
	if err := a.authorize(p, ScopeDomainsWrite); err != nil {
		return storage.Domain{}, err
	}
	accountID := p.Account.ID
	name, e := NormalizeDomain("name", name)
	if e != nil {
		return storage.Domain{}, e
	}
	key, e := a.newKey(alg)
	if e != nil {
		return storage.Domain{}, e
	}
	now := a.Now()
	next := now.Add(a.opts.Domains.RecheckInterval)
	d := storage.Domain{ID: NewID(), AccountID: accountID, Name: name, Status: DomainPending,
		DKIMKeys: []storage.DomainKey{key}, CreatedAt: now, NextCheckAt: &next}
	err := update(a, p, action{"domain.create", d.ID}, &d, func(tx *storage.Tx) error { return tx.InsertDomain(d) })
	if errors.Is(err, storage.ErrExists) {
		return storage.Domain{}, Conflict("this account already has the domain " + name)
	}
	return d, storageErr(err, "domain")
}

// Domain reads one of the account's domains.
func (a *App) Domain(p Principal, id string) (storage.Domain, error) {
	if err := a.authorize(p, ScopeDomainsRead); err != nil {
		return storage.Domain{}, err
	}
	return a.domain(p.Account.ID, id)
}

// domain reads one of an account's domains, for use cases that have
// authorized their caller.
func (a *App) domain(accountID, id string) (storage.Domain, error) {
	var d storage.Domain
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		d, err = tx.Domain(accountID, id)
		return err
	})
	return d, storageErr(err, "domain")
}

// ListDomains lists an account's domains.
func (a *App) ListDomains(p Principal, opts storage.ListOptions) (list []storage.Domain, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeDomainsRead); err != nil {
		return nil, res, 0, err
	}
	accountID := p.Account.ID
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, err = tx.Domains(accountID, opts)
		total = tx.DomainCount(accountID)
		return err
	})
	return list, res, total, storageErr(err, "domain")
}

// DeleteDomain removes a domain; its DKIM keys are destroyed with it.
func (a *App) DeleteDomain(p Principal, id string) error {
	if err := a.authorize(p, ScopeDomainsWrite); err != nil {
		return err
	}
	err := update(a, p, action{"domain.delete", id}, new(struct{}), func(tx *storage.Tx) error { return tx.DeleteDomain(p.Account.ID, id) })
	return storageErr(err, "domain")
}

// RotateDKIM adds a new DKIM key to a domain. Signing keeps using the
// current key until the new key's record verifies; then the old key is
// retired and reported removable after RotationGrace.
func (a *App) RotateDKIM(p Principal, id, alg string) (storage.Domain, error) {
	if err := a.authorize(p, ScopeDomainsWrite); err != nil {
		return storage.Domain{}, err
	}
	accountID := p.Account.ID
	d, e := a.domain(accountID, id)
	if e != nil {
		return d, e
	}
	if alg == "" {
		alg = d.DKIMKeys[len(d.DKIMKeys)-1].Algorithm
	}
	key, e := a.newKey(alg)
	if e != nil {
		return d, e
	}
	err := update(a, p, action{"domain.dkim_rotate", id}, &d, func(tx *storage.Tx) error {
		var err error
		if d, err = tx.Domain(accountID, id); err != nil {
			return err
		}
		now := a.Now()
		var kept []storage.DomainKey
		for _, k := range d.DKIMKeys {
			if k.ActivatedAt == nil && k.RetiredAt == nil && len(d.DKIMKeys) > 1 {
				return Conflict("a rotation is already waiting for its record (" + k.Selector + ") to verify")
			}
			if k.RetiredAt != nil && !now.Before(k.RetiredAt.Add(a.opts.Domains.RotationGrace)) {
				continue // past its grace period: forget it
			}
			kept = append(kept, k)
		}
		if len(kept) == 1 && kept[0].ActivatedAt == nil {
			return Conflict("the domain's first key has not verified yet; publish it before rotating")
		}
		d.DKIMKeys = append(kept, key)
		return tx.UpdateDomain(d)
	})
	return d, storageErr(err, "domain")
}

// DomainForSending returns the account's verified domain of that name, or
// 422 DOMAIN_NOT_VERIFIED.
func (a *App) DomainForSending(accountID, name string) (d storage.Domain, err error) {
	err = a.db.View(func(tx *storage.Tx) error {
		if err := a.checkSendingDomain(tx, accountID, name); err != nil {
			return err
		}
		d, err = tx.DomainByName(accountID, strings.ToLower(strings.TrimSuffix(name, ".")))
		return err
	})
	return d, storageErr(err, "domain")
}

// checkSendingDomain is nil when the account's domain of that name is
// verified, else 422 DOMAIN_NOT_VERIFIED with the reason. It reads only the
// status index unless the answer is no.
func (a *App) checkSendingDomain(tx *storage.Tx, accountID, name string) error {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if status, err := tx.DomainStatus(accountID, name); err == nil && status == DomainVerified {
		return nil
	}
	msg := "the sending domain " + name + " is not verified for this account"
	if d, err := tx.DomainByName(accountID, name); err == nil && d.StatusReason != "" {
		msg += ": " + d.StatusReason
	}
	return &Error{Code: CodeDomainNotVerified, Message: msg,
		Details: map[string]any{"domain": name}}
}

// SigningKey is the selector and key that sign a verified domain's mail.
func SigningKey(d storage.Domain) (string, dkim.Key, bool) { return queue.SigningKey(d) }

// lookup is one record's DNS answer.
type lookup struct {
	found []string
	err   error // ErrNotFound, a TempError, or nil
}

// VerifyDomain looks the domain's records up now and stores what was
// found. It never mistakes a failed lookup for a missing record: when a
// required record cannot be looked up the domain keeps its status and the
// failure is reported in CheckError.
func (a *App) VerifyDomain(ctx context.Context, p Principal, id string) (storage.Domain, error) {
	if err := a.authorize(p, ScopeDomainsWrite); err != nil {
		return storage.Domain{}, err
	}
	accountID := p.Account.ID
	d, e := a.domain(accountID, id)
	if e != nil {
		return d, e
	}
	return a.verify(ctx, p, d)
}

// verify checks d's records in DNS and stores the outcome. For p's
// idempotent request the answer is stored with that outcome, so a replay
// does not look up DNS again. The scheduled re-check passes Principal{}.
func (a *App) verify(ctx context.Context, p Principal, d storage.Domain) (storage.Domain, error) {
	o := a.opts.Domains
	if o.Resolver == nil {
		return d, &Error{Code: CodeServiceUnavailable, Message: "no DNS resolver configured"}
	}
	ctx, cancel := context.WithTimeout(ctx, o.CheckTimeout)
	defer cancel()
	records := a.Records(d)
	answers := make([]lookup, len(records))
	var wg sync.WaitGroup
	for i, r := range records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.Type == "CNAME" {
				target, err := o.Resolver.LookupCNAME(ctx, r.Name)
				if err == nil {
					answers[i].found = []string{target}
				}
				answers[i].err = err
				return
			}
			answers[i].found, answers[i].err = o.Resolver.LookupTXT(ctx, r.Name)
		}()
	}
	wg.Wait()

	now := a.Now()
	checks := make([]storage.DNSCheck, len(records))
	var tempFailures []string
	requiredFailed := false
	for i, r := range records {
		ans := answers[i]
		c := storage.DNSCheck{Purpose: r.Purpose, Name: r.Name, Status: r.Status}
		switch {
		case ans.err != nil && dns.IsTemporary(ans.err):
			c.Error = ans.err.Error()
			tempFailures = append(tempFailures, ans.err.Error())
			if r.Required {
				requiredFailed = true
			}
		case ans.err != nil:
			c.Status = RecordMissing
		default:
			c.Status = a.judge(d, r, ans.found)
			c.Found = keptFound(r, ans.found)
		}
		checks[i] = c
	}

	var result storage.Domain
	var before string
	err := update(a, p, action{"domain.verify", d.ID}, &result, func(tx *storage.Tx) error {
		cur, err := tx.Domain(d.AccountID, d.ID)
		if err != nil {
			return err
		}
		before = cur.Status
		cur.Checks = checks
		cur.LastCheckedAt = &now
		cur.CheckError = strings.Join(tempFailures, "; ")
		next := now.Add(o.RecheckInterval)
		if requiredFailed {
			// The zone did not answer: look again soon rather than in a day.
			next = now.Add(min(o.RecheckInterval, 5*time.Minute))
		}
		cur.NextCheckAt = &next
		if !requiredFailed {
			applyVerdict(&cur, checks, now)
		}
		result = cur
		return tx.UpdateDomain(cur)
	})
	if err == nil && result.Status != before {
		// One line per change, whether the scheduler or the API checked
		// (docs/operations.md, "Logs").
		a.log.Info("domain status changed", "domain", result.Name, "domain_id", result.ID, "account", result.AccountID,
			"from", before, "to", result.Status, "reason", result.StatusReason)
	}
	return result, storageErr(err, "domain")
}

// judge decides whether what was found matches what r asks for.
func (a *App) judge(d storage.Domain, r DNSRecord, found []string) string {
	switch r.Purpose {
	case PurposeDKIM:
		for _, k := range d.DKIMKeys {
			if k.Selector == r.Selector {
				for _, txt := range found {
					if dkimMatches(txt, k) {
						return RecordVerified
					}
				}
			}
		}
		return RecordMismatch
	case PurposeSPF:
		var spf []string
		for _, txt := range found {
			if isSPF(txt) {
				spf = append(spf, txt)
			}
		}
		switch {
		case len(spf) == 0:
			return RecordMissing
		case len(spf) > 1:
			return RecordMismatch // RFC 7208 §4.5: more than one record is a permerror
		case spfAuthorizes(spf[0], a.opts.Domains):
			return RecordVerified
		}
		return RecordMismatch
	case PurposeDMARC:
		for _, txt := range found {
			if isDMARC(txt) {
				return RecordVerified
			}
		}
		return RecordMissing
	default: // CNAMEs
		for _, target := range found {
			if strings.EqualFold(strings.TrimSuffix(target, "."), r.Value) {
				return RecordVerified
			}
		}
		return RecordMismatch
	}
}

// applyVerdict moves a domain's status and active DKIM key after a complete
// check. The newest key whose record verified signs; the key it replaces is
// retired. The domain is verified when a signing key exists and SPF
// authorises this server.
func applyVerdict(d *storage.Domain, checks []storage.DNSCheck, now time.Time) {
	verified := func(purpose, name string) bool {
		return slices.ContainsFunc(checks, func(c storage.DNSCheck) bool {
			return c.Purpose == purpose && c.Name == name && c.Status == RecordVerified
		})
	}
	newest := -1
	for i, k := range d.DKIMKeys {
		if k.RetiredAt == nil && verified(PurposeDKIM, dkimName(k.Selector, d.Name)) {
			newest = i
		}
	}
	if newest >= 0 && d.DKIMKeys[newest].ActivatedAt == nil {
		for i := range d.DKIMKeys {
			if i != newest && d.DKIMKeys[i].ActivatedAt != nil && d.DKIMKeys[i].RetiredAt == nil {
				d.DKIMKeys[i].RetiredAt = &now
			}
		}
		d.DKIMKeys[newest].ActivatedAt = &now
	}
	active, hasActive := d.ActiveKey()
	var problems []string
	if !hasActive || !verified(PurposeDKIM, dkimName(active.Selector, d.Name)) {
		problems = append(problems, "the DKIM record is missing or does not match")
	}
	if !verified(PurposeSPF, d.Name) {
		problems = append(problems, "SPF does not authorise this server")
	}
	if len(problems) == 0 {
		if d.Status != DomainVerified {
			d.VerifiedAt = &now
		}
		d.Status, d.StatusReason = DomainVerified, ""
		return
	}
	d.StatusReason = strings.Join(problems, "; ")
	if d.Status == DomainVerified || d.Status == DomainFailed {
		d.Status = DomainFailed
	}
}
