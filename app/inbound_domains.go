package app

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"net"
	"regexp"
	"strings"

	"mailbolt/mta/dns"
	"mailbolt/storage"
)

// Inbound domains and routes: an account proves it may receive mail for a
// name (its MX points at this server's --hostname, and a TXT record at
// _mailbolt.<name> carries the account's own token), then routes local
// parts of it to its webhooks. See docs/inbound.md.

// InboundTokenLabel is the label of the TXT record that proves an
// account's claim on an inbound domain.
const InboundTokenLabel = "_mailbolt"

// InboundTokenPrefix starts the value of that record.
const InboundTokenPrefix = "mailbolt-verify="

// MaxInboundDomains and MaxInboundRoutes bound what one account may hold.
const (
	MaxInboundDomains = 100
	MaxInboundRoutes  = 1000
)

// InboundRecord is a DNS record an inbound domain publishes.
type InboundRecord struct {
	Type     string
	Name     string
	Value    string
	Priority int // MX only
	Purpose  string
	Status   string // verified, missing, pending (not looked up yet, or the last lookup failed)
	Found    []string
}

// Purposes of the inbound records.
const (
	PurposeInboundMX    = "mx"
	PurposeInboundToken = "ownership"
)

// InboundRecords are the records d publishes: the MX pointing at this
// server, and the ownership token. Their status is what the last check found.
func (a *App) InboundRecords(d storage.InboundDomain) []InboundRecord {
	host := a.opts.Domains.Hostname
	mx := InboundRecord{Type: "MX", Name: d.Name, Value: host, Priority: 10, Purpose: PurposeInboundMX, Status: RecordPending, Found: d.MXFound}
	txt := InboundRecord{Type: "TXT", Name: InboundTokenLabel + "." + d.Name, Value: InboundTokenPrefix + d.Token,
		Purpose: PurposeInboundToken, Status: RecordPending}
	// A failed check changes nothing: the statuses are what the last check
	// that completed its lookups found.
	if d.FoundAt != nil || d.LastCheckedAt != nil && d.CheckError == "" {
		mx.Status, txt.Status = RecordMissing, RecordMissing
		if mxPointsHere(d.MXFound, host) {
			mx.Status = RecordVerified
		}
		if d.TXTFound {
			txt.Status = RecordVerified
		}
	}
	return []InboundRecord{mx, txt}
}

func mxPointsHere(found []string, host string) bool {
	for _, f := range found {
		if strings.EqualFold(strings.TrimSuffix(f, "."), strings.TrimSuffix(host, ".")) {
			return true
		}
	}
	return false
}

func newInboundToken() string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// CreateInboundDomain adds a domain the account will receive mail for,
// pending until verified.
func (a *App) CreateInboundDomain(p Principal, name string) (storage.InboundDomain, error) {
	if err := a.authorize(p, ScopeInboundWrite); err != nil {
		return storage.InboundDomain{}, err
	}
	name, e := NormalizeDomain("name", name)
	if e != nil {
		return storage.InboundDomain{}, e
	}
	d := storage.InboundDomain{ID: NewID(), AccountID: p.Account.ID, Name: name, Token: newInboundToken(),
		Status: storage.InboundPending, CreatedAt: a.Now()}
	err := update(a, p, action{"inbound_domain.create", d.ID}, &d, func(tx *storage.Tx) error {
		if _, _, n, err := tx.InboundDomains(p.Account.ID, storage.ListOptions{Limit: 1}); err != nil {
			return err
		} else if n >= MaxInboundDomains {
			return &Error{Code: CodeQuotaExceeded, Message: "an account can have at most 100 inbound domains; delete one first"}
		}
		return tx.InsertInboundDomain(d)
	})
	if errors.Is(err, storage.ErrExists) {
		return storage.InboundDomain{}, Conflict("this account already has the inbound domain " + name)
	}
	return d, storageErr(err, "inbound domain")
}

// InboundDomain reads one of the account's inbound domains.
func (a *App) InboundDomain(p Principal, id string) (storage.InboundDomain, error) {
	if err := a.authorize(p, ScopeInboundRead); err != nil {
		return storage.InboundDomain{}, err
	}
	var d storage.InboundDomain
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		d, err = tx.InboundDomain(p.Account.ID, id)
		return err
	})
	return d, storageErr(err, "inbound domain")
}

// ListInboundDomains lists the account's inbound domains.
func (a *App) ListInboundDomains(p Principal, opts storage.ListOptions) (list []storage.InboundDomain, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeInboundRead); err != nil {
		return nil, res, 0, err
	}
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, total, err = tx.InboundDomains(p.Account.ID, opts)
		return err
	})
	return list, res, total, storageErr(err, "inbound domain")
}

// DeleteInboundDomain removes an inbound domain and its routes; mail for
// it is refused from then on. Domains are the account's, whatever the
// key's mode (as sending domains are), but a test key cannot delete a
// domain that has routes to live webhooks: that would stop live mail.
func (a *App) DeleteInboundDomain(p Principal, id string) error {
	if err := a.authorize(p, ScopeInboundWrite); err != nil {
		return err
	}
	err := update(a, p, action{"inbound_domain.delete", id}, new(struct{}), func(tx *storage.Tx) error {
		if p.Test {
			routes, err := tx.InboundDomainRoutes(p.Account.ID, id)
			if err != nil {
				return err
			}
			for _, r := range routes {
				if !r.Test {
					return NewError(CodeForbidden, "a test key cannot delete an inbound domain that has routes to live webhooks; use a live key")
				}
			}
		}
		return tx.DeleteInboundDomain(p.Account.ID, id)
	})
	return storageErr(err, "inbound domain")
}

// mxResolver is the lookup verification needs beyond DNSResolver;
// *dns.Resolver has it.
type mxResolver interface {
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
}

// VerifyInboundDomain looks up the domain's MX and ownership records now.
// Both must be in place: the MX pointing at this server's host name and
// the TXT record carrying this account's token. A name is a verified
// inbound domain of one account only (409 CONFLICT) while that account's
// token is still published; once it is not, the name moves to the account
// that verifies now. A lookup that fails
// (not one that finds nothing) keeps the domain's status and is reported
// in check_error.
func (a *App) VerifyInboundDomain(ctx context.Context, p Principal, id string) (storage.InboundDomain, error) {
	if err := a.authorize(p, ScopeInboundWrite); err != nil {
		return storage.InboundDomain{}, err
	}
	var d storage.InboundDomain
	if err := a.db.View(func(tx *storage.Tx) error {
		var err error
		d, err = tx.InboundDomain(p.Account.ID, id)
		return err
	}); err != nil {
		return d, storageErr(err, "inbound domain")
	}
	o := a.opts.Domains
	mxr, ok := o.Resolver.(mxResolver)
	if o.Resolver == nil || !ok {
		return d, &Error{Code: CodeServiceUnavailable, Message: "no DNS resolver configured"}
	}
	ctx, cancel := context.WithTimeout(ctx, o.CheckTimeout)
	defer cancel()
	var (
		mxs          []*net.MX
		txts         []string
		mxErr, txErr error
		done         = make(chan struct{})
	)
	go func() { defer close(done); mxs, mxErr = mxr.LookupMX(ctx, d.Name) }()
	txts, txErr = o.Resolver.LookupTXT(ctx, InboundTokenLabel+"."+d.Name)
	<-done

	now := a.Now()
	checkErr := ""
	for _, err := range []error{mxErr, txErr} {
		if err != nil && (dns.IsTemporary(err) || ctx.Err() != nil) {
			checkErr = err.Error()
		}
	}
	err := update(a, p, action{"inbound_domain.verify", id}, &d, func(tx *storage.Tx) error {
		var err error
		if d, err = tx.InboundDomain(p.Account.ID, id); err != nil {
			return err
		}
		if d.FoundAt == nil && d.LastCheckedAt != nil && d.CheckError == "" {
			d.FoundAt = d.LastCheckedAt // a record from before found_at: its last check completed
		}
		d.LastCheckedAt, d.CheckError = &now, checkErr
		if checkErr == "" {
			d.FoundAt = &now
			d.MXFound = nil
			for _, mx := range mxs {
				d.MXFound = append(d.MXFound, strings.ToLower(strings.TrimSuffix(mx.Host, ".")))
			}
			d.TXTFound = tokenPublished(txts, d.Token)
			switch {
			case d.TXTFound && mxPointsHere(d.MXFound, o.Hostname):
				if d.Status != storage.InboundVerified {
					d.VerifiedAt = &now
				}
				d.Status = storage.InboundVerified
			case d.Status == storage.InboundVerified:
				d.Status = storage.InboundFailed
			}
		}
		err = tx.UpdateInboundDomain(d)
		if errors.Is(err, storage.ErrExists) {
			// Another account holds the name. Its claim stands while its
			// token is still published; a token found gone (the lookup
			// just made succeeded) means that account no longer controls
			// the name: its domain fails and the claim moves, here.
			holder, herr := tx.VerifiedInboundDomain(d.Name)
			if herr != nil {
				return herr
			}
			if tokenPublished(txts, holder.Token) {
				return Conflict("the domain " + d.Name + " is already a verified inbound domain of another account")
			}
			holder.Status, holder.TXTFound, holder.CheckError = storage.InboundFailed, false, ""
			holder.MXFound, holder.LastCheckedAt, holder.FoundAt = d.MXFound, &now, &now
			if err := tx.UpdateInboundDomain(holder); err != nil {
				return err
			}
			a.log.Info("inbound domain claim moved: the holder's token is no longer published",
				"domain", d.Name, "from_account", holder.AccountID, "to_account", d.AccountID)
			err = tx.UpdateInboundDomain(d)
		}
		return err
	})
	return d, storageErr(err, "inbound domain")
}

// tokenPublished reports whether the TXT values txts carry token.
func tokenPublished(txts []string, token string) bool {
	for _, t := range txts {
		if strings.TrimSpace(t) == InboundTokenPrefix+token {
			return true
		}
	}
	return false
}

// patternRE is what a route's pattern may be: a local part (dot-atom, lower
// case) or "*".
var patternRE = regexp.MustCompile(`^(\*|[a-z0-9!#$%&'+/=?^_{|}~-]+(\.[a-z0-9!#$%&'+/=?^_{|}~-]+)*)$`)

// InboundRouteInput is a request for a new route.
type InboundRouteInput struct {
	DomainID, Pattern, WebhookID string
}

// CreateInboundRoute routes mail for a local part (or "*", every other
// one) of one of the account's inbound domains to one of its webhooks.
func (a *App) CreateInboundRoute(p Principal, in InboundRouteInput) (storage.InboundRoute, error) {
	if err := a.authorize(p, ScopeInboundWrite); err != nil {
		return storage.InboundRoute{}, err
	}
	pattern := strings.ToLower(strings.TrimSpace(in.Pattern))
	switch {
	case in.DomainID == "":
		return storage.InboundRoute{}, Validation("domain_id", "is required")
	case in.WebhookID == "":
		return storage.InboundRoute{}, Validation("webhook_id", "is required")
	case pattern == "":
		return storage.InboundRoute{}, Validation("pattern", "is required: a local part such as support, or *")
	case len(pattern) > 64 || !patternRE.MatchString(pattern):
		return storage.InboundRoute{}, Validation("pattern", "must be a local part of at most 64 characters (such as support), or *")
	}
	r := storage.InboundRoute{ID: NewID(), AccountID: p.Account.ID, DomainID: in.DomainID, Pattern: pattern,
		WebhookID: in.WebhookID, CreatedAt: a.Now()}
	err := update(a, p, action{"inbound_route.create", r.ID}, &r, func(tx *storage.Tx) error {
		if _, err := tx.InboundDomain(p.Account.ID, in.DomainID); errors.Is(err, storage.ErrNotFound) {
			return Validation("domain_id", "no inbound domain "+in.DomainID+" in this account")
		} else if err != nil {
			return err
		}
		w, err := webhookOf(tx, p, in.WebhookID)
		if errors.Is(err, storage.ErrNotFound) {
			return Validation("webhook_id", "no webhook "+in.WebhookID+" in this account (of this key's mode)")
		} else if err != nil {
			return err
		}
		r.Test = w.Test
		if _, _, n, err := tx.InboundRoutes(p.Account.ID, storage.ListOptions{Limit: 1}); err != nil {
			return err
		} else if n >= MaxInboundRoutes {
			return &Error{Code: CodeQuotaExceeded, Message: "an account can have at most 1000 inbound routes; delete one first"}
		}
		if err := tx.InsertInboundRoute(r); errors.Is(err, storage.ErrExists) {
			return Conflict("the domain already has a route for " + pattern)
		} else if err != nil {
			return err
		}
		return nil
	})
	return r, storageErr(err, "inbound route")
}

// routeOf reads one of the account's routes of the principal's mode (a
// route has its webhook's mode); a route of the other mode is not found.
func routeOf(tx *storage.Tx, p Principal, id string) (storage.InboundRoute, error) {
	r, err := tx.InboundRoute(p.Account.ID, id)
	if err == nil && r.Test != p.Test {
		return r, storage.ErrNotFound
	}
	return r, err
}

// InboundRoute reads one of the account's routes of the key's mode.
func (a *App) InboundRoute(p Principal, id string) (storage.InboundRoute, error) {
	if err := a.authorize(p, ScopeInboundRead); err != nil {
		return storage.InboundRoute{}, err
	}
	var r storage.InboundRoute
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		r, err = routeOf(tx, p, id)
		return err
	})
	return r, storageErr(err, "inbound route")
}

// ListInboundRoutes lists the account's routes of the key's mode.
func (a *App) ListInboundRoutes(p Principal, opts storage.ListOptions) (list []storage.InboundRoute, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeInboundRead); err != nil {
		return nil, res, 0, err
	}
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, total, err = tx.InboundRoutesOfMode(p.Account.ID, p.Test, opts)
		return err
	})
	return list, res, total, storageErr(err, "inbound route")
}

// DeleteInboundRoute removes a route; mail for its pattern is refused from
// then on (unless a "*" route takes it).
func (a *App) DeleteInboundRoute(p Principal, id string) error {
	if err := a.authorize(p, ScopeInboundWrite); err != nil {
		return err
	}
	err := update(a, p, action{"inbound_route.delete", id}, new(struct{}), func(tx *storage.Tx) error {
		if _, err := routeOf(tx, p, id); err != nil {
			return err
		}
		return tx.DeleteInboundRoute(p.Account.ID, id)
	})
	return storageErr(err, "inbound route")
}

// InboundRaw is a received message exactly as it arrived, kept as long as
// its email.received event. A key reads only the messages of its mode (the
// mode of their event), as it reads only those events.
func (a *App) InboundRaw(p Principal, id string) ([]byte, error) {
	if err := a.authorize(p, ScopeInboundRead); err != nil {
		return nil, err
	}
	var raw []byte
	err := a.db.View(func(tx *storage.Tx) error {
		m, err := tx.InboundMessage(p.Account.ID, id)
		if err != nil {
			return err
		}
		if m.Test != p.Test {
			return storage.ErrNotFound
		}
		raw, err = tx.InboundRaw(m)
		return err
	})
	return raw, storageErr(err, "inbound message")
}
