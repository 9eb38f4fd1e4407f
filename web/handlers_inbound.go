package web

import (
	"net/http"
	"strconv"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// Inbound email: domains the account receives mail for, routes from their
// addresses to its webhooks, and the raw messages received.

type inboundRecordView struct {
	Type     string   `json:"type"`
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Priority *int     `json:"priority,omitempty"`
	Purpose  string   `json:"purpose"`
	Status   string   `json:"status"`
	Found    []string `json:"found"`
}

type inboundDomainView struct {
	ID            string              `json:"id"`
	Name          string              `json:"name"`
	Status        string              `json:"status"`
	Records       []inboundRecordView `json:"records"`
	CreatedAt     time.Time           `json:"created_at"`
	VerifiedAt    *time.Time          `json:"verified_at"`
	LastCheckedAt *time.Time          `json:"last_checked_at"`
	CheckError    *string             `json:"check_error"`
}

func (s *Server) viewInboundDomain(d storage.InboundDomain) inboundDomainView {
	v := inboundDomainView{ID: d.ID, Name: d.Name, Status: d.Status, Records: []inboundRecordView{},
		CreatedAt: d.CreatedAt.UTC(), VerifiedAt: utc(d.VerifiedAt), LastCheckedAt: utc(d.LastCheckedAt),
		CheckError: optional(d.CheckError)}
	for _, r := range s.app.InboundRecords(d) {
		rv := inboundRecordView{Type: r.Type, Name: r.Name, Value: r.Value, Purpose: r.Purpose, Status: r.Status, Found: r.Found}
		if r.Type == "MX" {
			p := r.Priority
			rv.Priority = &p
		}
		if rv.Found == nil {
			rv.Found = []string{}
		}
		v.Records = append(v.Records, rv)
	}
	return v
}

type inboundRouteView struct {
	ID        string    `json:"id"`
	DomainID  string    `json:"domain_id"`
	Pattern   string    `json:"pattern"`
	WebhookID string    `json:"webhook_id"`
	CreatedAt time.Time `json:"created_at"`
}

func viewInboundRoute(r storage.InboundRoute) inboundRouteView {
	return inboundRouteView{ID: r.ID, DomainID: r.DomainID, Pattern: r.Pattern, WebhookID: r.WebhookID, CreatedAt: r.CreatedAt.UTC()}
}

type createInboundDomainRequest struct {
	Name string `json:"name"`
}

func (s *Server) createInboundDomain(w http.ResponseWriter, r *http.Request, c *call) {
	var req createInboundDomainRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, d storage.InboundDomain) {
		w.Header().Set("Location", "/v1/inbound/domains/"+d.ID)
		writeJSON(w, http.StatusCreated, s.viewInboundDomain(d))
	})
	d, e := s.app.CreateInboundDomain(c.Principal, req.Name)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, d)
}

func (s *Server) listInboundDomains(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.InboundDomain, storage.ListResult, int, error) {
		return s.app.ListInboundDomains(c.Principal, o)
	}, s.viewInboundDomain)
}

func (s *Server) getInboundDomain(w http.ResponseWriter, r *http.Request, c *call) {
	d, e := s.app.InboundDomain(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, s.viewInboundDomain(d))
}

func (s *Server) verifyInboundDomain(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, func(w http.ResponseWriter, d storage.InboundDomain) {
		writeJSON(w, http.StatusOK, s.viewInboundDomain(d))
	})
	d, e := s.app.VerifyInboundDomain(r.Context(), c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, d)
}

func (s *Server) deleteInboundDomain(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, noContent)
	if e := s.app.DeleteInboundDomain(c.Principal, c.params.ByName("id")); e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, struct{}{})
}

type createInboundRouteRequest struct {
	DomainID  string `json:"domain_id"`
	Pattern   string `json:"pattern"`
	WebhookID string `json:"webhook_id"`
}

func (s *Server) createInboundRoute(w http.ResponseWriter, r *http.Request, c *call) {
	var req createInboundRouteRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, rt storage.InboundRoute) {
		w.Header().Set("Location", "/v1/inbound/routes/"+rt.ID)
		writeJSON(w, http.StatusCreated, viewInboundRoute(rt))
	})
	rt, e := s.app.CreateInboundRoute(c.Principal, app.InboundRouteInput{DomainID: req.DomainID, Pattern: req.Pattern, WebhookID: req.WebhookID})
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, rt)
}

func (s *Server) listInboundRoutes(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.InboundRoute, storage.ListResult, int, error) {
		return s.app.ListInboundRoutes(c.Principal, o)
	}, viewInboundRoute)
}

func (s *Server) getInboundRoute(w http.ResponseWriter, r *http.Request, c *call) {
	rt, e := s.app.InboundRoute(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, viewInboundRoute(rt))
}

func (s *Server) deleteInboundRoute(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, noContent)
	if e := s.app.DeleteInboundRoute(c.Principal, c.params.ByName("id")); e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, struct{}{})
}

// inboundRaw answers a received message exactly as it arrived.
func (s *Server) inboundRaw(w http.ResponseWriter, r *http.Request, c *call) {
	raw, e := s.app.InboundRaw(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(http.StatusOK)
	w.Write(raw)
}
