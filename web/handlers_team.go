package web

import (
	"errors"
	"html/template"
	"net/http"
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
)

func (s *Server) listTeam(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.TeamMember, storage.ListResult, int, error) {
		return s.app.Team(c.Principal, o)
	}, viewMember)
}

type inviteRequest struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

// listAuditLog answers GET /v1/audit-log: the account's changes, newest
// first.
func (s *Server) listAuditLog(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.AuditEntry, storage.ListResult, int, error) {
		return s.app.AuditLog(c.Principal, o)
	}, viewAudit)
}

func (s *Server) invite(w http.ResponseWriter, r *http.Request, c *call) {
	var req inviteRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, inv app.Invitation) {
		v := invitationView{memberView: viewMember(inv.Member), AcceptToken: inv.Token, AcceptURL: inv.AcceptURL,
			EmailStatus: inv.EmailStatus, MessageID: inv.MessageID}
		writeJSON(w, http.StatusCreated, v)
	})
	inv, e := s.app.Invite(c.Principal, req.Email, req.Role)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, inv)
}

// invitationView is the answer to an invitation: the member, the accept
// token and link (shown once), and whether the invitation was mailed.
type invitationView struct {
	memberView
	AcceptToken string `json:"accept_token"`
	AcceptURL   string `json:"accept_url"`
	EmailStatus string `json:"email_status"`
	MessageID   string `json:"message_id,omitempty"`
}

var acceptPage = template.Must(template.New("a").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>Team invitation</title>
<link rel="stylesheet" href="/dashboard/assets/style.css">
</head><body><main class="narrow">
{{if .Done}}<h1>Welcome</h1><p>{{.Email}} is now on the team as {{.Role}}.</p>
<p><a href="/dashboard/login">Log in to the dashboard</a></p>
{{else if .Closed}}<h1>Team invitation</h1><p class="error" role="alert">{{.Error}}</p>
{{else}}<h1>Team invitation</h1><p>{{.Email}} is invited to join the team as {{.Role}}.</p>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post">
{{if not .HasPassword}}<p>Choose the password you will log in to the dashboard with (at least {{.MinLen}} characters).</p>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="{{.MinLen}}" required>
{{end}}<button type="submit">Accept the invitation</button></form>{{end}}
</main></body></html>
`))

// acceptData is what the accept page shows.
type acceptData struct {
	Email, Role, Error string
	Done, HasPassword  bool
	Closed             bool // the invitation expired: the error, no form
	MinLen             int
}

func (s *Server) acceptPage(w http.ResponseWriter, status int, d acceptData) {
	noCache(w.Header())
	dashboardHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	d.MinLen = app.MinPasswordLen
	acceptPage.Execute(w, d)
}

// acceptForm shows an invitation with an accept button, and a password
// field when the person has no dashboard password yet; GET never accepts
// (link scanners follow links). The token in the path is the credential,
// so the form needs no CSRF token: a page that does not know it cannot
// post it.
func (s *Server) acceptForm(w http.ResponseWriter, r *http.Request, c *call) {
	m, err := s.app.Invitee(c.params.ByName("token"))
	if err != nil {
		s.acceptFailed(w, r, err)
		return
	}
	s.acceptPage(w, http.StatusOK, acceptData{Email: m.Email, Role: m.Role, Done: m.Status == "active",
		HasPassword: s.app.HasPassword(m.Email)})
}

// acceptFailed answers an invitation that cannot be accepted: an expired
// one (410) or one that cannot take what was sent (409: accepted already,
// or a password for a person who has one) with a page saying so, anything
// else in the error envelope.
func (s *Server) acceptFailed(w http.ResponseWriter, r *http.Request, err error) {
	var ae *app.Error
	if errors.As(err, &ae) && (ae.Code == app.CodeGone || ae.Code == app.CodeConflict) {
		s.acceptPage(w, ae.Status(), acceptData{Error: ae.Message, Closed: true})
		return
	}
	s.writeError(w, r, err)
}

// acceptInvitation accepts, setting the password when the form has one.
// It takes an empty body too (the API's clients accept without one).
func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request, c *call) {
	password := ""
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err != nil {
			s.writeError(w, r, app.Validation("body", "is not a form"))
			return
		}
		password = r.PostForm.Get("password")
	}
	if password != "" {
		// A password travels only over TLS, as on the login page.
		if e := s.plainRefused(r); e != nil {
			s.writeError(w, r, e)
			return
		}
	}
	token := c.params.ByName("token")
	m, e := s.app.AcceptInvitation(token, password, clientIP(r))
	if e != nil {
		var ae *app.Error
		if m, err := s.app.Invitee(token); err == nil && errors.As(e, &ae) {
			switch {
			case ae.Code == app.CodeValidation:
				s.acceptPage(w, http.StatusBadRequest, acceptData{Email: m.Email, Role: m.Role, Error: ae.Message})
				return
			case ae.Code == app.CodeConflict && m.Status != "active":
				// A password sent for a person who has one: the form
				// again, without the field, so they can accept as they are.
				s.acceptPage(w, http.StatusConflict, acceptData{Email: m.Email, Role: m.Role, Error: ae.Message, HasPassword: true})
				return
			}
		}
		s.acceptFailed(w, r, e)
		return
	}
	s.acceptPage(w, http.StatusOK, acceptData{Email: m.Email, Role: m.Role, Done: true})
}
