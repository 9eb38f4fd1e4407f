package app

import (
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"

	"mailbolt/storage"
)

// Roles a team member can hold.
var Roles = []string{"owner", "admin", "developer", "viewer"}

// Invitation is a new member with the token that accepts the invitation;
// the token is shown once and only its hash is stored.
type Invitation struct {
	Member storage.TeamMember
	Token  string
}

// Invite adds a member with status "invited". Inviting an address that is
// already on the team is a conflict.
func (a *App) Invite(accountID, email, role string) (Invitation, *Error) {
	addr, e := NormalizeAddress("email", email)
	if e != nil {
		return Invitation{}, e
	}
	if !slices.Contains(Roles, role) {
		return Invitation{}, Validation("role", "must be one of "+strings.Join(Roles, ", "))
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Invitation{}, Internal(err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	m := storage.TeamMember{ID: NewID(), AccountID: accountID, Email: addr, Role: role,
		Status: "invited", TokenHash: HashSecret(token), InvitedAt: a.Now()}
	err := a.db.Update(func(tx *storage.Tx) error { return tx.InsertTeamMember(m) })
	if e := storageErr(err, "team member with this email"); e != nil {
		return Invitation{}, e
	}
	return Invitation{Member: m, Token: token}, nil
}

// Team lists an account's members.
func (a *App) Team(accountID string, opts storage.ListOptions) (list []storage.TeamMember, res storage.ListResult, total int, e *Error) {
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		list, res, err = tx.TeamMembers(accountID, opts)
		total = tx.TeamMemberCount(accountID)
		return err
	})
	return list, res, total, storageErr(err, "team member")
}
