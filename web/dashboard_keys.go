package web

import (
	"errors"
	"net/http"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// keysData is the API keys page: a page of keys, the scopes the person may
// grant (those of their role), and a key just made with its secret, shown
// this once.
type keysData struct {
	Keys    []storage.APIKey
	Next    string
	Scopes  []string
	Created *app.CreatedKey
	Form    keyForm
	CanEdit bool
}

// keyForm is the create form as posted, kept when it is refused.
type keyForm struct {
	Name, Mode, Expires string
	Scopes              map[string]bool
}

// grantable is the scopes a principal may put on a key: those it holds
// ("*" covers every one).
func grantable(p app.Principal) []string {
	var out []string
	if app.HasScope(p.Scopes, app.ScopeAll) {
		out = append(out, app.ScopeAll)
	}
	for _, sc := range app.Scopes {
		if app.HasScope(p.Scopes, sc) {
			out = append(out, sc)
		}
	}
	return out
}

func (s *Server) keysPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showKeys(w, r, sess, http.StatusOK, nil, keyForm{}, "")
}

func (s *Server) showKeys(w http.ResponseWriter, r *http.Request, sess app.Session, status int, created *app.CreatedKey, f keyForm, msg string) {
	pq, err := s.parsePage(r, listName[storage.APIKey]())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	list, res, _, err := s.app.ListKeys(sess.Principal, pq.options())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := keysData{Keys: list, Scopes: grantable(sess.Principal), Created: created, Form: f,
		CanEdit: app.HasScope(sess.Principal.Scopes, app.ScopeAPIKeysWrite)}
	if res.HasMore {
		d.Next = s.cursor(listName[storage.APIKey](), res.Next)
	}
	s.render(w, status, "keys", s.pageOf(sess, "API keys", page{Error: msg, Data: d}))
}

// keysCreate makes a key with the scopes ticked (none ticked: refused, so
// a key never gets everything by accident), through the same use case as
// POST /v1/api-keys: scopes outside the person's role are refused there.
func (s *Server) keysCreate(w http.ResponseWriter, r *http.Request, sess app.Session) {
	err := formText(r)
	f := keyForm{Name: r.PostForm.Get("name"), Mode: r.PostForm.Get("mode"), Expires: r.PostForm.Get("expires_at"),
		Scopes: map[string]bool{}}
	scopes := r.PostForm["scopes"]
	for _, sc := range scopes {
		f.Scopes[sc] = true
	}
	in := app.KeyInput{Name: f.Name, Mode: f.Mode, Scopes: scopes}
	if err == nil && len(scopes) == 0 {
		err = app.Validation("scopes", "tick at least one scope")
	}
	if err == nil && f.Expires != "" {
		var t time.Time
		if t, err = time.Parse(time.DateOnly, f.Expires); err != nil {
			err = app.Validation("expires_at", "must be a date, YYYY-MM-DD")
		} else {
			in.ExpiresAt = &t
		}
	}
	var created app.CreatedKey
	if err == nil {
		created, err = s.app.CreateKey(sess.Principal, in)
	}
	if err != nil {
		var e *app.Error
		if errors.As(err, &e) && e.Code == app.CodeValidation {
			s.showKeys(w, r, sess, e.Status(), nil, f, e.Message)
			return
		}
		s.fail(w, sess, err)
		return
	}
	s.showKeys(w, r, sess, http.StatusOK, &created, keyForm{}, "")
}

func (s *Server) keysRevoke(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if _, err := s.app.RevokeKey(sess.Principal, r.PostForm.Get("key")); err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/api-keys", http.StatusSeeOther)
}
