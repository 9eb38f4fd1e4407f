package web

import (
	"errors"
	"html/template"
	"net/http"
	"strings"

	"mailbolt/app"
)

// trackingPrefix is where open and click tracking live; their answers never
// fail for a mail client, even over the rate limit (nothing is recorded
// then).
const trackingPrefix = "/v1/t/"

// transparentGIF is a 1×1 transparent GIF.
var transparentGIF = []byte{
	0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
}

func noCache(h http.Header) {
	h.Set("Cache-Control", "no-store, no-cache, must-revalidate, private, max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Expires", "0")
}

func overLimit(r *http.Request) bool {
	v, _ := r.Context().Value(overLimitKey{}).(bool)
	return v
}

func (s *Server) client(r *http.Request) app.ClientContext {
	return app.NewClientContext(s.app.GeoDB(), clientIP(r), r.UserAgent())
}

// openPixel answers the open-tracking image, always, and records the open
// when the token verifies.
func (s *Server) openPixel(w http.ResponseWriter, r *http.Request, c *call) {
	if !overLimit(r) {
		s.app.RecordOpen(strings.TrimSuffix(c.params.ByName("token"), ".gif"), s.client(r))
	}
	noCache(w.Header())
	w.Header().Set("Content-Type", "image/gif")
	w.WriteHeader(http.StatusOK)
	w.Write(transparentGIF)
}

// click redirects to the URL recorded for a tracked link and records the
// click; a token that does not verify is 404 and records nothing.
func (s *Server) click(w http.ResponseWriter, r *http.Request, c *call) {
	token := c.params.ByName("token")
	var url string
	var err error
	if overLimit(r) {
		url, err = s.app.LinkTarget(token)
	} else {
		url, err = s.app.RecordClick(token, s.client(r))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	noCache(w.Header())
	w.Header().Set("Location", url)
	w.WriteHeader(http.StatusFound)
}

var unsubscribePage = template.Must(template.New("u").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>{{if .Done}}Unsubscribed{{else}}Unsubscribe{{end}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font-size:1rem;padding:.6rem 1.2rem;border-radius:.4rem;border:1px solid #444;background:#fff;cursor:pointer}</style>
</head><body>
{{if .Done}}<h1>You are unsubscribed</h1><p>{{.Email}} will not receive these emails any more.</p>
{{else}}<h1>Unsubscribe</h1><p>Stop sending these emails to {{.Email}}?</p>
<form method="post"><input type="hidden" name="confirm" value="1"><button type="submit">Unsubscribe</button></form>{{end}}
</body></html>
`))

// unsubscribeForm shows a confirmation page with a button. It never
// unsubscribes: link scanners follow GET links.
func (s *Server) unsubscribeForm(w http.ResponseWriter, r *http.Request, c *call) {
	email, err := s.app.UnsubscribeTarget(c.params.ByName("token"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.page(w, email, false)
}

// unsubscribe handles the one-click POST of RFC 8058 (body
// "List-Unsubscribe=One-Click") and the button of the confirmation page.
func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request, c *call) {
	// RFC 8058 one-click POSTs are multipart/form-data or urlencoded.
	method := app.MethodLink
	if err := r.ParseMultipartForm(64 << 10); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		r.ParseForm()
	}
	if r.PostFormValue("List-Unsubscribe") == "One-Click" {
		method = app.MethodOneClick
	}
	email, err := s.app.Unsubscribe(c.params.ByName("token"), method)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.page(w, email, true)
}

func (s *Server) page(w http.ResponseWriter, email string, done bool) {
	noCache(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(http.StatusOK)
	unsubscribePage.Execute(w, struct {
		Email string
		Done  bool
	}{email, done})
}
