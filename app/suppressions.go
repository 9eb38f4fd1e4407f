package app

import (
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"mailbolt/storage"
)

// SuppressionReasons are the reasons a recipient can be suppressed for.
var SuppressionReasons = []string{"hard_bounce", "complaint", "unsubscribe", "manual"}

// NormalizeAddress checks that s is one bare email address and returns
// the one form every address is keyed, matched and shown by
// (storage.AddressKey): lower case, the domain in A-labels ("xn--"), as a
// sending domain is stored. Recipients (a suppression's, a message's),
// team members, dashboard logins and contact addresses all take it, so
// sup@exämple.org and sup@xn--exmple-cua.org are one recipient, one
// member and one login. A domain outside ASCII that is not a valid
// internationalised domain name is refused.
func NormalizeAddress(field, s string) (string, error) { return normalizeAddress(field, s, false) }

// lookupAddress is NormalizeAddress for finding what is already stored: an
// address whose domain is outside ASCII and not a valid internationalised
// domain name is not refused but looked up by the key storage gives it (the
// address in lower case). Such addresses were taken before that check
// existed (team members and logins until schema 20, recipients until 19)
// and stay keyed so; refusing them would leave a member that cannot be
// found to be removed, and a login that always fails.
func lookupAddress(field, s string) (string, error) { return normalizeAddress(field, s, true) }

func normalizeAddress(field, s string, lookup bool) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", Validation(field, "is required")
	}
	if !utf8.ValidString(s) {
		return "", Validation(field, ReasonNotUTF8)
	}
	if len(s) > 254 {
		return "", Validation(field, "must be at most 254 characters")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || addr.Name != "" {
		return "", Validation(field, "must be a bare email address such as user@example.com")
	}
	key, err := storage.AddressKey(addr.Address)
	if err != nil && !lookup {
		return "", Validation(field, err.Error())
	}
	if len(key) > 254 {
		return "", Validation(field, "must be at most 254 characters with its domain in A-labels")
	}
	return key, nil
}

// sameRecipient reports whether a and b, addresses from anywhere (a
// report, a query, a stored record), name one recipient: the same address
// in any case and either spelling of an IDN domain.
func sameRecipient(a, b string) bool {
	ka, _ := storage.AddressKey(strings.TrimSpace(a))
	kb, _ := storage.AddressKey(strings.TrimSpace(b))
	return ka != "" && ka == kb
}

// AddedSuppression is what AddSuppression did: the stored record, and
// whether this call created it.
type AddedSuppression struct {
	Suppression storage.Suppression
	Created     bool
}

// CheckStream validates an optional stream parameter: empty or one of
// storage.Streams.
func CheckStream(field, stream string) error {
	if stream != "" && !slices.Contains(storage.Streams, stream) {
		return Validation(field, "must be one of "+strings.Join(storage.Streams, ", "))
	}
	return nil
}

// suppressionRecord validates one suppression to add (the fields of POST
// /v1/suppressions and of each imported row) and returns the record to
// store: the address normalised (NormalizeAddress), the reason manual
// when none is given.
func suppressionRecord(accountID string, in SuppressionInput, now time.Time) (storage.Suppression, error) {
	addr, e := NormalizeAddress("recipient", in.Recipient)
	if e != nil {
		return storage.Suppression{}, e
	}
	reason := in.Reason
	if reason == "" {
		reason = "manual"
	}
	if !slices.Contains(SuppressionReasons, reason) {
		return storage.Suppression{}, Validation("reason", "must be one of "+strings.Join(SuppressionReasons, ", "))
	}
	if e := CheckStream("stream", in.Stream); e != nil {
		return storage.Suppression{}, e
	}
	return storage.Suppression{AccountID: accountID, Recipient: addr, Stream: in.Stream, Reason: reason, CreatedAt: now}, nil
}

// AddSuppression suppresses a recipient for one stream, or for all when
// stream is empty. Adding one that is already suppressed for that stream is
// not an error: the stored record is returned with created=false.
func (a *App) AddSuppression(p Principal, recipient, reason, stream string) (s storage.Suppression, created bool, e error) {
	if err := a.authorize(p, ScopeSuppressionsWrite); err != nil {
		return s, false, err
	}
	in, e := suppressionRecord(p.Account.ID, SuppressionInput{Recipient: recipient, Reason: reason, Stream: stream}, a.Now())
	if e != nil {
		return s, false, e
	}
	var added AddedSuppression
	err := update(a, p, action{"suppression.add", in.Recipient}, &added, func(tx *storage.Tx) error {
		var err error
		added.Suppression, added.Created, err = tx.PutSuppression(in)
		return err
	})
	return added.Suppression, added.Created, storageErr(err, "suppression")
}

// ListSuppressions lists an account's suppressions in address order.
func (a *App) ListSuppressions(p Principal, opts storage.ListOptions) (list []storage.Suppression, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeSuppressionsRead); err != nil {
		return nil, res, 0, err
	}
	accountID := p.Account.ID
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, err = tx.Suppressions(accountID, opts)
		total = tx.SuppressionCount(accountID)
		return err
	})
	return list, res, total, storageErr(err, "suppression")
}

// DeleteSuppression lets mail reach a recipient again: it removes every
// entry of the recipient, or with a stream only that stream's entry.
func (a *App) DeleteSuppression(p Principal, recipient, stream string) error {
	if err := a.authorize(p, ScopeSuppressionsWrite); err != nil {
		return err
	}
	if e := CheckStream("stream", stream); e != nil {
		return e
	}
	accountID := p.Account.ID
	addr, _ := storage.AddressKey(strings.TrimSpace(recipient)) // an address that is not valid is simply not found
	err := update(a, p, action{"suppression.delete", addr}, new(struct{}), func(tx *storage.Tx) error { return tx.DeleteSuppression(accountID, addr, stream) })
	return storageErr(err, "suppression")
}
