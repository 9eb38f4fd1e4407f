package web

import (
	"errors"
	"net/http"
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
)

// teamData is what the team page shows.
type teamData struct {
	Members []storage.TeamMember
	Roles   []string
	Invited *app.Invitation // the invitation just made, shown once
	Expired map[string]bool // members whose invitation expired, by id
	// Keys counts, by member id, the live API keys each person made:
	// what removing them revokes.
	Keys map[string]int
	// Removed is the removal just made, shown once.
	Removed *app.Removal
}

func (s *Server) teamPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showTeam(w, sess, http.StatusOK, teamData{}, "")
}

// showTeam renders the team page; shown carries what the request just did
// (Invited, Removed).
func (s *Server) showTeam(w http.ResponseWriter, sess app.Session, status int, shown teamData, msg string) {
	members, _, _, err := s.app.Team(sess.Principal, storage.ListOptions{Limit: maxLimit})
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	expired := map[string]bool{}
	for _, m := range members {
		expired[m.ID] = s.app.InvitationExpired(m)
	}
	// A role without api_keys:read sees no counts; removal revokes all the same.
	keys, _ := s.app.MemberKeys(sess.Principal, members)
	shown.Members, shown.Roles, shown.Expired, shown.Keys = members, app.Roles, expired, keys
	s.render(w, status, "team", s.pageOf(sess, "Team", page{Error: msg, Data: shown}))
}

func (s *Server) teamInvite(w http.ResponseWriter, r *http.Request, sess app.Session) {
	err := formText(r)
	var inv app.Invitation
	if err == nil {
		inv, err = s.app.Invite(sess.Principal, r.PostForm.Get("email"), r.PostForm.Get("role"))
	}
	if err != nil {
		var e *app.Error
		if errors.As(err, &e) && (e.Code == app.CodeValidation || e.Code == app.CodeConflict) {
			s.showTeam(w, sess, e.Status(), teamData{}, e.Message)
			return
		}
		s.fail(w, sess, err)
		return
	}
	s.showTeam(w, sess, http.StatusOK, teamData{Invited: &inv}, "")
}

func (s *Server) teamRemove(w http.ResponseWriter, r *http.Request, sess app.Session) {
	removed, err := s.app.RemoveMember(sess.Principal, r.PostForm.Get("member"), r.PostForm.Get("keep_keys") == "1")
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	if strings.EqualFold(removed.Member.Email, sess.Email) {
		// Removing oneself ended one's own sessions: there is no team page
		// left to show.
		http.Redirect(w, r, "/dashboard/login", http.StatusSeeOther)
		return
	}
	s.showTeam(w, sess, http.StatusOK, teamData{Removed: &removed}, "")
}

func (s *Server) teamRole(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if _, err := s.app.ChangeRole(sess.Principal, r.PostForm.Get("member"), r.PostForm.Get("role")); err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/team", http.StatusSeeOther)
}

// auditData is one page of the audit log and the cursor of the next.
type auditData struct {
	Entries []storage.AuditEntry
	Next    string
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	pq, err := s.parsePage(r, listName[storage.AuditEntry]())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	list, res, _, err := s.app.AuditLog(sess.Principal, pq.options())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := auditData{Entries: list}
	if res.HasMore {
		d.Next = s.cursor(listName[storage.AuditEntry](), res.Next)
	}
	s.render(w, http.StatusOK, "audit", s.pageOf(sess, "Audit log", page{Data: d}))
}

// passwordData is what the set-password page shows of its link.
type passwordData struct {
	Owner       bool
	Email       string
	AccountName string
	ExpiresAt   string
	MinLen      int
}

func (s *Server) passwordData(token string) (passwordData, error) {
	l, name, err := s.app.LinkInfoWithAccount(token)
	if err != nil {
		return passwordData{}, err
	}
	return passwordData{Owner: l.Owner, Email: l.Email, AccountName: name,
		ExpiresAt: l.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"), MinLen: app.MinPasswordLen}, nil
}

func (s *Server) passwordForm(w http.ResponseWriter, r *http.Request) {
	d, err := s.passwordData(r.PathValue("token"))
	if err != nil {
		s.fail(w, app.Session{}, err)
		return
	}
	s.render(w, http.StatusOK, "password", page{Title: "Set a password", CSRF: s.formToken(w, r), Data: d})
}

func (s *Server) setPassword(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	if err := s.plainRefused(r); err != nil {
		s.fail(w, app.Session{}, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.fail(w, app.Session{}, app.Validation("form", "cannot be read"))
		return
	}
	if err := checkFormToken(r); err != nil {
		s.fail(w, app.Session{}, err)
		return
	}
	d, err := s.passwordData(token)
	if err != nil {
		s.fail(w, app.Session{}, err)
		return
	}
	email, err := s.app.SetPassword(token, r.PostForm.Get("email"), r.PostForm.Get("password"), clientIP(r))
	if err != nil {
		var e *app.Error
		if errors.As(err, &e) && e.Code == app.CodeValidation {
			if d.Owner {
				d.Email = r.PostForm.Get("email")
			}
			s.render(w, http.StatusBadRequest, "password", page{Title: "Set a password", CSRF: s.formToken(w, r), Error: e.Message, Data: d})
			return
		}
		s.fail(w, app.Session{}, err)
		return
	}
	s.setCookie(w, r, sessionCookie, "", -1)
	d.Email = email
	s.render(w, http.StatusOK, "password", page{Title: "Password set", Done: true, Data: d})
}
