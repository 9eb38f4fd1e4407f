package web

import (
	"mailbolt/app"
	"mailbolt/storage"
	"net/http"
)

func (s *Server) listTeam(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.TeamMember, storage.ListResult, int, *app.Error) {
		return s.app.Team(c.Account.ID, o)
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
	inv, e := s.app.Invite(c.Account.ID, req.Email, req.Role)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	v := viewMember(inv.Member)
	v.AcceptToken = inv.Token
	writeJSON(w, http.StatusCreated, v)
}
