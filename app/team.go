package app

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"mailbolt/storage"
)

// Roles a team member can hold.
var Roles = []string{"owner", "admin", "developer", "viewer"}

// Invitation is a new member with the token that accepts the invitation;
// the token is shown once and only its hash is stored. AcceptURL is the
// page that accepts it; EmailStatus says whether the invitation was sent
// by mail: "queued", or why not ("not_configured": no --system-from;
// "sender_unverified": no account has its domain verified).
type Invitation struct {
	Member      storage.TeamMember
	Token       string
	AcceptURL   string
	EmailStatus string
	MessageID   string // the invitation message, when queued
}

// AcceptPath is where invitations are accepted, on the public URL.
const AcceptPath = "/v1/team/accept/"

// Invite adds a member with status "invited" and, when the server has a
// system sender (--system-from) on a verified domain, sends the
// invitation by mail. Inviting an address that is already on the team is
// a conflict, unless its invitation expired unaccepted: that one is
// replaced (a new member id and token; the old link stays dead).
func (a *App) Invite(p Principal, email, role string) (Invitation, error) {
	if err := a.authorize(p, ScopeTeamWrite); err != nil {
		return Invitation{}, err
	}
	accountID := p.Account.ID
	addr, e := NormalizeAddress("email", email)
	if e != nil {
		return Invitation{}, e
	}
	if !slices.Contains(Roles, role) {
		return Invitation{}, Validation("role", "must be one of "+strings.Join(Roles, ", "))
	}
	if e := mayGrant(p, role); e != nil {
		return Invitation{}, e
	}
	m := storage.TeamMember{ID: NewID(), AccountID: accountID, Email: addr, Role: role,
		Status: "invited", InvitedAt: a.Now()}
	token, err := inviteToken(accountID, m.ID)
	if err != nil {
		return Invitation{}, Internal(err)
	}
	m.TokenHash = HashSecret(token)
	inv := Invitation{Member: m, Token: token, AcceptURL: a.publicURL(AcceptPath + token)}
	sender, status := a.invitationSender()
	inv.EmailStatus = status
	// The invitation mail, when there is a sender, is prepared first and
	// stored in the transaction of the member: both are committed, with
	// the request's idempotent answer, or neither is.
	var mail []prepared
	var mailSent []storage.Event
	if sender.ID != "" {
		if mail, mailSent, err = a.prepareBatch(operatorIn(sender), []MessageInput{a.invitationMail(p.Account, inv)}, false); err != nil {
			a.log.Error("preparing an invitation mail failed", "err", err)
			inv.EmailStatus, mail = "failed", nil
		}
	}
	err = update(a, p, action{"team.invite", m.Email + " as " + m.Role}, &inv, func(tx *storage.Tx) error {
		if _, err := tx.Account(accountID); err != nil {
			return err
		}
		if old, err := tx.TeamMemberByEmail(accountID, m.Email); err == nil && a.invitationExpired(old) != nil {
			// Replacing removes the dead invitation: the caller must be
			// one who could remove it (RemoveMember's rule), and the
			// audit log says so.
			if e := mayGrant(p, old.Role); e != nil {
				return e
			}
			if err := tx.DeleteTeamMember(accountID, old.ID); err != nil {
				return err
			}
			if err := a.audit(tx, p, action{"team.remove", old.ID + " (" + old.Email + ", invitation expired)"}); err != nil {
				return err
			}
		}
		if err := tx.InsertTeamMember(m); err != nil {
			return err
		}
		if mail == nil {
			return nil
		}
		msgs, err := fileBatch(tx, mail, mailSent)
		if err != nil {
			return err
		}
		inv.EmailStatus, inv.MessageID = "queued", msgs[0].ID
		return nil
	})
	if e := storageErr(err, "team member with this email"); e != nil {
		return Invitation{}, e
	}
	return inv, nil
}

// inviteToken is base64url(account uuid, member uuid, 32 random bytes): it
// names the member it accepts, and only its hash is stored.
func inviteToken(accountID, memberID string) (string, error) {
	acct, err := uuid.Parse(accountID)
	if err != nil {
		return "", err
	}
	member, err := uuid.Parse(memberID)
	if err != nil {
		return "", err
	}
	b := append(append(acct[:], member[:]...), make([]byte, 32)...)
	if _, err := rand.Read(b[32:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// invitee finds the member an invitation token names; ok is false unless
// the token's hash matches (compared in constant time).
func invitee(tx *storage.Tx, token string) (storage.TeamMember, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) != 64 {
		return storage.TeamMember{}, false
	}
	var acct, member uuid.UUID
	copy(acct[:], b[:16])
	copy(member[:], b[16:32])
	m, err := tx.TeamMember(acct.String(), member.String())
	if err != nil || subtle.ConstantTimeCompare(m.TokenHash, HashSecret(token)) != 1 {
		return storage.TeamMember{}, false
	}
	return m, true
}

// invitationExpired is 410 GONE for a member still invited after
// InvitationTTL; nil for one invited more recently, or active.
func (a *App) invitationExpired(m storage.TeamMember) error {
	if m.Status != "invited" {
		return nil
	}
	until := m.InvitedAt.Add(a.opts.InvitationTTL)
	if a.Now().Before(until) {
		return nil
	}
	return NewError(CodeGone, "this invitation expired on "+until.UTC().Format("2 January 2006 at 15:04 UTC")+
		"; ask the team to invite you again")
}

// InvitationExpired reports whether m is still invited after its
// invitation stopped working (the dashboard marks it).
func (a *App) InvitationExpired(m storage.TeamMember) bool { return a.invitationExpired(m) != nil }

// Invitee reads the member an invitation token names, for the accept page;
// an invitation not accepted in time is 410 GONE.
func (a *App) Invitee(token string) (m storage.TeamMember, err error) {
	ok := false
	err = a.db.View(func(tx *storage.Tx) error {
		m, ok = invitee(tx, token)
		return nil
	})
	if err != nil {
		return m, Internal(err)
	}
	if !ok {
		return m, NotFound("invitation")
	}
	return m, a.invitationExpired(m)
}

// AcceptInvitation makes an invited member active and, when password is
// not empty, sets the dashboard password of a person who has none yet.
// Accepting twice is not an error, but an invitation never changes a
// password that exists, nor sets one once accepted (409 CONFLICT): the
// token is seen by whoever invited, and a person's password is shared by
// all their accounts, so it must not be a way to take one over. source is
// the client address, for the audit log.
func (a *App) AcceptInvitation(token, password, source string) (storage.TeamMember, error) {
	var hash string
	if password != "" {
		// The token first (unknown, expired), then the password's rules:
		// hashing is slow, and costs nothing to ask for.
		if _, err := a.Invitee(token); err != nil {
			return storage.TeamMember{}, err
		}
		if e := checkPasswordRules("password", password); e != nil {
			return storage.TeamMember{}, e
		}
		hash = hashPassword(password)
	}
	var m storage.TeamMember
	now := a.Now()
	err := a.db.Update(func(tx *storage.Tx) error {
		var ok bool
		if m, ok = invitee(tx, token); !ok {
			return storage.ErrNotFound
		}
		if err := a.invitationExpired(m); err != nil {
			return err
		}
		if hash != "" {
			if m.Status == "active" {
				return NewError(CodeConflict, "this invitation was accepted already; log in with your password, or ask for a set-password link")
			}
			if p, err := tx.Person(m.Email); err == nil && p.PasswordHash != "" {
				return NewError(CodeConflict, "you have a dashboard password already: accept without one and log in with it")
			}
			if err := a.putPassword(tx, m.Email, hash, now.UTC()); err != nil {
				return err
			}
		}
		if m.Status == "active" {
			return nil
		}
		m.Status, m.AcceptedAt = "active", &now
		if err := tx.UpdateTeamMember(m); err != nil {
			return err
		}
		acct, err := tx.Account(m.AccountID)
		if err != nil {
			return err
		}
		p := Principal{Kind: KindPerson, Account: acct, Actor: m.Email, Source: source}
		return a.audit(tx, p, action{"team.accept", m.Email})
	})
	return m, storageErr(err, "invitation")
}

// invitationSender is the account that mails invitations: the one that
// has the system sender's domain verified. When there is none, status says
// why no invitation will be mailed.
func (a *App) invitationSender() (owner storage.Account, status string) {
	if a.opts.SystemFrom == "" {
		return owner, "not_configured"
	}
	_, domain, e := parseSender(a.opts.SystemFrom)
	if e != nil {
		return owner, "not_configured"
	}
	err := a.db.View(func(tx *storage.Tx) error {
		accounts, _, err := tx.Accounts(storage.ListOptions{Limit: -1})
		if err != nil {
			return err
		}
		for _, o := range accounts {
			if a.checkSendingDomain(tx, o.ID, domain) == nil {
				owner = o
				return nil
			}
		}
		return nil
	})
	if err != nil {
		a.log.Error("finding the account of the system sender failed", "err", err)
		return storage.Account{}, "failed"
	}
	if owner.ID == "" {
		return owner, "sender_unverified"
	}
	return owner, ""
}

// invitationMail is the message that invites inv's member to acct, sent
// from the system sender.
func (a *App) invitationMail(acct storage.Account, inv Invitation) MessageInput {
	name := acct.Name
	subject := "You are invited to join " + name + " on Mailbolt"
	body := "You have been invited to join the team of " + name + " on Mailbolt as " + inv.Member.Role + ".\n\n" +
		"Accept the invitation here (the link works for " + days(a.opts.InvitationTTL) + "):\n" + inv.AcceptURL +
		"\n\nIf you did not expect this invitation, ignore this email.\n"
	off := false
	return MessageInput{From: a.opts.SystemFrom, To: []string{inv.Member.Email}, Subject: &subject, Text: &body,
		Unsubscribe: &off, Tags: []string{"team-invitation"}}
}

// days says d in whole days ("7 days"), or in hours when shorter than two.
func days(d time.Duration) string {
	if d < 48*time.Hour {
		if h := int(d.Hours()); h != 1 {
			return strconv.Itoa(h) + " hours"
		}
		return "1 hour"
	}
	return strconv.Itoa(int(d.Hours()/24)) + " days"
}

// Team lists an account's members.
func (a *App) Team(p Principal, opts storage.ListOptions) (list []storage.TeamMember, res storage.ListResult, total int, e error) {
	if err := a.authorize(p, ScopeTeamRead); err != nil {
		return nil, res, 0, err
	}
	accountID := p.Account.ID
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, err = tx.TeamMembers(accountID, opts)
		total = tx.TeamMemberCount(accountID)
		return err
	})
	return list, res, total, storageErr(err, "team member")
}
