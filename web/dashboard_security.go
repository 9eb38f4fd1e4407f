package web

import (
	"errors"
	"html/template"
	"net/http"
	"strings"

	"mailbolt/app"
)

func (s *Server) codeForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.render(w, http.StatusOK, "code", page{Title: "Second factor", CSRF: sess.CSRF})
}

// code takes the second factor of a login; attempts count against the
// person's login limit.
func (s *Server) code(w http.ResponseWriter, r *http.Request, sess app.Session) {
	again := func(status int, msg string) {
		s.render(w, status, "code", page{Title: "Second factor", CSRF: sess.CSRF, Error: msg})
	}
	if ok, err := s.loginQuota(w, "code:"+sess.Email, s.cfg.LoginEmailLimit); err != nil {
		s.fail(w, sess, err)
		return
	} else if !ok {
		again(http.StatusTooManyRequests, "Too many codes tried: wait a minute.")
		return
	}
	if err := s.app.SecondFactor(sess, r.PostForm.Get("code")); err != nil {
		var e *app.Error
		if errors.As(err, &e) && e.Code == app.CodeUnauthorized {
			again(http.StatusUnauthorized, "The code is wrong or was used already.")
			return
		}
		if errors.As(err, &e) && e.Code == app.CodeRateLimitExceeded {
			again(http.StatusTooManyRequests, "Too many wrong codes: "+strings.TrimPrefix(e.Message, "too many wrong codes: ")+".")
			return
		}
		s.fail(w, sess, err)
		return
	}
	to := "/dashboard/"
	if sess.AccountID == "" {
		to = "/dashboard/accounts"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// securityData is what the Security page shows.
type securityData struct {
	On           bool
	RecoveryLeft int
	Setup        *app.TOTPSetup // a key being enrolled
	SetupURI     template.URL   // its otpauth: link, which html/template would otherwise refuse
	Codes        []string       // recovery codes, shown once
}

func (s *Server) showSecurity(w http.ResponseWriter, sess app.Session, status int, d securityData, msg string) {
	on, left, err := s.app.TOTPStatus(sess)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d.On, d.RecoveryLeft = on, left
	s.render(w, status, "security", s.pageOf(sess, "Security", page{Error: msg, Data: d}))
}

func (s *Server) securityPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showSecurity(w, sess, http.StatusOK, securityData{}, "")
}

func (s *Server) beginTOTP(w http.ResponseWriter, r *http.Request, sess app.Session) {
	setup, err := s.app.BeginTOTP(sess)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.showSecurity(w, sess, http.StatusOK, securityData{Setup: &setup, SetupURI: template.URL(setup.URI)}, "")
}

func (s *Server) confirmTOTP(w http.ResponseWriter, r *http.Request, sess app.Session) {
	codes, err := s.app.ConfirmTOTP(sess, r.PostForm.Get("code"))
	if err != nil {
		var e *app.Error
		if errors.As(err, &e) && e.Code == app.CodeValidation {
			s.showSecurity(w, sess, http.StatusBadRequest, securityData{}, e.Message+": set up again")
			return
		}
		s.fail(w, sess, err)
		return
	}
	s.showSecurity(w, sess, http.StatusOK, securityData{Codes: codes}, "")
}

func (s *Server) disableTOTP(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if err := s.app.DisableTOTP(sess, r.PostForm.Get("code")); err != nil {
		var e *app.Error
		if errors.As(err, &e) && e.Code == app.CodeValidation {
			s.showSecurity(w, sess, http.StatusBadRequest, securityData{}, e.Message)
			return
		}
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/security", http.StatusSeeOther)
}
