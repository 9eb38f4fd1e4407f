package web

import "net/http"

func (s *Server) listTeam(w http.ResponseWriter, r *http.Request, c *call) {
	pq, e := parsePage(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	list, res, total, e := s.app.Team(c.Account.ID, pq.options())
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeList(w, r, pq, mapSlice(list, viewMember), res, total)
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
