package web

import (
	"net/http"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

type webhookView struct {
	ID                      string     `json:"id"`
	URL                     string     `json:"url"`
	Events                  []string   `json:"events"`
	Description             string     `json:"description"`
	Mode                    string     `json:"mode"`
	Enabled                 bool       `json:"enabled"`
	CreatedAt               time.Time  `json:"created_at"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	// Secret is present only in the answers that create or rotate it.
	Secret string `json:"secret,omitempty"`
}

func (s *Server) viewWebhook(w storage.Webhook) webhookView {
	v := webhookView{ID: w.ID, URL: w.URL, Events: w.Events, Description: w.Description, Mode: "live",
		Enabled: !w.Disabled, CreatedAt: w.CreatedAt.UTC()}
	if w.Test {
		v.Mode = "test"
	}
	if w.PreviousUntil != nil && s.app.Now().Before(*w.PreviousUntil) {
		v.PreviousSecretExpiresAt = utc(w.PreviousUntil)
	}
	return v
}

type attemptView struct {
	At         time.Time `json:"at"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	LatencyMS  float64   `json:"latency_ms"`
	Response   string    `json:"response"`
}

type deliveryView struct {
	ID            string        `json:"id"`
	WebhookID     string        `json:"webhook_id"`
	EventID       string        `json:"event_id"`
	Event         string        `json:"event"`
	Status        string        `json:"status"`
	Attempts      []attemptView `json:"attempts"`
	CreatedAt     time.Time     `json:"created_at"`
	NextAttemptAt *time.Time    `json:"next_attempt_at"`
	DeliveredAt   *time.Time    `json:"delivered_at"`
	FailedAt      *time.Time    `json:"failed_at"`
}

func (s *Server) viewDelivery(d storage.Delivery) deliveryView {
	// A request in flight is not an attempt to show yet (nor an
	// interrupted one): leave it out until its answer is recorded.
	if s.app.DeliveryInFlight(d) {
		d.Attempts = d.Attempts[:len(d.Attempts)-1]
	}
	v := deliveryView{ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID, Event: d.EventType, Status: d.Status,
		Attempts: []attemptView{}, CreatedAt: d.CreatedAt.UTC(), DeliveredAt: utc(d.DeliveredAt), FailedAt: utc(d.FailedAt)}
	if d.Status == storage.DeliveryPending {
		v.NextAttemptAt = utc(d.NextAttemptAt)
	}
	for _, a := range d.Attempts {
		av := attemptView{At: a.At.UTC(), Error: optional(a.Error), LatencyMS: a.LatencyMS, Response: a.Response}
		if a.StatusCode != 0 {
			code := a.StatusCode
			av.StatusCode = &code
		}
		v.Attempts = append(v.Attempts, av)
	}
	return v
}

type createWebhookRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	var req createWebhookRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, created app.CreatedWebhook) {
		v := s.viewWebhook(created.Webhook)
		v.Secret = created.Secret
		w.Header().Set("Location", "/v1/webhooks/"+created.Webhook.ID)
		writeJSON(w, http.StatusCreated, v)
	})
	created, e := s.app.CreateWebhook(r.Context(), c.Principal, app.WebhookInput{URL: req.URL, Events: req.Events, Description: req.Description})
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, created)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, c *call) {
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Webhook, storage.ListResult, int, error) {
		return s.app.ListWebhooks(c.Principal, o)
	}, s.viewWebhook)
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	hook, e := s.app.Webhook(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, s.viewWebhook(hook))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	write := answer(c, noContent)
	if e := s.app.DeleteWebhook(c.Principal, c.params.ByName("id")); e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, struct{}{})
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct{}
	if !s.decodeOptional(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, rotated app.CreatedWebhook) {
		v := s.viewWebhook(rotated.Webhook)
		v.Secret = rotated.Secret
		writeJSON(w, http.StatusOK, v)
	})
	rotated, e := s.app.RotateWebhookSecret(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, rotated)
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, c *call) {
	q, e := queryOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	status := q.Get("status")
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Delivery, storage.ListResult, int, error) {
		return s.app.Deliveries(c.Principal, c.params.ByName("id"), status, o)
	}, s.viewDelivery)
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct{}
	if !s.decodeOptional(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, d storage.Delivery) { writeJSON(w, http.StatusAccepted, s.viewDelivery(d)) })
	d, e := s.app.Replay(c.Principal, c.params.ByName("id"), c.params.ByName("event_id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, d)
}

// updateWebhookRequest is PATCH /v1/webhooks/{id}: a field left out (or
// null) stays as it is.
type updateWebhookRequest struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	var req updateWebhookRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, hook storage.Webhook) { writeJSON(w, http.StatusOK, s.viewWebhook(hook)) })
	hook, e := s.app.UpdateWebhook(r.Context(), c.Principal, c.params.ByName("id"),
		app.WebhookPatch{URL: req.URL, Events: req.Events, Description: req.Description, Enabled: req.Enabled})
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, hook)
}

// webhookTestView is the answer to POST /v1/webhooks/{id}/test: what the
// receiver answered to the webhook.test event.
type webhookTestView struct {
	EventID    string    `json:"event_id"`
	Event      string    `json:"event"`
	URL        string    `json:"url"`
	At         time.Time `json:"at"`
	Success    bool      `json:"success"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	LatencyMS  float64   `json:"latency_ms"`
	Response   string    `json:"response"`
}

func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct{}
	if !s.decodeOptional(w, r, &req) {
		return
	}
	res, e := s.app.TestWebhook(r.Context(), c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	v := webhookTestView{EventID: res.EventID, Event: app.EventWebhookTest, URL: res.URL, At: res.At.UTC(),
		Success: res.StatusCode >= 200 && res.StatusCode < 300, Error: optional(res.Error),
		LatencyMS: float64(res.Latency.Microseconds()) / 1000, Response: res.Response}
	if res.StatusCode != 0 {
		code := res.StatusCode
		v.StatusCode = &code
	}
	writeJSON(w, http.StatusOK, v)
}
