package web

import (
	"net/http"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

type dnsRecordView struct {
	Type           string     `json:"type"`
	Name           string     `json:"name"`
	Value          string     `json:"value"`
	Purpose        string     `json:"purpose"`
	Required       bool       `json:"required"`
	Status         string     `json:"status"`
	Found          []string   `json:"found"`
	Error          *string    `json:"error"`
	Selector       *string    `json:"selector,omitempty"`
	Active         *bool      `json:"active,omitempty"`
	RemovableAfter *time.Time `json:"removable_after,omitempty"`
}

type domainView struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Status        string          `json:"status"`
	StatusReason  *string         `json:"status_reason"`
	DKIMAlgorithm string          `json:"dkim_algorithm"`
	DKIMSelector  *string         `json:"dkim_selector"`
	Records       []dnsRecordView `json:"records"`
	CreatedAt     time.Time       `json:"created_at"`
	VerifiedAt    *time.Time      `json:"verified_at"`
	LastCheckedAt *time.Time      `json:"last_checked_at"`
	CheckError    *string         `json:"check_error"`
	NextCheckAt   *time.Time      `json:"next_check_at"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) viewDomain(d storage.Domain) domainView {
	v := domainView{ID: d.ID, Name: d.Name, Status: d.Status, StatusReason: optional(d.StatusReason),
		DKIMAlgorithm: d.DKIMKeys[len(d.DKIMKeys)-1].Algorithm, CreatedAt: d.CreatedAt.UTC(),
		VerifiedAt: utc(d.VerifiedAt), LastCheckedAt: utc(d.LastCheckedAt), CheckError: optional(d.CheckError),
		NextCheckAt: utc(d.NextCheckAt), Records: []dnsRecordView{}}
	if sel, _, ok := app.SigningKey(d); ok {
		v.DKIMSelector = &sel // dkim_algorithm stays the newest key's, as documented
	}
	for _, r := range s.app.Records(d) {
		rv := dnsRecordView{Type: r.Type, Name: r.Name, Value: r.Value, Purpose: r.Purpose, Required: r.Required,
			Status: r.Status, Found: r.Found, Error: optional(r.Error), RemovableAfter: utc(r.RemovableAfter)}
		if rv.Found == nil {
			rv.Found = []string{}
		}
		if r.Purpose == app.PurposeDKIM {
			rv.Selector, rv.Active = &r.Selector, &r.Active
		}
		v.Records = append(v.Records, rv)
	}
	return v
}

type createDomainRequest struct {
	Name          string `json:"name"`
	DKIMAlgorithm string `json:"dkim_algorithm"`
}

func (s *Server) createDomain(w http.ResponseWriter, r *http.Request, c *call) {
	var req createDomainRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, d storage.Domain) {
		w.Header().Set("Location", "/v1/domains/"+d.ID)
		writeJSON(w, http.StatusCreated, s.viewDomain(d))
	})
	d, e := s.app.CreateDomain(c.Principal, req.Name, req.DKIMAlgorithm)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, d)
}

func (s *Server) listDomains(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Domain, storage.ListResult, int, error) {
		return s.app.ListDomains(c.Principal, o)
	}, s.viewDomain)
}

func (s *Server) getDomain(w http.ResponseWriter, r *http.Request, c *call) {
	d, e := s.app.Domain(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, s.viewDomain(d))
}

func (s *Server) verifyDomain(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, func(w http.ResponseWriter, d storage.Domain) { writeJSON(w, http.StatusOK, s.viewDomain(d)) })
	d, e := s.app.VerifyDomain(r.Context(), c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, d)
}

func (s *Server) deleteDomain(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, noContent)
	if e := s.app.DeleteDomain(c.Principal, c.params.ByName("id")); e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, struct{}{})
}

type rotateRequest struct {
	DKIMAlgorithm string `json:"dkim_algorithm"`
}

func (s *Server) rotateDKIM(w http.ResponseWriter, r *http.Request, c *call) {
	var req rotateRequest
	if !s.decodeOptional(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, d storage.Domain) { writeJSON(w, http.StatusOK, s.viewDomain(d)) })
	d, e := s.app.RotateDKIM(c.Principal, c.params.ByName("id"), req.DKIMAlgorithm)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, d)
}
