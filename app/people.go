package app

import (
	"errors"
	"slices"
	"strings"
	"time"

	"mailbolt/storage"
)

// PasswordPath is the dashboard page where a one-time link sets a
// password, on the public URL.
const PasswordPath = "/dashboard/password/"

// PasswordLinkTTL is how long a set-password link works.
const PasswordLinkTTL = 24 * time.Hour

// PasswordLink is a new one-time link where a person sets a dashboard
// password; the token is shown once and only its hash is stored.
type PasswordLink struct {
	Token     string
	URL       string
	Email     string // empty for the first start's owner link
	AccountID string
	ExpiresAt time.Time
}

// newPasswordLink stores a link for email in accountID (owner: the first
// start's, which asks for the email) and returns its token.
func (a *App) newPasswordLink(tx *storage.Tx, accountID, email string, owner bool) (PasswordLink, error) {
	now := a.Now().UTC()
	token := randomToken()
	l := storage.PasswordLink{AccountID: accountID, Email: email, Owner: owner, CreatedAt: now, ExpiresAt: now.Add(PasswordLinkTTL)}
	if err := tx.PutPasswordLink(HashSecret(token), l); err != nil {
		return PasswordLink{}, err
	}
	return PasswordLink{Token: token, URL: a.PasswordURL(token), Email: email, AccountID: accountID, ExpiresAt: l.ExpiresAt}, nil
}

// PasswordURL is the page of a set-password link's token, on the public
// URL (the first start prints it once the URL is known).
func (a *App) PasswordURL(token string) string { return a.publicURL(PasswordPath + token) }

// AddMember adds email to p's account as an active member with role and
// returns a link where that person sets a password (the CLI's `team add`).
// The person may already have a password from another account; the link
// then replaces it only if used. Adding a member twice is a conflict.
func (a *App) AddMember(p Principal, email, role string) (storage.TeamMember, PasswordLink, error) {
	if err := a.authorize(p, ScopeTeamWrite); err != nil {
		return storage.TeamMember{}, PasswordLink{}, err
	}
	addr, e := NormalizeAddress("email", email)
	if e != nil {
		return storage.TeamMember{}, PasswordLink{}, e
	}
	if !slices.Contains(Roles, role) {
		return storage.TeamMember{}, PasswordLink{}, Validation("role", "must be one of "+strings.Join(Roles, ", "))
	}
	if e := mayGrant(p, role); e != nil {
		return storage.TeamMember{}, PasswordLink{}, e
	}
	now := a.Now()
	m := storage.TeamMember{ID: NewID(), AccountID: p.Account.ID, Email: addr, Role: role, Status: "active",
		InvitedAt: now, AcceptedAt: &now}
	var link PasswordLink
	err := update(a, p, action{"team.add", addr + " as " + role}, &link, func(tx *storage.Tx) error {
		if err := tx.InsertTeamMember(m); err != nil {
			return err
		}
		var err error
		link, err = a.newPasswordLink(tx, m.AccountID, addr, false)
		return err
	})
	if e := storageErr(err, "team member with this email"); e != nil {
		return storage.TeamMember{}, PasswordLink{}, e
	}
	return m, link, nil
}

// ResetPassword makes a new set-password link for the member of p's
// account with that email (the CLI's `team reset-password`). The old
// password keeps working until the link is used.
func (a *App) ResetPassword(p Principal, email string) (PasswordLink, error) {
	if err := a.authorize(p, ScopeTeamWrite); err != nil {
		return PasswordLink{}, err
	}
	addr, e := lookupAddress("email", email)
	if e != nil {
		return PasswordLink{}, e
	}
	var link PasswordLink
	err := update(a, p, action{"team.reset_password", addr}, &link, func(tx *storage.Tx) error {
		m, err := tx.TeamMemberByEmail(p.Account.ID, addr)
		if err != nil {
			return err
		}
		if mayGrant(p, m.Role) != nil {
			return NewError(CodeForbidden, "only an owner resets the password of an "+m.Role)
		}
		link, err = a.newPasswordLink(tx, p.Account.ID, addr, false)
		return err
	})
	if e := storageErr(err, "team member with this email"); e != nil {
		return PasswordLink{}, e
	}
	return link, nil
}

// LinkInfo reads what a set-password link is for (404 NOT_FOUND when it
// is unknown, used or expired).
func (a *App) LinkInfo(token string) (storage.PasswordLink, error) {
	var l storage.PasswordLink
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		if l, err = tx.PasswordLink(HashSecret(token)); err == nil && linkVoid(tx, l, l.Email, a.Now()) {
			err = storage.ErrNotFound
		}
		return err
	})
	return l, storageErr(err, "password link")
}

// linkVoid reports whether a set-password link for email can no longer be
// used: it has expired, or it was made before the person's password last
// changed — once a password is chosen, an older link (in scrollback, in
// mail) must not replace it. An owner link names its email only when used.
func linkVoid(tx *storage.Tx, l storage.PasswordLink, email string, now time.Time) bool {
	if !now.Before(l.ExpiresAt) {
		return true
	}
	if email == "" {
		return false
	}
	p, err := tx.Person(email)
	return err == nil && p.PasswordHash != "" && l.CreatedAt.Before(p.PasswordSetAt)
}

// LinkInfoWithAccount is LinkInfo and the name of the link's account.
func (a *App) LinkInfoWithAccount(token string) (storage.PasswordLink, string, error) {
	l, err := a.LinkInfo(token)
	if err != nil {
		return l, "", err
	}
	var acct storage.Account
	err = a.db.View(func(tx *storage.Tx) error {
		var err error
		acct, err = tx.Account(l.AccountID)
		return err
	})
	return l, acct.Name, storageErr(err, "password link")
}

// SetPassword uses a one-time link: it sets the person's password, ends
// every session the person had (a password change signs out everywhere),
// and spends the link. An owner link (the first start's) takes the email
// from the form and makes that person an owner of the link's account;
// other links name their person, whose email must be given back or left
// empty. source is the client address, for the audit log.
func (a *App) SetPassword(token, email, password, source string) (string, error) {
	if e := checkPasswordRules("password", password); e != nil {
		return "", e
	}
	l, err := a.LinkInfo(token)
	if err != nil {
		return "", err
	}
	addr := l.Email
	if l.Owner {
		if addr, err = NormalizeAddress("email", email); err != nil {
			return "", err
		}
	}
	hash := hashPassword(password) // slow: outside the transaction, which may run again
	now := a.Now().UTC()
	err = a.db.Update(func(tx *storage.Tx) error {
		cur, err := tx.PasswordLink(HashSecret(token))
		if err != nil || linkVoid(tx, cur, addr, now) {
			return storage.ErrNotFound
		}
		acct, err := tx.Account(cur.AccountID)
		if err != nil {
			return storage.ErrNotFound
		}
		if cur.Owner {
			if _, err := tx.TeamMemberByEmail(acct.ID, addr); errors.Is(err, storage.ErrNotFound) {
				m := storage.TeamMember{ID: NewID(), AccountID: acct.ID, Email: addr, Role: "owner", Status: "active",
					InvitedAt: now, AcceptedAt: &now}
				if err := tx.InsertTeamMember(m); err != nil {
					return err
				}
			}
		} else if _, err := tx.TeamMemberByEmail(acct.ID, addr); err != nil {
			return storage.ErrNotFound // removed since the link was made
		}
		if err := a.putPassword(tx, addr, hash, now); err != nil {
			return err
		}
		if err := tx.DeletePasswordLink(HashSecret(token)); err != nil {
			return err
		}
		p := Principal{Kind: KindPerson, Account: acct, Actor: addr, Source: source}
		return a.audit(tx, p, action{"person.set_password", addr})
	})
	if e := storageErr(err, "password link"); e != nil {
		return "", e
	}
	return addr, nil
}

// putPassword stores a person's new password hash and ends the person's
// sessions.
func (a *App) putPassword(tx *storage.Tx, email, hash string, now time.Time) error {
	person, err := tx.Person(email)
	if errors.Is(err, storage.ErrNotFound) {
		person = storage.Person{Email: email, CreatedAt: now}
	} else if err != nil {
		return err
	}
	person.PasswordHash, person.PasswordSetAt = hash, now
	if err := tx.PutPerson(person); err != nil {
		return err
	}
	_, err = tx.DeleteSessions(email, "")
	return err
}

// HasPassword reports whether the person with this email has set a
// dashboard password (the accept page asks for one when not).
func (a *App) HasPassword(email string) bool {
	has := false
	a.db.View(func(tx *storage.Tx) error {
		p, err := tx.Person(email)
		has = err == nil && p.PasswordHash != ""
		return nil
	})
	return has
}

// Removal is a member taken off an account and the API keys that went
// with them.
type Removal struct {
	Member storage.TeamMember
	// RevokedKeys are the live keys the person had made (from the
	// dashboard, or with a key they made) that the removal revoked: none
	// when the remover kept them.
	RevokedKeys []storage.APIKey
}

// RemoveMember takes a member off p's account and ends the sessions that
// person had in it. Unless keepKeys, it also revokes the keys the person
// made (keyPeople), in the same transaction, so a person who leaves does
// not keep the account's access through a key they hold. Removing an
// owner or admin needs "*" (mayGrant); the last owner cannot be removed
// (409 CONFLICT).
func (a *App) RemoveMember(p Principal, memberID string, keepKeys bool) (Removal, error) {
	if err := a.authorize(p, ScopeTeamWrite); err != nil {
		return Removal{}, err
	}
	var out Removal
	err := update(a, p, action{"team.remove", memberID}, &out, func(tx *storage.Tx) error {
		out = Removal{}
		m, err := tx.TeamMember(p.Account.ID, memberID)
		if err != nil {
			return err
		}
		if e := mayGrant(p, m.Role); e != nil {
			return e
		}
		if err := keepAnOwner(tx, m, "the account's last owner cannot be removed"); err != nil {
			return err
		}
		if err := tx.DeleteTeamMember(p.Account.ID, memberID); err != nil {
			return err
		}
		if _, err = tx.DeleteSessions(m.Email, p.Account.ID); err != nil {
			return err
		}
		out.Member = m
		// A pending invitation is not the person it names: whatever keys
		// that address made in an earlier membership were left to live
		// by that membership's removal, and cancelling an invitation must
		// not revoke them.
		if !keepKeys && m.Status == "active" {
			out.RevokedKeys, err = a.revokeKeysOf(tx, p, m.Email, a.Now())
		}
		return err
	})
	if e := storageErr(err, "team member"); e != nil {
		return Removal{}, e
	}
	return out, nil
}

// ChangeRole gives a member of p's account another role. Granting or
// revoking owner or admin needs "*" (mayGrant), both the role taken away
// and the one given; the last active owner keeps the role (409 CONFLICT).
// The member's sessions read the new role from their next request.
func (a *App) ChangeRole(p Principal, memberID, role string) (storage.TeamMember, error) {
	if err := a.authorize(p, ScopeTeamWrite); err != nil {
		return storage.TeamMember{}, err
	}
	if !slices.Contains(Roles, role) {
		return storage.TeamMember{}, Validation("role", "must be one of "+strings.Join(Roles, ", "))
	}
	var m storage.TeamMember
	err := update(a, p, action{"team.role", memberID + " " + role}, &m, func(tx *storage.Tx) error {
		var err error
		if m, err = tx.TeamMember(p.Account.ID, memberID); err != nil {
			return err
		}
		if e := mayGrant(p, m.Role); e != nil {
			return e
		}
		if e := mayGrant(p, role); e != nil {
			return e
		}
		if m.Role == role {
			return nil
		}
		if role != "owner" {
			if err := keepAnOwner(tx, m, "the account's last owner keeps the role: make someone else owner first"); err != nil {
				return err
			}
		}
		m.Role = role
		return tx.UpdateTeamMember(m)
	})
	if e := storageErr(err, "team member"); e != nil {
		return storage.TeamMember{}, e
	}
	return m, nil
}

// keepAnOwner refuses (409 CONFLICT, why) to take m out of the owners when
// m is the account's last active owner.
func keepAnOwner(tx *storage.Tx, m storage.TeamMember, why string) error {
	if m.Role != "owner" || m.Status != "active" {
		return nil
	}
	list, _, err := tx.TeamMembers(m.AccountID, storage.ListOptions{Limit: -1})
	if err != nil {
		return err
	}
	owners := 0
	for _, o := range list {
		if o.Role == "owner" && o.Status == "active" {
			owners++
		}
	}
	if owners <= 1 {
		return Conflict(why)
	}
	return nil
}

// MemberByEmail reads the member of p's account with that email.
func (a *App) MemberByEmail(p Principal, email string) (storage.TeamMember, error) {
	if err := a.authorize(p, ScopeTeamRead); err != nil {
		return storage.TeamMember{}, err
	}
	addr, e := lookupAddress("email", email)
	if e != nil {
		return storage.TeamMember{}, e
	}
	var m storage.TeamMember
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		m, err = tx.TeamMemberByEmail(p.Account.ID, addr)
		return err
	})
	return m, storageErr(err, "team member with this email")
}
