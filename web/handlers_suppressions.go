package web

import (
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
	"net/http"
)

func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Suppression, storage.ListResult, int, error) {
		return s.app.ListSuppressions(c.Principal, o)
	}, viewSuppression)
}

type addSuppressionRequest struct {
	Recipient string `json:"recipient"`
	Email     string `json:"email"` // alias of recipient, as many ESP APIs name it
	Reason    string `json:"reason"`
	Stream    string `json:"stream"` // empty: all streams
}

// addSuppression answers 201 for a new suppression and 200 with the stored
// one when the recipient was already suppressed.
func (s *Server) addSuppression(w http.ResponseWriter, r *http.Request, c *call) {
	var req addSuppressionRequest
	if !s.decode(w, r, &req) {
		return
	}
	switch {
	case req.Recipient == "":
		req.Recipient = req.Email
	case req.Email != "" && !strings.EqualFold(req.Email, req.Recipient):
		s.writeError(w, r, app.Validation("email", "differs from recipient; give one of the two"))
		return
	}
	write := answer(c, func(w http.ResponseWriter, added app.AddedSuppression) {
		status := http.StatusOK
		if added.Created {
			status = http.StatusCreated
		}
		writeJSON(w, status, viewSuppression(added.Suppression))
	})
	sup, created, e := s.app.AddSuppression(c.Principal, req.Recipient, req.Reason, req.Stream)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, app.AddedSuppression{Suppression: sup, Created: created})
}

func (s *Server) deleteSuppression(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, noContent)
	if e := s.app.DeleteSuppression(c.Principal, c.params.ByName("recipient"), r.URL.Query().Get("stream")); e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, struct{}{})
}
