package web

import (
	"html/template"
	"net/http"

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
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font-size:1rem;padding:.6rem 1.2rem;border-radius:.4rem;border:1px solid #444;background:#fff;cursor:pointer}</style>
</head><body>
{{if .Done}}<h1>Welcome</h1><p>{{.Email}} is now on the team as {{.Role}}.</p>
{{else}}<h1>Team invitation</h1><p>{{.Email}} is invited to join the team as {{.Role}}.</p>
<form method="post"><button type="submit">Accept the invitation</button></form>{{end}}
</body></html>
`))

func (s *Server) acceptPage(w http.ResponseWriter, m storage.TeamMember, done bool) {
	noCache(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(http.StatusOK)
	acceptPage.Execute(w, struct {
		Email, Role string
		Done        bool
	}{m.Email, m.Role, done || m.Status == "active"})
}

// acceptForm shows an invitation with an accept button; GET never accepts
// (link scanners follow links).
func (s *Server) acceptForm(w http.ResponseWriter, r *http.Request, c *call) {
	m, err := s.app.Invitee(c.params.ByName("token"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.acceptPage(w, m, false)
}

func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request, c *call) {
	m, e := s.app.AcceptInvitation(c.params.ByName("token"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	s.acceptPage(w, m, true)
}
