package mailbolt

import (
	"context"
	"iter"
	"time"
)

// InboundRecord is a DNS record an inbound domain publishes, with what the
// last check found.
type InboundRecord struct {
	Type     string   `json:"type"`
	Name     string   `json:"name"`
	Value    string   `json:"value"`
	Priority int      `json:"priority,omitempty"`
	Purpose  string   `json:"purpose"`
	Status   string   `json:"status"`
	Found    []string `json:"found"`
}

// InboundDomain is a domain the account receives mail for.
type InboundDomain struct {
	Response      `json:"-"`
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Status        string          `json:"status"`
	Records       []InboundRecord `json:"records"`
	CreatedAt     time.Time       `json:"created_at"`
	VerifiedAt    *time.Time      `json:"verified_at"`
	LastCheckedAt *time.Time      `json:"last_checked_at"`
	CheckError    *string         `json:"check_error"`
}

// InboundRoute sends mail for a local part (or "*") of an inbound domain
// to a webhook.
type InboundRoute struct {
	Response  `json:"-"`
	ID        string    `json:"id"`
	DomainID  string    `json:"domain_id"`
	Pattern   string    `json:"pattern"`
	WebhookID string    `json:"webhook_id"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateInboundRouteRequest adds a route.
type CreateInboundRouteRequest struct {
	DomainID  string `json:"domain_id"`
	Pattern   string `json:"pattern"`
	WebhookID string `json:"webhook_id"`
}

// InboundService: /v1/inbound (docs/inbound.md).
type InboundService struct{ c *Client }

// ListDomains returns one page of inbound domains (listInboundDomains).
func (s *InboundService) ListDomains(ctx context.Context, p *ListParams) (*Page[InboundDomain], error) {
	return listPage[InboundDomain](ctx, s.c, "/v1/inbound/domains", p.values())
}

// DomainPages walks the pages of inbound domains.
func (s *InboundService) DomainPages(ctx context.Context, p *ListParams) iter.Seq2[*Page[InboundDomain], error] {
	return pages[InboundDomain](ctx, s.c, "/v1/inbound/domains", p.values())
}

// CreateDomain adds an inbound domain; the answer names the MX and TXT
// records to publish (createInboundDomain).
func (s *InboundService) CreateDomain(ctx context.Context, name string, opts ...RequestOption) (*InboundDomain, error) {
	out := new(InboundDomain)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/inbound/domains", body: map[string]string{"name": name}, idempotent: true}, out, opts)
	return ret(out, err)
}

// GetDomain returns one inbound domain (getInboundDomain).
func (s *InboundService) GetDomain(ctx context.Context, id string) (*InboundDomain, error) {
	out := new(InboundDomain)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/inbound/domains/" + pathEsc(id)}, out, nil)
	return ret(out, err)
}

// DeleteDomain deletes an inbound domain and its routes (deleteInboundDomain).
func (s *InboundService) DeleteDomain(ctx context.Context, id string, opts ...RequestOption) (*Response, error) {
	return s.c.do(ctx, call{method: "DELETE", path: "/v1/inbound/domains/" + pathEsc(id), idempotent: true}, nil, opts)
}

// VerifyDomain looks up the MX and ownership records now (verifyInboundDomain).
func (s *InboundService) VerifyDomain(ctx context.Context, id string, opts ...RequestOption) (*InboundDomain, error) {
	out := new(InboundDomain)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/inbound/domains/" + pathEsc(id) + "/verify", idempotent: true}, out, opts)
	return ret(out, err)
}

// ListRoutes returns one page of inbound routes (listInboundRoutes).
func (s *InboundService) ListRoutes(ctx context.Context, p *ListParams) (*Page[InboundRoute], error) {
	return listPage[InboundRoute](ctx, s.c, "/v1/inbound/routes", p.values())
}

// CreateRoute adds a route (createInboundRoute).
func (s *InboundService) CreateRoute(ctx context.Context, req *CreateInboundRouteRequest, opts ...RequestOption) (*InboundRoute, error) {
	out := new(InboundRoute)
	_, err := s.c.do(ctx, call{method: "POST", path: "/v1/inbound/routes", body: req, idempotent: true}, out, opts)
	return ret(out, err)
}

// GetRoute returns one route (getInboundRoute).
func (s *InboundService) GetRoute(ctx context.Context, id string) (*InboundRoute, error) {
	out := new(InboundRoute)
	_, err := s.c.do(ctx, call{method: "GET", path: "/v1/inbound/routes/" + pathEsc(id)}, out, nil)
	return ret(out, err)
}

// DeleteRoute deletes a route (deleteInboundRoute).
func (s *InboundService) DeleteRoute(ctx context.Context, id string, opts ...RequestOption) (*Response, error) {
	return s.c.do(ctx, call{method: "DELETE", path: "/v1/inbound/routes/" + pathEsc(id), idempotent: true}, nil, opts)
}

// Raw returns a received message exactly as it arrived (message/rfc822)
// (getInboundRaw).
func (s *InboundService) Raw(ctx context.Context, id string) ([]byte, error) {
	var raw []byte
	if _, err := s.c.do(ctx, call{method: "GET", path: "/v1/inbound/messages/" + pathEsc(id) + "/raw"}, &raw, nil); err != nil {
		return nil, err
	}
	return raw, nil
}
