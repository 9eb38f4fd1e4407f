package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
)

// templatesData is the templates list with the create form.
type templatesData struct {
	Templates []storage.Template
	Next      string
	Form      templateForm
	CanEdit   bool
}

// templateForm is a template's fields as the editor shows and posts them.
type templateForm struct {
	Name, Alias, Subject, HTML, Text string
	Strict                           bool
}

func formOf(v storage.TemplateVersion, alias string) templateForm {
	return templateForm{Name: v.Name, Alias: alias, Subject: v.Subject, HTML: v.HTML, Text: v.Text, Strict: v.Strict}
}

func postedTemplate(r *http.Request) templateForm {
	f := r.PostForm
	return templateForm{Name: f.Get("name"), Alias: f.Get("alias"), Subject: f.Get("subject"), HTML: f.Get("html"),
		Text: f.Get("text"), Strict: f.Get("strict") != ""}
}

func (f templateForm) input() app.TemplateInput {
	return app.TemplateInput{Name: &f.Name, Alias: &f.Alias, Subject: &f.Subject, HTML: &f.HTML, Text: &f.Text, Strict: &f.Strict}
}

func (s *Server) templatesPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showTemplates(w, r, sess, http.StatusOK, templateForm{}, "")
}

func (s *Server) showTemplates(w http.ResponseWriter, r *http.Request, sess app.Session, status int, f templateForm, msg string) {
	pq, err := s.parsePage(r, listName[storage.Template]())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	list, res, _, err := s.app.ListTemplates(sess.Principal, pq.options())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := templatesData{Templates: list, Form: f, CanEdit: app.HasScope(sess.Principal.Scopes, app.ScopeTemplatesWrite)}
	if res.HasMore {
		d.Next = s.cursor(listName[storage.Template](), res.Next)
	}
	s.render(w, status, "templates", s.pageOf(sess, "Templates", page{Error: msg, Data: d}))
}

// refusedTemplate is a use case's error a template form shows on its page:
// a validation error or a template that does not parse.
func refusedTemplate(err error) (*app.Error, bool) {
	e := app.AsError(err)
	return e, e.Code == app.CodeValidation || e.Code == app.CodeInvalidTemplate || e.Code == app.CodeConflict
}

func (s *Server) templatesCreate(w http.ResponseWriter, r *http.Request, sess app.Session) {
	err := formText(r)
	f := postedTemplate(r)
	var t storage.Template
	if err == nil {
		t, _, err = s.app.CreateTemplate(sess.Principal, f.input())
	}
	if err != nil {
		if e, ok := refusedTemplate(err); ok {
			s.showTemplates(w, r, sess, e.Status(), f, e.Message)
			return
		}
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/templates/"+t.ID, http.StatusSeeOther)
}

// templateData is the editor: the version shown (the newest unless one is
// picked), the template's versions, and a preview's data and output.
type templateData struct {
	Template storage.Template
	Shown    int // the version the form holds
	Form     templateForm
	Versions []storage.TemplateVersion
	More     bool // older versions than those listed exist
	Data     string
	Preview  *app.Rendered
	CanEdit  bool
}

// maxVersionsShown is how many versions the editor lists, newest first.
const maxVersionsShown = 50

func (s *Server) templatePage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	q, err := queryOf(r)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	version := 0
	if v := q.Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, sess, app.Validation("version", "must be a version number of 1 or more"))
			return
		}
		version = n
	}
	s.showTemplate(w, r, sess, http.StatusOK, version, nil, "{}", nil, "")
}

// showTemplate draws the editor of version (0: the newest); f, when given,
// is the posted form to show again in place of the stored version.
func (s *Server) showTemplate(w http.ResponseWriter, r *http.Request, sess app.Session, status, version int,
	f *templateForm, data string, preview *app.Rendered, msg string) {
	id := r.PathValue("id")
	t, v, err := s.app.Template(sess.Principal, id, version)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	versions, res, _, err := s.app.TemplateVersions(sess.Principal, id, storage.ListOptions{Limit: maxVersionsShown, Reverse: true})
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := templateData{Template: t, Shown: v.Version, Form: formOf(v, t.Alias), Versions: versions, More: res.HasMore,
		Data: data, Preview: preview, CanEdit: app.HasScope(sess.Principal.Scopes, app.ScopeTemplatesWrite)}
	if f != nil {
		d.Form = *f
	}
	s.render(w, status, "template", s.pageOf(sess, "Template "+t.Name, page{Error: msg, Data: d}))
}

// templateSave stores the form as the template's next version.
func (s *Server) templateSave(w http.ResponseWriter, r *http.Request, sess app.Session) {
	err := formText(r)
	f := postedTemplate(r)
	id := r.PathValue("id")
	if err == nil {
		_, _, err = s.app.UpdateTemplate(sess.Principal, id, f.input())
	}
	if err != nil {
		if e, ok := refusedTemplate(err); ok {
			s.showTemplate(w, r, sess, e.Status(), 0, &f, "{}", nil, e.Message)
			return
		}
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/templates/"+id, http.StatusSeeOther)
}

// templatePreview renders a stored version with the posted JSON data
// through the same use case as POST /v1/templates/{id}/render, and shows
// the output under the editor. Asked for JSON (preview.js, the live
// preview) it answers the output as the render endpoint does, or the
// error envelope; a post that carries the editor's subject, html or text
// renders that unsaved draft (app.RenderDraft: templates:write).
func (s *Server) templatePreview(w http.ResponseWriter, r *http.Request, sess app.Session) {
	raw := r.PostForm.Get("data")
	version, err := strconv.Atoi(r.PostForm.Get("version"))
	if err != nil || version < 0 {
		version = 0
	}
	asJSON := wantsJSON(r)
	show := func(status int, out *app.Rendered, msg string) {
		// The page is UTF-8: bytes of the data that are not are shown as
		// U+FFFD.
		s.showTemplate(w, r, sess, status, version, nil, strings.ToValidUTF8(raw, "\uFFFD"), out, msg)
	}
	if err := previewText(r, raw, asJSON && isDraft(r)); err != nil {
		if asJSON {
			s.writeError(w, r, err)
			return
		}
		show(http.StatusBadRequest, nil, app.AsError(err).Message)
		return
	}
	data := map[string]any{}
	if len(bytes.TrimSpace([]byte(raw))) > 0 {
		dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
		dec.UseNumber() // integers as written, as the API takes them
		if err := dec.Decode(&data); err != nil {
			if asJSON {
				s.writeError(w, r, app.Validation("data", "must be a JSON object such as {\"name\": \"Ann\"}"))
				return
			}
			show(http.StatusBadRequest, nil, "data: must be a JSON object such as {\"name\": \"Ann\"}")
			return
		}
	}
	if asJSON {
		w.Header().Set("Cache-Control", "no-store")
		var out app.Rendered
		if isDraft(r) {
			f := postedTemplate(r)
			in := f.input()
			in.Name, in.Alias = nil, nil // a draft's output does not depend on them
			out, err = s.app.RenderDraft(sess.Principal, r.PathValue("id"), in, data)
		} else {
			out, err = s.app.RenderTemplate(sess.Principal, r.PathValue("id"), version, data)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, renderedView{Subject: out.Subject, HTML: out.HTML, Text: out.Text, Version: out.Version})
		return
	}
	out, err := s.app.RenderTemplate(sess.Principal, r.PathValue("id"), version, data)
	if err != nil {
		e := app.AsError(err)
		if e.Code == app.CodeNotFound || e.Code == app.CodeInsufficientScopes || e.Code == app.CodeInternal {
			s.fail(w, sess, err)
			return
		}
		show(e.Status(), nil, e.Message)
		return
	}
	show(http.StatusOK, &out, "")
}

// previewText refuses a preview form that is not text, as the API refuses
// such a body (checkText), where encoding/json would render U+FFFD in
// place of the bytes: the data, a JSON value, is named by the path within
// it ("data.name"); with draft, the editor's subject, html and text,
// which are not JSON, only for their bytes ("\ud800" in them is text).
func previewText(r *http.Request, data string, draft bool) error {
	if err := checkTextValue([]byte(data)); err != nil {
		return fieldError("data", err)
	}
	if draft {
		for _, k := range []string{"subject", "html", "text"} {
			if invalidUTF8([]byte(r.PostForm.Get(k))) >= 0 {
				return app.Validation(k, reasonNotUTF8)
			}
		}
	}
	return nil
}

// wantsJSON is whether a dashboard request asks for JSON in place of a page.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// isDraft is whether a preview posts the editor's content.
func isDraft(r *http.Request) bool {
	for _, k := range []string{"subject", "html", "text"} {
		if _, ok := r.PostForm[k]; ok {
			return true
		}
	}
	return false
}
