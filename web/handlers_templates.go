package web

import (
	"net/http"
	"strconv"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

type templateView struct {
	ID        string    `json:"id"`
	Alias     *string   `json:"alias"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	Strict    bool      `json:"strict"`
	Subject   string    `json:"subject"`
	HTML      string    `json:"html"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func viewTemplate(t storage.Template, v storage.TemplateVersion) templateView {
	return templateView{ID: t.ID, Alias: viewAlias(t.Alias), Name: v.Name, Version: v.Version, Strict: v.Strict, Subject: v.Subject,
		HTML: v.HTML, Text: v.Text, CreatedAt: t.CreatedAt.UTC(), UpdatedAt: v.CreatedAt.UTC()}
}

// viewAlias shows a template without an alias as null.
func viewAlias(alias string) *string {
	if alias == "" {
		return nil
	}
	return &alias
}

type templateSummaryView struct {
	ID        string    `json:"id"`
	Alias     *string   `json:"alias"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	Strict    bool      `json:"strict"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func viewTemplateSummary(t storage.Template) templateSummaryView {
	return templateSummaryView{ID: t.ID, Alias: viewAlias(t.Alias), Name: t.Name, Version: t.Version, Strict: t.Strict,
		CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC()}
}

type templateVersionView struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	Strict    bool      `json:"strict"`
	Subject   string    `json:"subject"`
	HTML      string    `json:"html"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

func viewTemplateVersion(v storage.TemplateVersion) templateVersionView {
	return templateVersionView{Version: v.Version, Name: v.Name, Strict: v.Strict, Subject: v.Subject,
		HTML: v.HTML, Text: v.Text, CreatedAt: v.CreatedAt.UTC()}
}

type templateRequest struct {
	Name    *string `json:"name"`
	Subject *string `json:"subject"`
	HTML    *string `json:"html"`
	Text    *string `json:"text"`
	Strict  *bool   `json:"strict"`
	Alias   *string `json:"alias"`
}

func (t templateRequest) input() app.TemplateInput {
	return app.TemplateInput{Name: t.Name, Subject: t.Subject, HTML: t.HTML, Text: t.Text, Strict: t.Strict, Alias: t.Alias}
}

func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request, c *call) {
	var req templateRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, saved app.SavedTemplate) {
		w.Header().Set("Location", "/v1/templates/"+saved.Template.ID)
		writeJSON(w, http.StatusCreated, viewTemplate(saved.Template, saved.Version))
	})
	t, v, e := s.app.CreateTemplate(c.Principal, req.input())
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, app.SavedTemplate{Template: t, Version: v})
}

func (s *Server) updateTemplate(w http.ResponseWriter, r *http.Request, c *call) {
	var req templateRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, saved app.SavedTemplate) {
		writeJSON(w, http.StatusOK, viewTemplate(saved.Template, saved.Version))
	})
	t, v, e := s.app.UpdateTemplate(c.Principal, c.params.ByName("id"), req.input())
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, app.SavedTemplate{Template: t, Version: v})
}

// versionParam reads ?version=N (0 when absent: the newest).
func versionParam(r *http.Request) (int, error) {
	q, err := queryOf(r)
	if err != nil {
		return 0, err
	}
	v := q.Get("version")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, app.Validation("version", "must be a version number of 1 or more")
	}
	return n, nil
}

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request, c *call) {
	version, e := versionParam(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	t, v, e := s.app.Template(c.Principal, c.params.ByName("id"), version)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, viewTemplate(t, v))
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Template, storage.ListResult, int, error) {
		return s.app.ListTemplates(c.Principal, o)
	}, viewTemplateSummary)
}

func (s *Server) listTemplateVersions(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.TemplateVersion, storage.ListResult, int, error) {
		return s.app.TemplateVersions(c.Principal, c.params.ByName("id"), o)
	}, viewTemplateVersion)
}

type renderRequest struct {
	Data    templateDataField `json:"data"`
	Version int               `json:"version"`
}

type renderedView struct {
	Subject string `json:"subject"`
	HTML    string `json:"html"`
	Text    string `json:"text"`
	Version int    `json:"version"`
}

func (s *Server) renderTemplate(w http.ResponseWriter, r *http.Request, c *call) {
	var req renderRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.Version < 0 {
		s.writeError(w, r, app.Validation("version", "must be a version number of 1 or more"))
		return
	}
	out, e := s.app.RenderTemplate(c.Principal, c.params.ByName("id"), req.Version, req.Data)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, renderedView{Subject: out.Subject, HTML: out.HTML, Text: out.Text, Version: out.Version})
}
