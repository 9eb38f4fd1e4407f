package web

import (
	"net/http"
	"strings"
)

// The dashboard's API keys, suppressions, templates, IPs, account and
// grader pages (docs/dashboard.md): their routes, kept here so
// dashboard.go lists only the first pages.

// maxImportBytes caps the body of the dashboard forms larger than
// maxFormBytes: a suppressions CSV upload, a template (three parts of up to
// 1 MiB each, URL-encoded), a raw message for the grader.
const maxImportBytes = 10 << 20

// dashboardBodyLimit is the body cap of a dashboard request to path.
func dashboardBodyLimit(path string) int64 {
	if path == "/dashboard/suppressions/import" || path == "/dashboard/grader/submit" ||
		strings.HasPrefix(path, "/dashboard/templates") {
		return maxImportBytes
	}
	return maxFormBytes
}

// parseDashboardForm reads a POST's form: a multipart one (a file upload)
// with its files kept in memory up to the body cap, else the URL-encoded
// one.
func parseDashboardForm(r *http.Request) error {
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return r.ParseMultipartForm(maxImportBytes)
	}
	return r.ParseForm()
}

func (s *Server) dashboardRoutesB(mux *http.ServeMux) {
	mux.HandleFunc("GET /dashboard/api-keys", s.authed(true, s.keysPage))
	mux.HandleFunc("POST /dashboard/api-keys", s.authed(true, s.keysCreate))
	mux.HandleFunc("POST /dashboard/api-keys/revoke", s.authed(true, s.keysRevoke))
	mux.HandleFunc("GET /dashboard/suppressions", s.authed(true, s.suppressionsPage))
	mux.HandleFunc("POST /dashboard/suppressions", s.authed(true, s.suppressionsAdd))
	mux.HandleFunc("POST /dashboard/suppressions/remove", s.authed(true, s.suppressionsRemove))
	mux.HandleFunc("POST /dashboard/suppressions/import", s.authed(true, s.suppressionsImport))
	mux.HandleFunc("GET /dashboard/suppressions/export", s.authed(true, s.suppressionsExport))
	mux.HandleFunc("GET /dashboard/templates", s.authed(true, s.templatesPage))
	mux.HandleFunc("POST /dashboard/templates", s.authed(true, s.templatesCreate))
	mux.HandleFunc("GET /dashboard/templates/{id}", s.authed(true, s.templatePage))
	mux.HandleFunc("POST /dashboard/templates/{id}", s.authed(true, s.templateSave))
	mux.HandleFunc("POST /dashboard/templates/{id}/preview", s.authed(true, s.templatePreview))
	mux.HandleFunc("GET /dashboard/ips", s.authed(true, s.ipsPage))
	mux.HandleFunc("GET /dashboard/account", s.authed(true, s.accountPage))
	mux.HandleFunc("GET /dashboard/grader", s.authed(true, s.graderPage))
	mux.HandleFunc("POST /dashboard/grader", s.authed(true, s.graderCheckForm))
	mux.HandleFunc("POST /dashboard/grader/submit", s.authed(true, s.graderSubmitForm))
	mux.HandleFunc("GET /dashboard/grader/results/{id}", s.authed(true, s.graderResultPage))
	// Public: no session; the form's token is the mailbolt_form cookie's.
	mux.HandleFunc("GET /dashboard/grader/check", s.publicCheckPage)
	mux.HandleFunc("POST /dashboard/grader/check", s.publicCheck)
}
