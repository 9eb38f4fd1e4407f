package web

import (
	"net/http"
)

func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request, c *call) {
	pq, e := parsePage(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	list, res, total, e := s.app.ListSuppressions(c.Account.ID, pq.options())
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeList(w, r, pq, mapSlice(list, viewSuppression), res, total)
}

type addSuppressionRequest struct {
	Recipient string `json:"recipient"`
	Reason    string `json:"reason"`
}

// addSuppression answers 201 for a new suppression and 200 with the stored
// one when the recipient was already suppressed.
func (s *Server) addSuppression(w http.ResponseWriter, r *http.Request, c *call) {
	var req addSuppressionRequest
	if !s.decode(w, r, &req) {
		return
	}
	sup, created, e := s.app.AddSuppression(c.Account.ID, req.Recipient, req.Reason)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, viewSuppression(sup))
}

func (s *Server) deleteSuppression(w http.ResponseWriter, r *http.Request, c *call) {
	if e := s.app.DeleteSuppression(c.Account.ID, c.params.ByName("recipient")); e != nil {
		s.writeError(w, r, e)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
