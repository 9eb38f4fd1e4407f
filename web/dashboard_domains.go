package web

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
)

// dkimAlgorithms are the choices of the add and rotate forms; the first is
// the default.
var dkimAlgorithms = []string{"rsa-2048", "ed25519"}

// domainsData is the Domains list with its add form.
type domainsData struct {
	Domains    []storage.Domain
	Algorithms []string
	CanWrite   bool
	Name       string // the add form's name, shown again after an error
}

// recordRow is one DNS record of a domain's page; ID names its value for
// the copy button.
type recordRow struct {
	app.DNSRecord
	ID string
}

// breakdownRow is one dimension of a grader verdict.
type breakdownRow struct {
	Name       string
	Score, Max int
}

// findingRow is one finding of a grader verdict.
type findingRow struct {
	Severity, Category, Message string
}

// gradeData is the grader's verdict on a domain.
type gradeData struct {
	Grade           string
	Score           int
	Breakdown       []breakdownRow
	Findings        []findingRow
	Recommendations []string
	Disabled        bool
}

// domainData is what a domain's page shows.
type domainData struct {
	Domain     storage.Domain
	Records    []recordRow
	Selector   string // the signing key's, when one signs
	Algorithms []string
	CanWrite   bool
	Grade      *gradeData
}

func (s *Server) domainsPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showDomains(w, sess, http.StatusOK, "", "")
}

func (s *Server) showDomains(w http.ResponseWriter, sess app.Session, status int, name, msg string) {
	list, _, _, err := s.app.ListDomains(sess.Principal, storage.ListOptions{Limit: maxLimit})
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.render(w, status, "domains", s.pageOf(sess, "Domains", page{Error: msg, Data: domainsData{Domains: list,
		Algorithms: dkimAlgorithms, CanWrite: canWrite(sess, app.ScopeDomainsWrite), Name: name}}))
}

func domainURL(id string) string { return "/dashboard/domains/" + url.PathEscape(id) }

func (s *Server) createDomainForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	err := formText(r)
	name := strings.TrimSpace(r.PostForm.Get("name"))
	var d storage.Domain
	if err == nil {
		d, err = s.app.CreateDomain(sess.Principal, name, r.PostForm.Get("dkim_algorithm"))
	}
	if err != nil {
		if status, msg, ok := formError(err); ok {
			s.showDomains(w, sess, status, name, msg)
			return
		}
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, domainURL(d.ID), http.StatusSeeOther)
}

func (s *Server) domainPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showDomain(w, sess, http.StatusOK, r.PathValue("id"), nil, "")
}

// showDomain renders a domain's page with its records as its last check
// found them, and grade when the grader was asked.
func (s *Server) showDomain(w http.ResponseWriter, sess app.Session, status int, id string, grade *gradeData, msg string) {
	d, err := s.app.Domain(sess.Principal, id)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	data := domainData{Domain: d, Algorithms: dkimAlgorithms, CanWrite: canWrite(sess, app.ScopeDomainsWrite), Grade: grade}
	if sel, _, ok := app.SigningKey(d); ok {
		data.Selector = sel
	}
	for i, rec := range s.app.Records(d) {
		data.Records = append(data.Records, recordRow{DNSRecord: rec, ID: "record-" + strconv.Itoa(i)})
	}
	s.render(w, status, "domain", s.pageOf(sess, "Domain "+d.Name, page{Error: msg, Data: data}))
}

// verifyDomainForm looks the domain's records up now.
func (s *Server) verifyDomainForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	d, err := s.app.VerifyDomain(r.Context(), sess.Principal, r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, domainURL(d.ID), http.StatusSeeOther)
}

func (s *Server) rotateDKIMForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	d, err := s.app.RotateDKIM(sess.Principal, r.PathValue("id"), r.PostForm.Get("dkim_algorithm"))
	if err != nil {
		if status, msg, ok := formError(err); ok {
			s.showDomain(w, sess, status, r.PathValue("id"), nil, msg)
			return
		}
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, domainURL(d.ID), http.StatusSeeOther)
}

func (s *Server) deleteDomainForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if err := s.app.DeleteDomain(sess.Principal, r.PathValue("id")); err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/domains", http.StatusSeeOther)
}

// gradeDomainForm asks the grader's domain check (as GET
// /v1/grader/check: DNS only, cached 5 minutes) about the domain.
func (s *Server) gradeDomainForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	d, err := s.app.Domain(sess.Principal, r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	g := &gradeData{Disabled: s.app.GraderDisabled()}
	if !g.Disabled {
		res, err := s.app.GraderCheck(r.Context(), d.Name, nil)
		if err != nil {
			s.fail(w, sess, err)
			return
		}
		g.Grade, g.Score, g.Recommendations = res.Grade, res.Score, res.Recommendations
		for _, f := range res.Findings {
			g.Findings = append(g.Findings, findingRow{Severity: f.Severity, Category: f.Category, Message: f.Message})
		}
		for name, sc := range res.Breakdown {
			g.Breakdown = append(g.Breakdown, breakdownRow{Name: strings.ReplaceAll(name, "_", " "), Score: sc.Score, Max: sc.Max})
		}
		sort.Slice(g.Breakdown, func(i, j int) bool { return g.Breakdown[i].Name < g.Breakdown[j].Name })
	}
	s.showDomain(w, sess, http.StatusOK, d.ID, g, "")
}
