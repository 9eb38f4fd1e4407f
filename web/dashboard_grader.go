package web

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
)

// gradeView is a grader result as the pages show it: the fields of the
// API's check result (docs/grader.md), read back from its JSON.
type gradeView struct {
	Domain          string `json:"domain"`
	Score           int    `json:"score"`
	Grade           string `json:"grade"`
	Breakdown       map[string]struct{ Score, Max int }
	Findings        []struct{ Severity, Category, Message string }
	Recommendations []string `json:"recommendations"`
	Auth            *struct {
		SPF struct {
			Result, Domain string
		}
		DKIM []struct {
			Result, Domain, Selector string
		}
		DMARC struct {
			Result, Policy string
		}
	} `json:"authentication_results"`
	// Dimensions is Breakdown in name order, for the template.
	Dimensions []dimension `json:"-"`
}

type dimension struct {
	Name       string
	Score, Max int
}

func gradeOf(v any) (*gradeView, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, app.Internal(err)
		}
	}
	var g gradeView
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, app.Internal(err)
	}
	for name, sc := range g.Breakdown {
		g.Dimensions = append(g.Dimensions, dimension{strings.ReplaceAll(name, "_", " "), sc.Score, sc.Max})
	}
	sort.Slice(g.Dimensions, func(i, j int) bool { return g.Dimensions[i].Name < g.Dimensions[j].Name })
	return &g, nil
}

// graderData is the grader page: the forms as posted, a result, and one
// page of the account's history.
type graderData struct {
	Domain, Selectors        string
	Raw, SenderIP, HELO      string
	MailFrom                 string
	Result                   *gradeView
	ResultID                 string
	History                  []storage.GraderResult
	Page, Pages              int
	CanSubmit, CanReadResult bool
}

// graderQuota takes one check from the public grader check's limiter
// (GRADER_RATE_LIMIT per GRADER_RATE_WINDOW per source address), the one
// POST /v1/grader/check uses: a check from a page counts as one from the API.
func (s *Server) graderQuota(w http.ResponseWriter, r *http.Request) error {
	q := s.graderIPs.take(sourceNet(clientIP(r)), s.cfg.GraderRateLimit, s.cfg.GraderRateWindow, s.app.Now())
	if q.allowed {
		return nil
	}
	w.Header().Set("Retry-After", retryAfter(q, s.app.Now()))
	return app.NewError(app.CodeRateLimited,
		"Too many checks from your address: "+strconv.Itoa(q.limit)+" per "+s.cfg.GraderRateWindow.String()+". Try again later.")
}

// domainCheck grades the posted domain from DNS alone, as POST
// /v1/grader/check does, within the same limit.
func (s *Server) domainCheck(w http.ResponseWriter, r *http.Request, d *graderData) error {
	if s.app.GraderDisabled() {
		return app.ErrGraderDisabled
	}
	d.Domain, d.Selectors = strings.TrimSpace(r.PostForm.Get("domain")), r.PostForm.Get("selectors")
	if err := s.graderQuota(w, r); err != nil {
		return err
	}
	var selectors []string
	for _, sel := range strings.FieldsFunc(d.Selectors, func(c rune) bool { return c == ',' || c == ' ' }) {
		selectors = append(selectors, sel)
	}
	res, err := s.app.GraderCheck(r.Context(), d.Domain, selectors)
	if err != nil {
		return err
	}
	d.Result, err = gradeOf(res)
	return err
}

// shownError is a grader error shown on the page with the forms: bad
// input and the rate limit; nil for the rest, which get the error page.
func shownError(err error) *app.Error {
	e := app.AsError(err)
	switch e.Code {
	case app.CodeInvalidInput, app.CodeValidation, app.CodeRateLimited, app.CodeBodyTooLarge:
		return e
	}
	return nil
}

func (s *Server) graderPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showGrader(w, r, sess, http.StatusOK, &graderData{}, "")
}

func (s *Server) showGrader(w http.ResponseWriter, r *http.Request, sess app.Session, status int, d *graderData, msg string) {
	if s.app.GraderDisabled() {
		s.fail(w, sess, app.ErrGraderDisabled)
		return
	}
	q, err := queryOf(r)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d.Page = 1
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, sess, app.Validation("page", "must be an integer of 1 or more"))
			return
		}
		d.Page = min(n, 1_000_000)
	}
	const perPage = 20
	d.CanSubmit = app.HasScope(sess.Principal.Scopes, app.ScopeGraderWrite)
	d.CanReadResult = app.HasScope(sess.Principal.Scopes, app.ScopeGraderRead)
	if d.CanReadResult {
		list, total, err := s.app.GraderHistory(sess.Principal, d.Page, perPage)
		if err != nil {
			s.fail(w, sess, err)
			return
		}
		d.History, d.Pages = list, (total+perPage-1)/perPage
	}
	s.render(w, status, "grader", s.pageOf(sess, "Grader", page{Error: msg, Data: d}))
}

// graderCheckForm is the signed-in domain check.
func (s *Server) graderCheckForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	d := &graderData{}
	if err := s.domainCheck(w, r, d); err != nil {
		if e := shownError(err); e != nil {
			s.showGrader(w, r, sess, e.Status(), d, e.Message)
			return
		}
		s.fail(w, sess, err)
		return
	}
	s.showGrader(w, r, sess, http.StatusOK, d, "")
}

// graderSubmitForm grades a pasted raw message (the full email, headers and
// body) through the use case of POST /v1/grader/submit, stores the result
// in the account's history, and shows it.
func (s *Server) graderSubmitForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	bad := formText(r)
	f := r.PostForm
	d := &graderData{Raw: f.Get("raw"), SenderIP: strings.TrimSpace(f.Get("sender_ip")),
		HELO: strings.TrimSpace(f.Get("helo_hostname")), MailFrom: strings.TrimSpace(f.Get("mail_from"))}
	show := func(err error) {
		if e := shownError(err); e != nil {
			s.showGrader(w, r, sess, e.Status(), d, e.Message)
			return
		}
		s.fail(w, sess, err)
	}
	if bad != nil {
		show(bad)
		return
	}
	if int64(len(d.Raw)) > s.cfg.GraderMaxBody {
		show(app.NewError(app.CodeBodyTooLarge, "raw: the message is over the grader's limit of "+
			strconv.FormatInt(s.cfg.GraderMaxBody, 10)+" bytes"))
		return
	}
	if strings.TrimSpace(d.Raw) == "" {
		show(app.InvalidInput("raw", "paste the whole message, headers and body"))
		return
	}
	stored, err := s.app.GraderSubmit(r.Context(), sess.Principal,
		app.Submission{Raw: []byte(d.Raw), SenderIP: d.SenderIP, HELO: d.HELO, MailFrom: d.MailFrom})
	if err != nil {
		show(err)
		return
	}
	http.Redirect(w, r, "/dashboard/grader/results/"+stored.ID, http.StatusSeeOther)
}

// graderResultPage shows one stored result of the account.
func (s *Server) graderResultPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	res, err := s.app.GraderResult(sess.Principal, r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	g, err := gradeOf(res.Result)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.showGrader(w, r, sess, http.StatusOK, &graderData{Result: g, ResultID: res.ID}, "")
}

// publicCheckPage is the domain check without login: the form's CSRF
// token is the mailbolt_form cookie's, as on the login page.
func (s *Server) publicCheckPage(w http.ResponseWriter, r *http.Request) {
	if s.app.GraderDisabled() {
		s.fail(w, app.Session{}, app.ErrGraderDisabled)
		return
	}
	s.render(w, http.StatusOK, "grader_public", page{Title: "Email domain check", CSRF: s.formToken(w, r), Data: &graderData{}})
}

func (s *Server) publicCheck(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.fail(w, app.Session{}, app.Validation("form", "cannot be read"))
		return
	}
	if err := checkFormToken(r); err != nil {
		s.fail(w, app.Session{}, err)
		return
	}
	d := &graderData{}
	status, msg := http.StatusOK, ""
	if err := s.domainCheck(w, r, d); err != nil {
		e := shownError(err)
		if e == nil {
			s.fail(w, app.Session{}, err)
			return
		}
		status, msg = e.Status(), e.Message
	}
	s.render(w, status, "grader_public", page{Title: "Email domain check", CSRF: s.formToken(w, r), Error: msg, Data: d})
}
