package web

import (
	"bytes"
	"net/http"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// decode reads and strictly decodes the body into v, answering the error
// itself when it fails.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	return s.decodeBody(w, r, v, false)
}

// decodeOptional is decode for routes whose body may be empty.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) bool {
	return s.decodeBody(w, r, v, true)
}

func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	data, e := readBody(r, s.cfg.MaxBodyBytes)
	if e == nil && (!optional || len(bytes.TrimSpace(data)) > 0) {
		e = decodeStrict(data, v)
	}
	if e != nil {
		s.writeError(w, r, e)
		return false
	}
	return true
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request, c *call) {
	acct, e := s.app.Account(c.Principal)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, viewAccount(acct))
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.APIKey, storage.ListResult, int, error) {
		return s.app.ListKeys(c.Principal, o)
	}, viewKey)
}

type createKeyRequest struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Mode      string     `json:"mode"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, c *call) {
	var req createKeyRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, created app.CreatedKey) {
		v := viewKey(created.Key)
		v.Key = created.Secret
		w.Header().Set("Location", "/v1/api-keys/"+created.Key.ID)
		writeJSON(w, http.StatusCreated, v)
	})
	created, e := s.app.CreateKey(c.Principal, app.KeyInput{Name: req.Name, Scopes: req.Scopes, Mode: req.Mode,
		ExpiresAt: req.ExpiresAt})
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, created)
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request, c *call) {
	k, e := s.app.Key(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, viewKey(k))
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, func(w http.ResponseWriter, k storage.APIKey) { writeJSON(w, http.StatusOK, viewKey(k)) })
	k, e := s.app.RevokeKey(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, k)
}
