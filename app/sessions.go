package app

import (
	"crypto/subtle"
	"errors"
	"time"

	"mailbolt/storage"
)

// SessionOptions bound dashboard sessions: one ends IdleTimeout after its
// last request, and MaxAge after its login whatever happens.
type SessionOptions struct {
	IdleTimeout time.Duration
	MaxAge      time.Duration
}

// touchEvery is how often a session's last-seen time is written: at most
// once a minute per session, not on every page.
const touchEvery = time.Minute

// Session is a logged-in person, as a page sees it: the session, the
// accounts the person may pick, and, once one is picked, the principal that
// calls the use cases.
type Session struct {
	storage.Session
	hash      []byte
	Principal Principal // zero until an account is picked
}

// AccountChoice is one account a person is an active member of.
type AccountChoice struct {
	ID   string
	Name string
	Role string
}

// errLogin is the one answer to a wrong email or password: it does not say
// which was wrong.
func errLogin() error {
	return NewError(CodeUnauthorized, "the email or the password is wrong")
}

// Login checks a person's email and password and starts a session; it
// returns the session's id (the cookie's value, never stored) and the
// session. A person who is an active member of exactly one account has it
// picked at once. A wrong email, a wrong password, and a person of no
// account all answer 401 UNAUTHORIZED alike, in the same time.
func (a *App) Login(email, password, source string) (string, Session, error) {
	addr, e := lookupAddress("email", email)
	if e != nil || len(password) > MaxPasswordBytes {
		checkPassword(dummyHash, password)
		return "", Session{}, errLogin()
	}
	var person storage.Person
	var choices []AccountChoice
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		if person, err = tx.Person(addr); err != nil {
			return err
		}
		choices, err = accountChoices(tx, addr)
		return err
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return "", Session{}, Internal(err)
	}
	if person.PasswordHash == "" {
		checkPassword(dummyHash, password)
		return "", Session{}, errLogin()
	}
	if !checkPassword(person.PasswordHash, password) || len(choices) == 0 {
		return "", Session{}, errLogin()
	}
	now := a.Now().UTC()
	id := randomToken()
	s := Session{hash: HashSecret(id), Session: storage.Session{Email: addr, CSRF: randomToken(), Source: source,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(a.opts.Sessions.MaxAge)}}
	if len(choices) == 1 {
		s.AccountID = choices[0].ID
	}
	s.SecondFactorDue = len(person.TOTPSeed) > 0
	err = a.db.Update(func(tx *storage.Tx) error {
		cur, err := tx.Person(addr)
		if err != nil || cur.PasswordHash != person.PasswordHash {
			return errLogin() // the password changed meanwhile
		}
		return tx.PutSession(s.hash, s.Session)
	})
	if e := storageErr(err, "person"); e != nil {
		return "", Session{}, e
	}
	s, err = a.Session(id)
	return id, s, err
}

// accountChoices lists the accounts email is an active member of.
func accountChoices(tx *storage.Tx, email string) ([]AccountChoice, error) {
	ms, err := tx.Memberships(email)
	if err != nil {
		return nil, err
	}
	var out []AccountChoice
	for _, ms := range ms {
		m, err := tx.TeamMember(ms.AccountID, ms.MemberID)
		if err != nil || m.Status != "active" {
			continue
		}
		acct, err := tx.Account(ms.AccountID)
		if err != nil {
			continue
		}
		out = append(out, AccountChoice{ID: acct.ID, Name: acct.Name, Role: m.Role})
	}
	return out, nil
}

// errSessionEnded is the answer for a session that is unknown, expired,
// revoked, or whose member was removed.
func errSessionEnded() error {
	return NewError(CodeUnauthorized, "the session has ended; log in again")
}

// Session reads the session with id (the cookie's value): 401 when it is
// unknown, idle longer than IdleTimeout, older than MaxAge, or its picked
// account no longer has its person as an active member. Its principal holds
// the role's scopes as they are now, so a role change applies at once; it
// is zero while the second factor is due.
func (a *App) Session(id string) (Session, error) {
	if id == "" || len(id) > 128 {
		return Session{}, errSessionEnded()
	}
	hash := HashSecret(id)
	now := a.Now()
	var s Session
	var member storage.TeamMember
	var acct storage.Account
	ended := false
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		if s.Session, err = tx.Session(hash); err != nil {
			return err
		}
		if !now.Before(s.ExpiresAt) || !now.Before(s.LastSeenAt.Add(a.opts.Sessions.IdleTimeout)) {
			ended = true
			return nil
		}
		if s.AccountID == "" {
			return nil
		}
		if member, err = tx.TeamMemberByEmail(s.AccountID, s.Email); err != nil || member.Status != "active" {
			ended = true
			return nil
		}
		acct, err = tx.Account(s.AccountID)
		return err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return Session{}, errSessionEnded()
	}
	if err != nil {
		return Session{}, Internal(err)
	}
	if ended {
		a.db.Update(func(tx *storage.Tx) error { return tx.DeleteSession(hash) })
		return Session{}, errSessionEnded()
	}
	s.hash = hash
	if now.Sub(s.LastSeenAt) >= touchEvery {
		s.LastSeenAt = now.UTC()
		err := a.db.Update(func(tx *storage.Tx) error {
			cur, err := tx.Session(hash)
			if err != nil {
				return nil // ended meanwhile: the next request finds out
			}
			cur.LastSeenAt = s.LastSeenAt
			return tx.PutSession(hash, cur)
		})
		if err != nil {
			return Session{}, Internal(err)
		}
	}
	if s.AccountID != "" && !s.SecondFactorDue {
		s.Principal = Principal{Kind: KindSession, Account: acct, Scopes: RoleScopes[member.Role],
			Actor: s.Email, Role: member.Role}
	}
	return s, nil
}

// CheckCSRF reports whether token is the session's CSRF token.
func (s Session) CheckCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}

// Accounts lists the accounts the session's person may pick.
func (a *App) Accounts(s Session) ([]AccountChoice, error) {
	var out []AccountChoice
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		out, err = accountChoices(tx, s.Email)
		return err
	})
	return out, storageErr(err, "account")
}

// PickAccount makes accountID the session's account; 404 NOT_FOUND unless
// the person is an active member of it.
func (a *App) PickAccount(s Session, accountID string) error {
	err := a.db.Update(func(tx *storage.Tx) error {
		m, err := tx.TeamMemberByEmail(accountID, s.Email)
		if err != nil || m.Status != "active" {
			return storage.ErrNotFound
		}
		cur, err := tx.Session(s.hash)
		if err != nil || cur.SecondFactorDue {
			return errSessionEnded()
		}
		cur.AccountID = accountID
		return tx.PutSession(s.hash, cur)
	})
	return storageErr(err, "account")
}

// Logout ends the session; ending one that has ended is no error.
func (a *App) Logout(s Session) error {
	return storageErr(a.db.Update(func(tx *storage.Tx) error { return tx.DeleteSession(s.hash) }), "session")
}
