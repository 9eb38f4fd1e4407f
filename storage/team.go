package storage

import "time"

// TeamMember is a person with access to an account's dashboard. An invited
// member holds an accept token, of which only the SHA-256 is stored. Email
// is in AddressKey form, in the record and in both indexes (schema v20):
// every method here takes an address in any case and either spelling of
// an internationalised domain and finds the one member.
type TeamMember struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	Email      string     `json:"email"`
	Role       string     `json:"role"`
	Status     string     `json:"status"`
	TokenHash  []byte     `json:"token_hash,omitempty"`
	InvitedAt  time.Time  `json:"invited_at"`
	AcceptedAt *time.Time `json:"accepted_at,omitempty"`
}

const collectionTeam = "team"

// InsertTeamMember adds a member; ErrExists when the account already has a
// member with that email (in either spelling of its domain).
func (tx *Tx) InsertTeamMember(m TeamMember) error {
	m.Email = addressKey(m.Email)
	emails := tx.bucket(bucketTeamEmails)
	ek := join(m.AccountID, m.Email)
	if emails.Get(ek) != nil {
		return ErrExists
	}
	if err := putJSON(tx.bucket(bucketTeam), join(m.AccountID, m.ID), m); err != nil {
		return err
	}
	if err := emails.Put(ek, []byte(m.ID)); err != nil {
		return err
	}
	if err := tx.bucket(bucketTeamByEmail).Put(join(m.Email, m.AccountID), []byte(m.ID)); err != nil {
		return err
	}
	return tx.addCount(collectionTeam, m.AccountID, 1)
}

// DeleteTeamMember removes a member and its index entries.
func (tx *Tx) DeleteTeamMember(accountID, id string) error {
	m, err := tx.TeamMember(accountID, id)
	if err != nil {
		return err
	}
	if err := tx.bucket(bucketTeam).Delete(join(accountID, id)); err != nil {
		return err
	}
	email := addressKey(m.Email)
	if err := tx.bucket(bucketTeamEmails).Delete(join(accountID, email)); err != nil {
		return err
	}
	if err := tx.bucket(bucketTeamByEmail).Delete(join(email, accountID)); err != nil {
		return err
	}
	return tx.addCount(collectionTeam, accountID, -1)
}

// TeamMembers lists an account's members, oldest first.
func (tx *Tx) TeamMembers(accountID string, opts ListOptions) ([]TeamMember, ListResult, error) {
	return scanJSON[TeamMember](tx.bucket(bucketTeam), prefix(accountID), opts)
}

// TeamMemberCount is the number of members of an account.
func (tx *Tx) TeamMemberCount(accountID string) int { return tx.count(collectionTeam, accountID) }

// TeamMember reads one member of an account.
func (tx *Tx) TeamMember(accountID, id string) (TeamMember, error) {
	var m TeamMember
	err := getJSON(tx.bucket(bucketTeam), join(accountID, id), &m)
	return m, err
}

// UpdateTeamMember rewrites a member (its email does not change).
func (tx *Tx) UpdateTeamMember(m TeamMember) error {
	if tx.bucket(bucketTeam).Get(join(m.AccountID, m.ID)) == nil {
		return ErrNotFound
	}
	return putJSON(tx.bucket(bucketTeam), join(m.AccountID, m.ID), m)
}
