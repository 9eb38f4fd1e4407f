package storage

import (
	"bytes"
	"fmt"
	"time"
)

// Person is someone who logs in to the dashboard: an email address with one
// password across every account it is a member of. The address is in
// AddressKey form, the key of the record and of the person's sessions and
// memberships (schema v20), so a login in either spelling of an
// internationalised domain is the one person. PasswordHash is an
// argon2id hash in the PHC string form ($argon2id$v=19$m=…,t=…,p=…$salt$hash);
// the password itself is never stored.
type Person struct {
	Email         string    `json:"email"`
	PasswordHash  string    `json:"password_hash,omitempty"`
	PasswordSetAt time.Time `json:"password_set_at"`
	CreatedAt     time.Time `json:"created_at"`
	// TOTPSeed is the key of the person's TOTP second factor (RFC 6238),
	// stored sealed; empty while the second factor is off. TOTPPending is
	// a key being enrolled, until a code made with it confirms it.
	TOTPSeed    []byte `json:"totp_seed,omitempty"`
	TOTPPending []byte `json:"totp_pending,omitempty"`
	// TOTPLastStep is the last time step a code was accepted for: each
	// code works once.
	TOTPLastStep int64 `json:"totp_last_step,omitempty"`
	// RecoveryCodes are the SHA-256 hashes of the unused recovery codes.
	RecoveryCodes [][]byte `json:"recovery_codes,omitempty"`
	// CodeFailures counts the wrong second-factor codes since the last
	// right one; CodesLockedUntil is when codes are taken again after
	// too many (RFC 4226 §7.3).
	CodeFailures     int        `json:"code_failures,omitempty"`
	CodesLockedUntil *time.Time `json:"codes_locked_until,omitempty"`
}

func personContext(email, field string) string { return "person/" + email + "/" + field }

// PasswordLink is a one-time link where a person sets a password (the CLI's
// `team add` and `team reset-password`, and the first start). Only the
// SHA-256 of its token is stored. An Owner link (the first start's) names
// no email: its page asks for one and makes that person the account's
// owner.
type PasswordLink struct {
	AccountID string    `json:"account_id"`
	Email     string    `json:"email,omitempty"`
	Owner     bool      `json:"owner,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Session is a logged-in dashboard session, stored under the SHA-256 of its
// id (the cookie's value). AccountID is the account picked (empty until the
// person picks one). CSRF is the token every form of the session carries.
type Session struct {
	Email     string `json:"email"`
	AccountID string `json:"account_id,omitempty"`
	CSRF      string `json:"csrf"`
	// SecondFactorDue: the password was right, the TOTP code is still
	// to come; the session reaches nothing else until it does.
	SecondFactorDue bool      `json:"second_factor_due,omitempty"`
	Source          string    `json:"source,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	LastSeenAt      time.Time `json:"last_seen_at"`
	ExpiresAt       time.Time `json:"expires_at"` // absolute expiry
}

// Person reads a person by email (in any case and either IDN spelling),
// its TOTP keys opened.
func (tx *Tx) Person(email string) (Person, error) {
	var p Person
	if err := getJSON(tx.bucket(bucketPeople), []byte(addressKey(email)), &p); err != nil {
		return p, err
	}
	for _, f := range p.totpFields() {
		if len(*f.val) == 0 {
			continue
		}
		clear, err := tx.openValue(personContext(p.Email, f.name), *f.val)
		if err != nil {
			return Person{}, fmt.Errorf("person %s: %w", p.Email, err)
		}
		*f.val = clear
	}
	return p, nil
}

// PutPerson writes a person, its TOTP keys sealed.
func (tx *Tx) PutPerson(p Person) error {
	p.Email = addressKey(p.Email)
	for _, f := range p.totpFields() {
		if len(*f.val) == 0 {
			continue
		}
		sealed, err := tx.sealValue(personContext(p.Email, f.name), *f.val)
		if err != nil {
			return err
		}
		*f.val = sealed
	}
	return putJSON(tx.bucket(bucketPeople), []byte(p.Email), p)
}

// totpFields are the person's sealed fields, by name.
func (p *Person) totpFields() []struct {
	name string
	val  *[]byte
} {
	return []struct {
		name string
		val  *[]byte
	}{{"totp_seed", &p.TOTPSeed}, {"totp_pending", &p.TOTPPending}}
}

// PutPasswordLink stores a link under the hash of its token; the sweeper
// removes it once it expires.
func (tx *Tx) PutPasswordLink(hash []byte, l PasswordLink) error {
	l.Email = addressKey(l.Email)
	if err := putJSON(tx.bucket(bucketPasswordLinks), hash, l); err != nil {
		return err
	}
	return tx.addExpiry(l.ExpiresAt, kindPasswordLink, hash)
}

// PasswordLink reads the link whose token hashes to hash.
func (tx *Tx) PasswordLink(hash []byte) (PasswordLink, error) {
	var l PasswordLink
	err := getJSON(tx.bucket(bucketPasswordLinks), hash, &l)
	return l, err
}

// DeletePasswordLink removes a used link.
func (tx *Tx) DeletePasswordLink(hash []byte) error {
	return tx.bucket(bucketPasswordLinks).Delete(hash)
}

func expirePasswordLink(tx *Tx, key []byte, now time.Time) error {
	l, err := tx.PasswordLink(key)
	if err != nil || l.ExpiresAt.After(now) {
		return nil
	}
	return tx.DeletePasswordLink(key)
}

// PutSession writes a session under the hash of its id, with its entry in
// its person's index and, when new, its expiry.
func (tx *Tx) PutSession(hash []byte, s Session) error {
	s.Email = addressKey(s.Email)
	b := tx.bucket(bucketSessions)
	isNew := b.Get(hash) == nil
	if err := putJSON(b, hash, s); err != nil {
		return err
	}
	if !isNew {
		return nil
	}
	if err := tx.bucket(bucketSessionsByEmail).Put(append(prefix(s.Email), hash...), nil); err != nil {
		return err
	}
	return tx.addExpiry(s.ExpiresAt, kindSession, hash)
}

// Session reads the session whose id hashes to hash.
func (tx *Tx) Session(hash []byte) (Session, error) {
	var s Session
	err := getJSON(tx.bucket(bucketSessions), hash, &s)
	return s, err
}

// DeleteSession ends one session; ending one that is gone is no error.
func (tx *Tx) DeleteSession(hash []byte) error {
	s, err := tx.Session(hash)
	if err != nil {
		return nil
	}
	if err := tx.bucket(bucketSessionsByEmail).Delete(append(prefix(addressKey(s.Email)), hash...)); err != nil {
		return err
	}
	return tx.bucket(bucketSessions).Delete(hash)
}

// DeleteSessions ends every session of email, or only those in account
// accountID when it is not empty, and reports how many.
func (tx *Tx) DeleteSessions(email, accountID string) (int, error) {
	var hashes [][]byte
	pfx := prefix(addressKey(email))
	c := tx.bucket(bucketSessionsByEmail).Cursor()
	for k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, _ = c.Next() {
		hashes = append(hashes, bytes.Clone(k[len(pfx):]))
	}
	n := 0
	for _, h := range hashes {
		if accountID != "" {
			if s, err := tx.Session(h); err == nil && s.AccountID != accountID {
				continue
			}
		}
		if err := tx.DeleteSession(h); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func expireSession(tx *Tx, key []byte, now time.Time) error {
	s, err := tx.Session(key)
	if err != nil || s.ExpiresAt.After(now) {
		return nil
	}
	return tx.DeleteSession(key)
}

// Membership is one account a person is a member of.
type Membership struct {
	AccountID string
	MemberID  string
}

// Memberships lists the accounts email is a member of, by account id.
func (tx *Tx) Memberships(email string) ([]Membership, error) {
	var out []Membership
	pfx := prefix(addressKey(email))
	c := tx.bucket(bucketTeamByEmail).Cursor()
	for k, v := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
		out = append(out, Membership{AccountID: string(k[len(pfx):]), MemberID: string(v)})
	}
	return out, nil
}

// TeamMemberByEmail reads the member of an account with that email (in
// any case and either IDN spelling).
func (tx *Tx) TeamMemberByEmail(accountID, email string) (TeamMember, error) {
	id := tx.bucket(bucketTeamEmails).Get(join(accountID, addressKey(email)))
	if id == nil {
		return TeamMember{}, ErrNotFound
	}
	return tx.TeamMember(accountID, string(id))
}
