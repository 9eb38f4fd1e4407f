package web

import (
	"errors"
	"io"
	"net/http"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// suppressionsData is the suppressions page: one page of the list, or the
// entries of the address searched for; the last import's result.
type suppressionsData struct {
	Query    string // the address searched for
	Searched bool
	List     []storage.Suppression
	Total    int
	Next     string
	Reasons  []string
	Streams  []string
	Imported *app.ImportResult
	CanEdit  bool
}

func (s *Server) suppressionsPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showSuppressions(w, r, sess, http.StatusOK, nil, "")
}

func (s *Server) showSuppressions(w http.ResponseWriter, r *http.Request, sess app.Session, status int, imported *app.ImportResult, msg string) {
	d := suppressionsData{Reasons: app.SuppressionReasons, Streams: storage.Streams, Imported: imported,
		CanEdit: app.HasScope(sess.Principal.Scopes, app.ScopeSuppressionsWrite)}
	var err error
	if q := r.URL.Query().Get("recipient"); q != "" && r.Method == http.MethodGet {
		d.Query, d.Searched = q, true
		d.List, err = s.app.FindSuppressions(sess.Principal, q)
	} else {
		var pq pageQuery
		if pq, err = s.parsePage(r, listName[storage.Suppression]()); err == nil {
			var res storage.ListResult
			d.List, res, d.Total, err = s.app.ListSuppressions(sess.Principal, pq.options())
			if res.HasMore {
				d.Next = s.cursor(listName[storage.Suppression](), res.Next)
			}
		}
	}
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.render(w, status, "suppressions", s.pageOf(sess, "Suppressions", page{Error: msg, Data: d}))
}

// refusedForm answers a use case's validation error on the page itself, its
// message shown above the forms; any other error is the error page.
func (s *Server) refusedForm(w http.ResponseWriter, sess app.Session, err error, show func(status int, msg string)) {
	var e *app.Error
	if errors.As(err, &e) && e.Code == app.CodeValidation {
		show(e.Status(), e.Message)
		return
	}
	s.fail(w, sess, err)
}

func (s *Server) suppressionsAdd(w http.ResponseWriter, r *http.Request, sess app.Session) {
	err := formText(r)
	if err == nil {
		_, _, err = s.app.AddSuppression(sess.Principal, r.PostForm.Get("recipient"), r.PostForm.Get("reason"), r.PostForm.Get("stream"))
	}
	if err != nil {
		s.refusedForm(w, sess, err, func(status int, msg string) { s.showSuppressions(w, r, sess, status, nil, msg) })
		return
	}
	http.Redirect(w, r, "/dashboard/suppressions", http.StatusSeeOther)
}

// suppressionsRemove lets mail reach the recipient again: every entry, or
// with a stream only that stream's.
func (s *Server) suppressionsRemove(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if err := s.app.DeleteSuppression(sess.Principal, r.PostForm.Get("recipient"), r.PostForm.Get("stream")); err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/suppressions", http.StatusSeeOther)
}

// suppressionsImport adds the rows of an uploaded CSV file (the columns of
// an export), all or nothing, through the same use case as POST
// /v1/suppressions/import: a bad row refuses the file naming its line.
func (s *Server) suppressionsImport(w http.ResponseWriter, r *http.Request, sess app.Session) {
	show := func(status int, msg string) { s.showSuppressions(w, r, sess, status, nil, msg) }
	f, _, err := r.FormFile("file")
	if err != nil {
		show(http.StatusBadRequest, "file: choose a CSV file to import")
		return
	}
	defer f.Close()
	rows, err := app.ReadSuppressionsCSV(io.LimitReader(f, maxImportBytes))
	var res app.ImportResult
	if err == nil {
		res, err = s.app.ImportSuppressions(sess.Principal, rows)
	}
	if err != nil {
		s.refusedForm(w, sess, err, show)
		return
	}
	s.showSuppressions(w, r, sess, http.StatusOK, &res, "")
}

// suppressionsExport downloads the list as CSV, streamed a chunk at a time
// through the same use case as GET /v1/suppressions/export.
func (s *Server) suppressionsExport(w http.ResponseWriter, r *http.Request, sess app.Session) {
	q, err := queryOf(r)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	var cw *app.SuppressionCSVWriter
	rc := http.NewResponseController(w)
	err = s.app.ExportSuppressions(sess.Principal, q.Get("stream"), func(list []storage.Suppression) error {
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteTimeout))
		if cw == nil {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="suppressions.csv"`)
			noCache(w.Header())
			w.WriteHeader(http.StatusOK)
			cw = app.NewSuppressionCSVWriter(w)
		}
		if err := cw.Write(list); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err == nil {
		return
	}
	if cw == nil {
		s.fail(w, sess, err)
		return
	}
	s.log.Error("dashboard suppressions export stopped", "error", err)
	panic(http.ErrAbortHandler)
}
