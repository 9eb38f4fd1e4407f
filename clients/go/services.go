package mailbolt

import (
	"context"
	"io"
	"iter"
	"net/url"
	"strconv"
	"time"
)

// Each list has three calls: List (one page), Pages (every page from the
// one the params select, in its mode) and All (every item of those pages).
// An iterator stops at the first error, which it yields.

// ListMessagesParams filters and pages GET /v1/messages.
type ListMessagesParams struct {
	ListParams
	Status     string // queued, scheduled, sending, sent, ...
	CampaignID string
	Tag        string
	Recipient  string
	Stream     string // transactional or broadcast
	Since      time.Time
	Until      time.Time
}

func (p *ListMessagesParams) values() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.values()
	setNonEmpty(q, "status", p.Status)
	setNonEmpty(q, "campaign_id", p.CampaignID)
	setNonEmpty(q, "tag", p.Tag)
	setNonEmpty(q, "recipient", p.Recipient)
	setNonEmpty(q, "stream", p.Stream)
	setTime(q, "since", p.Since)
	setTime(q, "until", p.Until)
	return q
}

// ListEventsParams filters and pages GET /v1/events.
type ListEventsParams struct {
	ListParams
	Types     []string // event types, e.g. message.delivered
	MessageID string
	Recipient string
	Since     time.Time
	Until     time.Time
}

func (p *ListEventsParams) values() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.values()
	for _, t := range p.Types {
		q.Add("type", t)
	}
	setNonEmpty(q, "message_id", p.MessageID)
	setNonEmpty(q, "recipient", p.Recipient)
	setTime(q, "since", p.Since)
	setTime(q, "until", p.Until)
	return q
}

// ListDeliveriesParams filters and pages a webhook's deliveries.
type ListDeliveriesParams struct {
	ListParams
	Status string // pending, delivered or failed
}

func (p *ListDeliveriesParams) values() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.values()
	setNonEmpty(q, "status", p.Status)
	return q
}

func setNonEmpty(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func setTime(q url.Values, k string, t time.Time) {
	if !t.IsZero() {
		q.Set(k, t.UTC().Format(time.RFC3339Nano))
	}
}

// AccountService: GET /v1/account.
type AccountService struct{ c *Client }

// Get returns the calling key's account (getAccount).
func (s *AccountService) Get(ctx context.Context) (*Account, error) {
	out := new(Account)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/account"}, out, nil)
	return ret(out, err)
}

// AuditLog returns one page of the account's audit log, newest first
// (listAuditLog; scope account:read).
func (s *AccountService) AuditLog(ctx context.Context, p *ListParams) (*Page[AuditEntry], error) {
	return listPage[AuditEntry](ctx, s.c, "/v1/audit-log", p.values())
}

// AuditLogPages walks the pages of the audit log.
func (s *AccountService) AuditLogPages(ctx context.Context, p *ListParams) iter.Seq2[*Page[AuditEntry], error] {
	return pages[AuditEntry](ctx, s.c, "/v1/audit-log", p.values())
}

// MessagesService: /v1/messages.
type MessagesService struct{ c *Client }

// Send queues one message (sendMessage). It sends one Idempotency-Key,
// generated unless WithIdempotencyKey gives one, and reuses it across retries.
func (s *MessagesService) Send(ctx context.Context, req *SendMessageRequest, opts ...RequestOption) (*AcceptedMessage, error) {
	out := new(AcceptedMessage)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/messages", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// SendBatch queues several messages in one transaction (sendBatch), with one
// Idempotency-Key as Send.
func (s *MessagesService) SendBatch(ctx context.Context, msgs []SendMessageRequest, opts ...RequestOption) (*BatchResult, error) {
	out := new(BatchResult)
	body := struct {
		Messages []SendMessageRequest `json:"messages"`
	}{msgs}
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/messages/batch", body: body, idempotent: true}, out, opts)
	return ret(out, err)
}

// Get returns a message with its recipients' states and content (getMessage).
func (s *MessagesService) Get(ctx context.Context, id string) (*Message, error) {
	out := new(Message)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/messages/" + pathEsc(id)}, out, nil)
	return ret(out, err)
}

// Raw returns the message's source exactly as sent (or to be sent) to one
// recipient, as RFC 5322 bytes (getMessageRaw): with the DKIM-Signature of
// that recipient's latest attempt when it was signed. recipient may be
// empty when the message has exactly one recipient.
func (s *MessagesService) Raw(ctx context.Context, id, recipient string) ([]byte, error) {
	var q url.Values
	if recipient != "" {
		q = url.Values{"recipient": {recipient}}
	}
	var out []byte
	if _, err := s.c.do(ctx, call{method: "GET", path: "/v1/messages/" + pathEsc(id) + "/raw", query: q}, &out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// Cancel cancels a queued or scheduled message (cancelMessage).
func (s *MessagesService) Cancel(ctx context.Context, id string, opts ...RequestOption) (*Message, error) {
	out := new(Message)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/messages/" + pathEsc(id) + "/cancel", idempotent: true}, out, opts)
	return ret(out, err)
}

// List returns one page of messages, newest first (listMessages).
func (s *MessagesService) List(ctx context.Context, p *ListMessagesParams) (*Page[Message], error) {
	return listPage[Message](ctx, s.c, "/v1/messages", p.values())
}

// Pages walks the pages of messages.
func (s *MessagesService) Pages(ctx context.Context, p *ListMessagesParams) iter.Seq2[*Page[Message], error] {
	return pages[Message](ctx, s.c, "/v1/messages", p.values())
}

// All walks every message.
func (s *MessagesService) All(ctx context.Context, p *ListMessagesParams) iter.Seq2[Message, error] {
	return items(s.Pages(ctx, p))
}

// EventsService: GET /v1/events.
type EventsService struct{ c *Client }

// List returns one page of events, newest first (listEvents).
func (s *EventsService) List(ctx context.Context, p *ListEventsParams) (*Page[Event], error) {
	return listPage[Event](ctx, s.c, "/v1/events", p.values())
}

// Pages walks the pages of events.
func (s *EventsService) Pages(ctx context.Context, p *ListEventsParams) iter.Seq2[*Page[Event], error] {
	return pages[Event](ctx, s.c, "/v1/events", p.values())
}

// All walks every event.
func (s *EventsService) All(ctx context.Context, p *ListEventsParams) iter.Seq2[Event, error] {
	return items(s.Pages(ctx, p))
}

// APIKeysService: /v1/api-keys.
type APIKeysService struct{ c *Client }

// List returns one page of API keys (listApiKeys).
func (s *APIKeysService) List(ctx context.Context, p *ListParams) (*Page[APIKey], error) {
	return listPage[APIKey](ctx, s.c, "/v1/api-keys", p.values())
}

// Pages walks the pages of API keys.
func (s *APIKeysService) Pages(ctx context.Context, p *ListParams) iter.Seq2[*Page[APIKey], error] {
	return pages[APIKey](ctx, s.c, "/v1/api-keys", p.values())
}

// All walks every API key.
func (s *APIKeysService) All(ctx context.Context, p *ListParams) iter.Seq2[APIKey, error] {
	return items(s.Pages(ctx, p))
}

// Create creates a key; the answer's Key is its secret, shown once (createApiKey).
func (s *APIKeysService) Create(ctx context.Context, req *CreateAPIKeyRequest, opts ...RequestOption) (*APIKey, error) {
	out := new(APIKey)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/api-keys", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// Get returns one key (getApiKey).
func (s *APIKeysService) Get(ctx context.Context, id string) (*APIKey, error) {
	out := new(APIKey)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/api-keys/" + pathEsc(id)}, out, nil)
	return ret(out, err)
}

// Revoke revokes a key (revokeApiKey).
func (s *APIKeysService) Revoke(ctx context.Context, id string, opts ...RequestOption) (*APIKey, error) {
	out := new(APIKey)
	_, err := s.c.do(ctx, call{method: "DELETE", path: "/v1/api-keys/" + pathEsc(id), idempotent: true}, out, opts)
	return ret(out, err)
}

// SuppressionsService: /v1/suppressions.
type SuppressionsService struct{ c *Client }

// List returns one page of suppressions, by address (listSuppressions).
func (s *SuppressionsService) List(ctx context.Context, p *ListParams) (*Page[Suppression], error) {
	return listPage[Suppression](ctx, s.c, "/v1/suppressions", p.values())
}

// Pages walks the pages of suppressions.
func (s *SuppressionsService) Pages(ctx context.Context, p *ListParams) iter.Seq2[*Page[Suppression], error] {
	return pages[Suppression](ctx, s.c, "/v1/suppressions", p.values())
}

// All walks every suppression.
func (s *SuppressionsService) All(ctx context.Context, p *ListParams) iter.Seq2[Suppression, error] {
	return items(s.Pages(ctx, p))
}

// Add suppresses a recipient; adding one already suppressed returns the
// stored suppression (addSuppression).
func (s *SuppressionsService) Add(ctx context.Context, req *AddSuppressionRequest, opts ...RequestOption) (*Suppression, error) {
	out := new(Suppression)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/suppressions", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// Delete removes a suppression (deleteSuppression).
func (s *SuppressionsService) Delete(ctx context.Context, recipient string, opts ...RequestOption) (*Response, error) {
	return s.c.do(ctx, call{method: "DELETE", path: "/v1/suppressions/" + pathEsc(recipient), idempotent: true}, nil, opts)
}

// DeleteFromStream removes only the recipient's entry for one stream,
// transactional or broadcast (deleteSuppression with ?stream=).
func (s *SuppressionsService) DeleteFromStream(ctx context.Context, recipient, stream string, opts ...RequestOption) (*Response, error) {
	q := url.Values{"stream": {stream}}
	return s.c.do(ctx, call{method: "DELETE", path: "/v1/suppressions/" + pathEsc(recipient), query: q, idempotent: true}, nil, opts)
}

// Import adds up to 10,000 suppressions in one transaction, all or nothing:
// a bad one fails the call (400, Details["index"]) and none is added
// (importSuppressions).
func (s *SuppressionsService) Import(ctx context.Context, list []AddSuppressionRequest, opts ...RequestOption) (*ImportSuppressionsResult, error) {
	if list == nil {
		list = []AddSuppressionRequest{}
	}
	out := new(ImportSuppressionsResult)
	body := struct {
		Suppressions []AddSuppressionRequest `json:"suppressions"`
	}{list}
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/suppressions/import", body: body, idempotent: true}, out, opts)
	return ret(out, err)
}

// Export writes the account's suppressions to w as CSV
// (recipient,reason,stream: what the import takes) as the server streams
// them; stream, when not empty, keeps the entries that name that stream. A
// transfer broken off is an error (exportSuppressions).
func (s *SuppressionsService) Export(ctx context.Context, stream string, w io.Writer, opts ...RequestOption) (*Response, error) {
	q := url.Values{}
	if stream != "" {
		q.Set("stream", stream)
	}
	return s.c.do(ctx, call{method: "GET", path: "/v1/suppressions/export", query: q, stream: w}, nil, opts)
}

// DomainsService: /v1/domains.
type DomainsService struct{ c *Client }

// List returns one page of domains (listDomains).
func (s *DomainsService) List(ctx context.Context, p *ListParams) (*Page[Domain], error) {
	return listPage[Domain](ctx, s.c, "/v1/domains", p.values())
}

// Pages walks the pages of domains.
func (s *DomainsService) Pages(ctx context.Context, p *ListParams) iter.Seq2[*Page[Domain], error] {
	return pages[Domain](ctx, s.c, "/v1/domains", p.values())
}

// All walks every domain.
func (s *DomainsService) All(ctx context.Context, p *ListParams) iter.Seq2[Domain, error] {
	return items(s.Pages(ctx, p))
}

// Create adds a sending domain (createDomain).
func (s *DomainsService) Create(ctx context.Context, req *CreateDomainRequest, opts ...RequestOption) (*Domain, error) {
	out := new(Domain)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/domains", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// Get returns one domain (getDomain).
func (s *DomainsService) Get(ctx context.Context, id string) (*Domain, error) {
	out := new(Domain)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/domains/" + pathEsc(id)}, out, nil)
	return ret(out, err)
}

// Delete deletes a domain (deleteDomain).
func (s *DomainsService) Delete(ctx context.Context, id string, opts ...RequestOption) (*Response, error) {
	return s.c.do(ctx, call{method: "DELETE", path: "/v1/domains/" + pathEsc(id), idempotent: true}, nil, opts)
}

// Verify checks the domain's DNS records now (verifyDomain).
func (s *DomainsService) Verify(ctx context.Context, id string, opts ...RequestOption) (*Domain, error) {
	out := new(Domain)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/domains/" + pathEsc(id) + "/verify", idempotent: true}, out, opts)
	return ret(out, err)
}

// RotateDKIM makes a new DKIM key for the domain; req may be nil (rotateDomainDkim).
func (s *DomainsService) RotateDKIM(ctx context.Context, id string, req *RotateDKIMRequest, opts ...RequestOption) (*Domain, error) {
	out := new(Domain)
	if req == nil {
		req = &RotateDKIMRequest{}
	}
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/domains/" + pathEsc(id) + "/dkim/rotate", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// TemplatesService: /v1/templates.
type TemplatesService struct{ c *Client }

// List returns one page of templates, without their sources (listTemplates).
func (s *TemplatesService) List(ctx context.Context, p *ListParams) (*Page[Template], error) {
	return listPage[Template](ctx, s.c, "/v1/templates", p.values())
}

// Pages walks the pages of templates.
func (s *TemplatesService) Pages(ctx context.Context, p *ListParams) iter.Seq2[*Page[Template], error] {
	return pages[Template](ctx, s.c, "/v1/templates", p.values())
}

// All walks every template.
func (s *TemplatesService) All(ctx context.Context, p *ListParams) iter.Seq2[Template, error] {
	return items(s.Pages(ctx, p))
}

// Create creates a template (createTemplate).
func (s *TemplatesService) Create(ctx context.Context, req *CreateTemplateRequest, opts ...RequestOption) (*Template, error) {
	out := new(Template)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/templates", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// Get returns a template at its newest version, or at version when it is
// above 0 (getTemplate).
func (s *TemplatesService) Get(ctx context.Context, id string, version int) (*Template, error) {
	out := new(Template)
	q := url.Values{}
	if version > 0 {
		q.Set("version", strconv.Itoa(version))
	}
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/templates/" + pathEsc(id), query: q}, out, nil)
	return ret(out, err)
}

// Update stores a new version of a template (updateTemplate).
func (s *TemplatesService) Update(ctx context.Context, id string, req *UpdateTemplateRequest, opts ...RequestOption) (*Template, error) {
	out := new(Template)
	_, err := s.c.do(ctx, call{method: "PUT", path: "/v1/templates/" + pathEsc(id), body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// ListVersions returns one page of a template's versions (listTemplateVersions).
func (s *TemplatesService) ListVersions(ctx context.Context, id string, p *ListParams) (*Page[TemplateVersion], error) {
	return listPage[TemplateVersion](ctx, s.c, "/v1/templates/"+pathEsc(id)+"/versions", p.values())
}

// AllVersions walks every version of a template.
func (s *TemplatesService) AllVersions(ctx context.Context, id string, p *ListParams) iter.Seq2[TemplateVersion, error] {
	return items(pages[TemplateVersion](ctx, s.c, "/v1/templates/"+pathEsc(id)+"/versions", p.values()))
}

// Render renders a template with data (renderTemplate).
func (s *TemplatesService) Render(ctx context.Context, id string, req *RenderTemplateRequest, opts ...RequestOption) (*RenderedTemplate, error) {
	out := new(RenderedTemplate)
	if req == nil {
		req = &RenderTemplateRequest{}
	}
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/templates/" + pathEsc(id) + "/render", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// WebhooksService: /v1/webhooks.
type WebhooksService struct{ c *Client }

// List returns one page of webhooks (listWebhooks).
func (s *WebhooksService) List(ctx context.Context, p *ListParams) (*Page[Webhook], error) {
	return listPage[Webhook](ctx, s.c, "/v1/webhooks", p.values())
}

// Pages walks the pages of webhooks.
func (s *WebhooksService) Pages(ctx context.Context, p *ListParams) iter.Seq2[*Page[Webhook], error] {
	return pages[Webhook](ctx, s.c, "/v1/webhooks", p.values())
}

// All walks every webhook.
func (s *WebhooksService) All(ctx context.Context, p *ListParams) iter.Seq2[Webhook, error] {
	return items(s.Pages(ctx, p))
}

// Create creates a webhook; the answer's Secret is shown once (createWebhook).
func (s *WebhooksService) Create(ctx context.Context, req *CreateWebhookRequest, opts ...RequestOption) (*Webhook, error) {
	out := new(Webhook)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/webhooks", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// Get returns one webhook (getWebhook).
func (s *WebhooksService) Get(ctx context.Context, id string) (*Webhook, error) {
	out := new(Webhook)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/webhooks/" + pathEsc(id)}, out, nil)
	return ret(out, err)
}

// Update changes a webhook's URL, events, description or enabled flag; the
// secret is kept (updateWebhook).
func (s *WebhooksService) Update(ctx context.Context, id string, req *UpdateWebhookRequest, opts ...RequestOption) (*Webhook, error) {
	out := new(Webhook)
	_, err := s.c.do(ctx, call{method: "PATCH", path: "/v1/webhooks/" + pathEsc(id), body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// Test sends a signed webhook.test event to the webhook now and returns
// what the receiver answered (testWebhook). An unreachable receiver is in
// the result (StatusCode nil, Error set), not an error.
func (s *WebhooksService) Test(ctx context.Context, id string, opts ...RequestOption) (*WebhookTestResult, error) {
	out := new(WebhookTestResult)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/webhooks/" + pathEsc(id) + "/test", body: struct{}{}, idempotent: true}, out, opts)
	return ret(out, err)
}

// Delete deletes a webhook (deleteWebhook).
func (s *WebhooksService) Delete(ctx context.Context, id string, opts ...RequestOption) (*Response, error) {
	return s.c.do(ctx, call{method: "DELETE", path: "/v1/webhooks/" + pathEsc(id), idempotent: true}, nil, opts)
}

// RotateSecret gives the webhook a new secret; the old one stays valid for a
// transition window (rotateWebhookSecret).
func (s *WebhooksService) RotateSecret(ctx context.Context, id string, opts ...RequestOption) (*Webhook, error) {
	out := new(Webhook)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/webhooks/" + pathEsc(id) + "/rotate-secret", body: struct{}{}, idempotent: true}, out, opts)
	return ret(out, err)
}

// ListDeliveries returns one page of a webhook's deliveries (listWebhookDeliveries).
func (s *WebhooksService) ListDeliveries(ctx context.Context, id string, p *ListDeliveriesParams) (*Page[Delivery], error) {
	return listPage[Delivery](ctx, s.c, "/v1/webhooks/"+pathEsc(id)+"/deliveries", p.values())
}

// AllDeliveries walks every delivery of a webhook.
func (s *WebhooksService) AllDeliveries(ctx context.Context, id string, p *ListDeliveriesParams) iter.Seq2[Delivery, error] {
	return items(pages[Delivery](ctx, s.c, "/v1/webhooks/"+pathEsc(id)+"/deliveries", p.values()))
}

// ReplayEvent queues a failed event for redelivery (replayWebhookEvent).
func (s *WebhooksService) ReplayEvent(ctx context.Context, webhookID, eventID string, opts ...RequestOption) (*Response, error) {
	return s.c.do(ctx, call{method: "POST", path: "/v1/webhooks/" + pathEsc(webhookID) + "/events/" + pathEsc(eventID) + "/replay", body: struct{}{}, idempotent: true}, nil, opts)
}

// TeamService: /v1/team.
type TeamService struct{ c *Client }

// List returns one page of team members (listTeam).
func (s *TeamService) List(ctx context.Context, p *ListParams) (*Page[TeamMember], error) {
	return listPage[TeamMember](ctx, s.c, "/v1/team", p.values())
}

// Pages walks the pages of team members.
func (s *TeamService) Pages(ctx context.Context, p *ListParams) iter.Seq2[*Page[TeamMember], error] {
	return pages[TeamMember](ctx, s.c, "/v1/team", p.values())
}

// All walks every team member.
func (s *TeamService) All(ctx context.Context, p *ListParams) iter.Seq2[TeamMember, error] {
	return items(s.Pages(ctx, p))
}

// Invite invites a member (inviteTeamMember).
func (s *TeamService) Invite(ctx context.Context, req *InviteRequest, opts ...RequestOption) (*Invitation, error) {
	out := new(Invitation)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/team/invite", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// AnalyticsService: /v1/analytics.
type AnalyticsService struct{ c *Client }

// Summary returns the analytics summary; p may be nil (getAnalyticsSummary).
func (s *AnalyticsService) Summary(ctx context.Context, p *AnalyticsParams) (*AnalyticsSummary, error) {
	q := url.Values{}
	if p != nil {
		setNonEmpty(q, "from", p.From)
		setNonEmpty(q, "to", p.To)
		setNonEmpty(q, "campaign_id", p.CampaignID)
		setNonEmpty(q, "domain", p.Domain)
		setNonEmpty(q, "stream", p.Stream)
	}
	out := new(AnalyticsSummary)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/analytics/summary", query: q}, out, nil)
	return ret(out, err)
}

// IPsService: /v1/ips.
type IPsService struct{ c *Client }

// List returns every dedicated IP of the account (listIps).
func (s *IPsService) List(ctx context.Context) (*IPList, error) {
	out := new(IPList)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/ips"}, out, nil)
	return ret(out, err)
}

// ListPools returns the pools the account may send through (listIpPools).
func (s *IPsService) ListPools(ctx context.Context) (*IPPoolList, error) {
	out := new(IPPoolList)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/ips/pools"}, out, nil)
	return ret(out, err)
}

// GraderService: /v1/grader.
type GraderService struct{ c *Client }

// Check runs the public domain-only check; it sends no API key (graderCheck).
func (s *GraderService) Check(ctx context.Context, req *GraderCheckRequest) (*GraderResult, error) {
	out := new(GraderResult)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/grader/check", body: req, noAuth: true}, out, nil)
	return ret(out, err)
}

// Submit analyses a full email and stores the result (graderSubmit).
func (s *GraderService) Submit(ctx context.Context, req *GraderSubmitRequest, opts ...RequestOption) (*GraderResult, error) {
	out := new(GraderResult)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/grader/submit", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// Result returns a stored result (graderResult).
func (s *GraderService) Result(ctx context.Context, id string) (*GraderResult, error) {
	out := new(GraderResult)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/grader/results/" + pathEsc(id)}, out, nil)
	return ret(out, err)
}

// History returns one page of recent results; page and perPage of 0 leave
// the server's defaults (graderHistory).
func (s *GraderService) History(ctx context.Context, page, perPage int) (*GraderHistory, error) {
	q := url.Values{}
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if perPage > 0 {
		q.Set("per_page", strconv.Itoa(perPage))
	}
	out := new(GraderHistory)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/grader/history", query: q}, out, nil)
	return ret(out, err)
}

// ret drops the half-filled result of a failed call.
func ret[T any](out *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}
