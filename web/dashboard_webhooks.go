package web

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"mailbolt/app"
	"mailbolt/storage"
)

// webhooksData is the Webhooks list with its create form.
type webhooksData struct {
	Hooks    []storage.Webhook
	Types    []string
	CanWrite bool
	Form     webhookForm // what the create form shows again after an error
}

// webhookForm is the values of a create or edit form.
type webhookForm struct {
	URL, Description string
	Events           []string
	Enabled          bool
}

// Has reports whether the form has event type t ticked.
func (f webhookForm) Has(t string) bool { return slices.Contains(f.Events, t) }

// deliveryRow is one delivery as the webhook page shows it.
type deliveryRow struct {
	storage.Delivery
	Replayable bool // failed within the retention window: the Replay button
}

// webhookData is what a webhook's page shows.
type webhookData struct {
	Hook       storage.Webhook
	Types      []string
	CanWrite   bool
	Form       webhookForm
	Secret     string           // a new secret, shown once
	Test       *app.WebhookTest // the answer to a test event
	Replayed   string           // the event just queued again
	Status     string           // the deliveries' filter
	Deliveries []deliveryRow
	Next       template.URL
}

func canWrite(sess app.Session, scope string) bool { return app.HasScope(sess.Principal.Scopes, scope) }

func (s *Server) webhooksPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showWebhooks(w, sess, http.StatusOK, webhookForm{Enabled: true}, "")
}

func (s *Server) showWebhooks(w http.ResponseWriter, sess app.Session, status int, form webhookForm, msg string) {
	list, _, _, err := s.app.ListWebhooks(sess.Principal, storage.ListOptions{Limit: app.MaxWebhooks})
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.render(w, status, "webhooks", s.pageOf(sess, "Webhooks", page{Error: msg, Data: webhooksData{Hooks: list,
		Types: app.EventTypes, CanWrite: canWrite(sess, app.ScopeWebhooksWrite), Form: form}}))
}

// formOf reads a create or edit form.
func webhookFormOf(r *http.Request) webhookForm {
	return webhookForm{URL: strings.TrimSpace(r.PostForm.Get("url")), Description: r.PostForm.Get("description"),
		Events: r.PostForm["events"], Enabled: r.PostForm.Get("enabled") != ""}
}

// formError is the message of a use case's input error, to show on the
// form; ok is false for any other error.
func formError(err error) (status int, msg string, ok bool) {
	var e *app.Error
	if errors.As(err, &e) && (e.Code == app.CodeValidation || e.Code == app.CodeConflict || e.Code == app.CodeInvalidInput) {
		return e.Status(), e.Message, true
	}
	return 0, "", false
}

func (s *Server) createWebhookForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	err := formText(r)
	f := webhookFormOf(r)
	var created app.CreatedWebhook
	if err == nil {
		created, err = s.app.CreateWebhook(r.Context(), sess.Principal, app.WebhookInput{URL: f.URL, Events: f.Events, Description: f.Description})
	}
	if err != nil {
		if status, msg, ok := formError(err); ok {
			s.showWebhooks(w, sess, status, f, msg)
			return
		}
		s.fail(w, sess, err)
		return
	}
	s.showWebhook(w, r, sess, http.StatusCreated, created.Webhook.ID, webhookData{Secret: created.Secret}, "")
}

func (s *Server) webhookPage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	s.showWebhook(w, r, sess, http.StatusOK, r.PathValue("id"), webhookData{Replayed: r.URL.Query().Get("replayed")}, "")
}

// showWebhook renders a webhook's page: d carries what the action that
// leads here adds (a secret, a test's answer, the edit form in error).
func (s *Server) showWebhook(w http.ResponseWriter, r *http.Request, sess app.Session, status int, id string, d webhookData, msg string) {
	hook, err := s.app.Webhook(sess.Principal, id)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d.Hook, d.Types, d.CanWrite = hook, app.EventTypes, canWrite(sess, app.ScopeWebhooksWrite)
	if d.Form.Events == nil && d.Form.URL == "" {
		d.Form = webhookForm{URL: hook.URL, Description: hook.Description, Events: hook.Events, Enabled: !hook.Disabled}
	}
	q := r.URL.Query()
	if r.Method == http.MethodGet {
		d.Status = q.Get("status")
	}
	pq := pageQuery{limit: defaultLimit}
	if r.Method == http.MethodGet {
		if pq, err = s.parsePage(r, listName[storage.Delivery]()); err != nil {
			s.fail(w, sess, err)
			return
		}
	}
	list, res, _, err := s.app.Deliveries(sess.Principal, hook.ID, d.Status, pq.options())
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	for _, dl := range list {
		if s.app.DeliveryInFlight(dl) {
			// A request still out is not an attempt to show yet (as the API).
			dl.Attempts = dl.Attempts[:len(dl.Attempts)-1]
		}
		d.Deliveries = append(d.Deliveries, deliveryRow{Delivery: dl, Replayable: s.app.Replayable(dl)})
	}
	if res.HasMore {
		next := url.Values{"cursor": {s.cursor(listName[storage.Delivery](), res.Next)}}
		if d.Status != "" {
			next.Set("status", d.Status)
		}
		d.Next = template.URL("/dashboard/webhooks/" + url.PathEscape(hook.ID) + "?" + next.Encode())
	}
	s.render(w, status, "webhook", s.pageOf(sess, "Webhook "+hook.URL, page{Error: msg, Data: d}))
}

func (s *Server) updateWebhookForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	id := r.PathValue("id")
	err := formText(r)
	f := webhookFormOf(r)
	events := f.Events
	if err == nil {
		_, err = s.app.UpdateWebhook(r.Context(), sess.Principal, id, app.WebhookPatch{URL: &f.URL, Events: &events,
			Description: &f.Description, Enabled: &f.Enabled})
	}
	if err != nil {
		if status, msg, ok := formError(err); ok {
			s.showWebhook(w, r, sess, status, id, webhookData{Form: f}, msg)
			return
		}
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/webhooks/"+url.PathEscape(id), http.StatusSeeOther)
}

func (s *Server) rotateWebhookForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	out, err := s.app.RotateWebhookSecret(sess.Principal, r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.showWebhook(w, r, sess, http.StatusOK, out.Webhook.ID, webhookData{Secret: out.Secret}, "")
}

func (s *Server) testWebhookForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	res, err := s.app.TestWebhook(r.Context(), sess.Principal, r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	s.showWebhook(w, r, sess, http.StatusOK, r.PathValue("id"), webhookData{Test: &res}, "")
}

func (s *Server) deleteWebhookForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	if err := s.app.DeleteWebhook(sess.Principal, r.PathValue("id")); err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/webhooks", http.StatusSeeOther)
}

// replayForm queues a failed delivery again (app.Replay: failed, within
// the retention window) and goes back to the webhook's page.
func (s *Server) replayForm(w http.ResponseWriter, r *http.Request, sess app.Session) {
	id, event := r.PathValue("id"), r.PostForm.Get("event")
	if _, err := s.app.Replay(sess.Principal, id, event); err != nil {
		s.fail(w, sess, err)
		return
	}
	http.Redirect(w, r, "/dashboard/webhooks/"+url.PathEscape(id)+"?"+url.Values{"replayed": {event}}.Encode(), http.StatusSeeOther)
}
