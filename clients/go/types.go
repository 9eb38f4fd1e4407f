package mailbolt

import (
	"encoding/json"
	"time"
)

// Records tolerate unknown fields (spec §9: new optional fields may appear
// within v1). Nullable times are *time.Time.

// Limits are an account's limits.
type Limits struct {
	RequestsPerSecond int `json:"requests_per_second"`
	BatchSize         int `json:"batch_size"`
	DedicatedIPs      int `json:"dedicated_ips"`
}

// Account is the calling key's account.
type Account struct {
	Response  `json:"-"`
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	Email     string    `json:"email,omitempty"`
	Limits    Limits    `json:"limits"`
	CreatedAt time.Time `json:"created_at"`
}

// Attachment is a file attached to a message; Content is standard Base64.
type Attachment struct {
	Filename    string `json:"filename"`
	Content     string `json:"content,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	ContentID   string `json:"content_id,omitempty"`
}

// Tracking turns open and click tracking on or off for one message; nil
// takes the account's default.
type Tracking struct {
	Opens  *bool `json:"opens,omitempty"`
	Clicks *bool `json:"clicks,omitempty"`
}

// SendMessageRequest is one message to send. From and To are required; a
// message needs HTML or Text unless a template supplies them.
type SendMessageRequest struct {
	From            string            `json:"from"`
	To              []string          `json:"to"`
	Cc              []string          `json:"cc,omitempty"`
	Bcc             []string          `json:"bcc,omitempty"`
	ReplyTo         []string          `json:"reply_to,omitempty"`
	Subject         string            `json:"subject,omitempty"`
	HTML            string            `json:"html,omitempty"`
	Text            string            `json:"text,omitempty"`
	Headers         map[string]string `json:"headers,omitempty"`
	Attachments     []Attachment      `json:"attachments,omitempty"`
	TemplateID      string            `json:"template_id,omitempty"`
	TemplateVersion int               `json:"template_version,omitempty"`
	TemplateData    map[string]any    `json:"template_data,omitempty"`
	SendAt          *time.Time        `json:"send_at,omitempty"`
	CampaignID      string            `json:"campaign_id,omitempty"`
	Metadata        map[string]any    `json:"metadata,omitempty"`
	Tags            []string          `json:"tags,omitempty"`
	Tracking        *Tracking         `json:"tracking,omitempty"`
	IPPool          string            `json:"ip_pool,omitempty"`
	// Stream is transactional (the default when empty) or broadcast.
	Stream string `json:"stream,omitempty"`
	// Unsubscribe: nil leaves the default (true for broadcast, false for
	// transactional).
	Unsubscribe *bool `json:"unsubscribe,omitempty"`
	// RequireTLS (RFC 8689 REQUIRETLS) delivers only over verified TLS to
	// servers that advertise REQUIRETLS; otherwise the recipient bounces
	// with 5.7.30.
	RequireTLS bool `json:"require_tls,omitempty"`
}

// AcceptedMessage is the answer to a send: status is queued, scheduled or suppressed.
type AcceptedMessage struct {
	Response        `json:"-"`
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	MessageIDHeader string     `json:"message_id_header"`
	CreatedAt       time.Time  `json:"created_at"`
	SendAt          *time.Time `json:"send_at,omitempty"`
}

// BatchResult is the answer to a batch send, in the order of the request.
type BatchResult struct {
	Response `json:"-"`
	Data     []AcceptedMessage `json:"data"`
}

// SMTPResponse is an SMTP reply.
type SMTPResponse struct {
	Code         int    `json:"code"`
	EnhancedCode string `json:"enhanced_code"`
	Message      string `json:"message"`
}

// MessageRecipient is one recipient's delivery state.
type MessageRecipient struct {
	Email         string        `json:"email"`
	Type          string        `json:"type"`
	Status        string        `json:"status"`
	Attempts      int           `json:"attempts"`
	LastAttemptAt *time.Time    `json:"last_attempt_at"`
	NextAttemptAt *time.Time    `json:"next_attempt_at"`
	LastResponse  *SMTPResponse `json:"last_response"`
	MX            string        `json:"mx,omitempty"`
	SourceIP      string        `json:"source_ip,omitempty"`
	TLS           bool          `json:"tls"`
	// TLSDetails is the last attempt's TLS session; nil before an attempt
	// reached a server.
	TLSDetails     *RecipientTLS `json:"tls_details,omitempty"`
	BounceType     string        `json:"bounce_type,omitempty"`
	BounceCategory string        `json:"bounce_category,omitempty"`
	DeliveredAt    *time.Time    `json:"delivered_at"`
	BouncedAt      *time.Time    `json:"bounced_at"`
}

// RecipientTLS is the TLS session of a recipient's last attempt.
type RecipientTLS struct {
	Version  string `json:"version,omitempty"` // "TLS 1.3"; empty in cleartext
	Verified bool   `json:"verified"`          // the certificate was verified (for the MX name, or by DANE)
	Policy   string `json:"policy,omitempty"`  // none, mta-sts or dane; empty through a relay
}

// Message is a message's record (in lists without Content).
type Message struct {
	Response        `json:"-"`
	ID              string              `json:"id"`
	Status          string              `json:"status"`
	Mode            string              `json:"mode"`
	MessageIDHeader string              `json:"message_id_header"`
	From            string              `json:"from"`
	To              []string            `json:"to"`
	Cc              []string            `json:"cc"`
	Bcc             []string            `json:"bcc"`
	ReplyTo         []string            `json:"reply_to"`
	Subject         string              `json:"subject"`
	CampaignID      *string             `json:"campaign_id,omitempty"`
	Tags            []string            `json:"tags"`
	Metadata        map[string]any      `json:"metadata"`
	Template        *MessageTemplateRef `json:"template"`
	Tracking        MessageTracking     `json:"tracking"`
	IPPool          *string             `json:"ip_pool,omitempty"`
	Stream          string              `json:"stream"`
	RequireTLS      bool                `json:"require_tls,omitempty"`
	Recipients      []MessageRecipient  `json:"recipients"`
	CreatedAt       time.Time           `json:"created_at"`
	SendAt          *time.Time          `json:"send_at"`
	QueuedAt        *time.Time          `json:"queued_at"`
	CompletedAt     *time.Time          `json:"completed_at"`
	CancelledAt     *time.Time          `json:"cancelled_at,omitempty"`
	// Content is present on a single message (Messages.Get), not in lists.
	Content *MessageContent `json:"content,omitempty"`
}

// MessageTemplateRef names the stored template a message was made from.
type MessageTemplateRef struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// MessageTracking is whether opens and clicks are tracked.
type MessageTracking struct {
	Opens  bool `json:"opens"`
	Clicks bool `json:"clicks"`
}

// MessageContent is a message's body as stored.
type MessageContent struct {
	HTML        *string           `json:"html"`
	Text        *string           `json:"text"`
	Headers     map[string]string `json:"headers"`
	Attachments []struct {
		Filename    string `json:"filename"`
		ContentType string `json:"content_type"`
		Size        int    `json:"size"`
		ContentID   string `json:"content_id,omitempty"`
	} `json:"attachments"`
}

// Event is an event in the webhook envelope; Data depends on Event.
type Event struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// APIKey is an API key's record (never its secret).
type APIKey struct {
	Response   `json:"-"`
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Mode       string     `json:"mode"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// CreatedBy is who made the key: a team member's email, the id of the
	// key it was made with, or "operator"; nil when not recorded.
	CreatedBy *string `json:"created_by"`
	// Key is the secret, present only in the answer to Create.
	Key string `json:"key,omitempty"`
}

// CreateAPIKeyRequest creates a key. Mode is live or test (default: the caller's).
type CreateAPIKeyRequest struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes,omitempty"`
	Mode      string     `json:"mode,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Suppression is a suppressed recipient.
type Suppression struct {
	Response        `json:"-"`
	Recipient       string    `json:"recipient"`
	Reason          string    `json:"reason"`
	Stream          string    `json:"stream,omitempty"` // empty: every stream
	SourceMessageID *string   `json:"source_message_id"`
	CreatedAt       time.Time `json:"created_at"`
}

// AddSuppressionRequest suppresses a recipient. Reason: hard_bounce,
// complaint, unsubscribe or manual (default).
type AddSuppressionRequest struct {
	Recipient string `json:"recipient"`
	Reason    string `json:"reason,omitempty"`
	Stream    string `json:"stream,omitempty"` // transactional or broadcast; empty: every stream
}

// ImportSuppressionsResult is what an import did: rows added, and rows
// whose recipient already had an entry for the same stream.
type ImportSuppressionsResult struct {
	Response       `json:"-"`
	Added          int `json:"added"`
	AlreadyPresent int `json:"already_present"`
}

// DNSRecord is a DNS record a domain needs.
type DNSRecord struct {
	Type           string     `json:"type"`
	Name           string     `json:"name"`
	Value          string     `json:"value"`
	Purpose        string     `json:"purpose"`
	Required       bool       `json:"required"`
	Status         string     `json:"status"`
	Found          []string   `json:"found"`
	Error          *string    `json:"error"`
	Selector       string     `json:"selector,omitempty"`
	Active         *bool      `json:"active,omitempty"`
	RemovableAfter *time.Time `json:"removable_after,omitempty"`
}

// Domain is a sending domain.
type Domain struct {
	Response      `json:"-"`
	ID            string      `json:"id"`
	Name          string      `json:"name"`
	Status        string      `json:"status"`
	StatusReason  *string     `json:"status_reason"`
	DKIMAlgorithm string      `json:"dkim_algorithm"`
	DKIMSelector  string      `json:"dkim_selector"`
	Records       []DNSRecord `json:"records"`
	CreatedAt     time.Time   `json:"created_at"`
	VerifiedAt    *time.Time  `json:"verified_at"`
	LastCheckedAt *time.Time  `json:"last_checked_at"`
	CheckError    *string     `json:"check_error"`
	NextCheckAt   *time.Time  `json:"next_check_at"`
}

// CreateDomainRequest adds a domain; DKIMAlgorithm is optional.
type CreateDomainRequest struct {
	Name          string `json:"name"`
	DKIMAlgorithm string `json:"dkim_algorithm,omitempty"`
}

// RotateDKIMRequest picks the new key's algorithm (optional).
type RotateDKIMRequest struct {
	DKIMAlgorithm string `json:"dkim_algorithm,omitempty"`
}

// Template is a stored template (Subject, HTML and Text are nil in lists).
type Template struct {
	Response  `json:"-"`
	ID        string    `json:"id"`
	Alias     *string   `json:"alias,omitempty"` // nil when the template has none
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	Strict    bool      `json:"strict"`
	Subject   *string   `json:"subject,omitempty"`
	HTML      *string   `json:"html,omitempty"`
	Text      *string   `json:"text,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TemplateVersion is one stored version of a template.
type TemplateVersion struct {
	Version   int       `json:"version"`
	Name      string    `json:"name"`
	Strict    bool      `json:"strict"`
	Subject   string    `json:"subject"`
	HTML      *string   `json:"html"`
	Text      *string   `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateTemplateRequest creates a template (Mustache sources).
type CreateTemplateRequest struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	HTML    string `json:"html,omitempty"`
	Text    string `json:"text,omitempty"`
	Strict  *bool  `json:"strict,omitempty"`
	Alias   string `json:"alias,omitempty"` // optional; usable in place of the id
}

// UpdateTemplateRequest changes a template; nil fields stay as they are.
type UpdateTemplateRequest struct {
	Name    *string `json:"name,omitempty"`
	Subject *string `json:"subject,omitempty"`
	HTML    *string `json:"html,omitempty"`
	Text    *string `json:"text,omitempty"`
	Strict  *bool   `json:"strict,omitempty"`
	Alias   *string `json:"alias,omitempty"` // a pointer to "" removes the alias
}

// RenderTemplateRequest renders a template with data (Version 0: the newest).
type RenderTemplateRequest struct {
	Data    map[string]any `json:"data,omitempty"`
	Version int            `json:"version,omitempty"`
}

// RenderedTemplate is a template's rendered parts.
type RenderedTemplate struct {
	Response `json:"-"`
	Subject  string  `json:"subject"`
	HTML     *string `json:"html"`
	Text     *string `json:"text"`
	Version  int     `json:"version"`
}

// Webhook is a webhook subscription. Secret is present only in the answers
// to Create and RotateSecret.
type Webhook struct {
	Response                `json:"-"`
	ID                      string     `json:"id"`
	URL                     string     `json:"url"`
	Events                  []string   `json:"events"`
	Description             *string    `json:"description"`
	Mode                    string     `json:"mode"`
	Enabled                 bool       `json:"enabled"`
	CreatedAt               time.Time  `json:"created_at"`
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	Secret                  string     `json:"secret,omitempty"`
}

// UpdateWebhookRequest changes a webhook: fields left nil stay as they are.
type UpdateWebhookRequest struct {
	URL         *string  `json:"url,omitempty"`
	Events      []string `json:"events,omitempty"`
	Description *string  `json:"description,omitempty"`
	Enabled     *bool    `json:"enabled,omitempty"`
}

// WebhookTestResult is what a receiver answered to a webhook.test event.
type WebhookTestResult struct {
	Response   `json:"-"`
	EventID    string    `json:"event_id"`
	Event      string    `json:"event"`
	URL        string    `json:"url"`
	At         time.Time `json:"at"`
	Success    bool      `json:"success"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	LatencyMS  float64   `json:"latency_ms"`
	// Body is the first 1024 bytes of the receiver's answer ("response").
	Body string `json:"response"`
}

// CreateWebhookRequest creates a webhook.
type CreateWebhookRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
}

// DeliveryAttempt is one HTTP request to a webhook receiver.
type DeliveryAttempt struct {
	At         time.Time `json:"at"`
	StatusCode *int      `json:"status_code"`
	Error      *string   `json:"error"`
	LatencyMS  float64   `json:"latency_ms"`
	Response   string    `json:"response"`
}

// Delivery is the delivery of one event to one webhook.
type Delivery struct {
	ID            string            `json:"id"`
	WebhookID     string            `json:"webhook_id"`
	EventID       string            `json:"event_id"`
	Event         string            `json:"event"`
	Status        string            `json:"status"`
	Attempts      []DeliveryAttempt `json:"attempts"`
	CreatedAt     time.Time         `json:"created_at"`
	NextAttemptAt *time.Time        `json:"next_attempt_at"`
	DeliveredAt   *time.Time        `json:"delivered_at"`
	FailedAt      *time.Time        `json:"failed_at"`
}

// TeamMember is a member of the account's team.
type TeamMember struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Role       string     `json:"role"`
	Status     string     `json:"status"`
	InvitedAt  time.Time  `json:"invited_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
}

// AuditEntry is one change in the account's audit log: who made it
// (Actor, of kind ActorKind: session, person, api_key or operator), what
// (Action, on Target), from which client address (Source) and when.
type AuditEntry struct {
	ID        string    `json:"id"`
	Actor     string    `json:"actor"`
	ActorKind string    `json:"actor_kind"`
	Action    string    `json:"action"`
	Target    string    `json:"target"`
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"created_at"`
}

// Invitation is the answer to an invite.
type Invitation struct {
	Response `json:"-"`
	TeamMember
	AcceptToken string  `json:"accept_token"`
	AcceptURL   string  `json:"accept_url"`
	EmailStatus string  `json:"email_status"`
	MessageID   *string `json:"message_id,omitempty"`
}

// InviteRequest invites a member with a role.
type InviteRequest struct {
	Email string `json:"email"`
	Role  string `json:"role"`
}

// AnalyticsBounceCounts counts bounces by type.
type AnalyticsBounceCounts struct {
	Total int `json:"total"`
	Hard  int `json:"hard"`
	Soft  int `json:"soft"`
	Block int `json:"block"`
}

// AnalyticsCounts are event counters.
type AnalyticsCounts struct {
	Sent          int                   `json:"sent"`
	Delivered     int                   `json:"delivered"`
	Bounced       AnalyticsBounceCounts `json:"bounced"`
	Opened        int                   `json:"opened"`
	UniqueOpened  int                   `json:"unique_opened"`
	Clicked       int                   `json:"clicked"`
	UniqueClicked int                   `json:"unique_clicked"`
	Complained    int                   `json:"complained"`
	Unsubscribed  int                   `json:"unsubscribed"`
}

// AnalyticsDay is one day's counters.
type AnalyticsDay struct {
	Date string `json:"date"`
	AnalyticsCounts
}

// AnalyticsSummary is the summary of a window of whole UTC days.
type AnalyticsSummary struct {
	Response   `json:"-"`
	From       string             `json:"from"`
	To         string             `json:"to"`
	Mode       string             `json:"mode"`
	CampaignID *string            `json:"campaign_id"`
	Domain     *string            `json:"domain"`
	Stream     *string            `json:"stream"`
	Totals     AnalyticsCounts    `json:"totals"`
	Rates      map[string]float64 `json:"rates"`
	Daily      []AnalyticsDay     `json:"daily"`
}

// AnalyticsParams filters the summary: From and To are dates (YYYY-MM-DD).
type AnalyticsParams struct {
	From, To, CampaignID, Domain, Stream string
}

// IP is a dedicated IP address.
type IP struct {
	Address        string    `json:"address"`
	Hostname       string    `json:"hostname"`
	Pool           string    `json:"pool"`
	WarmupSchedule string    `json:"warmup_schedule"`
	WarmupDay      int       `json:"warmup_day"`
	WarmupDays     int       `json:"warmup_days"`
	Warming        bool      `json:"warming"`
	DailyCap       *int      `json:"daily_cap"`
	SentToday      int       `json:"sent_today"`
	AddedAt        time.Time `json:"added_at"`
}

// IPList is every dedicated IP of the account.
type IPList struct {
	Response `json:"-"`
	Data     []IP `json:"data"`
}

// IPPool is a pool of sending addresses.
type IPPool struct {
	Name      string   `json:"name"`
	Dedicated bool     `json:"dedicated"`
	Addresses []string `json:"addresses"`
}

// IPPoolList is every pool the account may send through.
type IPPoolList struct {
	Response `json:"-"`
	Data     []IPPool `json:"data"`
}

// GraderScore is one dimension's score.
type GraderScore struct {
	Score int `json:"score"`
	Max   int `json:"max"`
}

// GraderFinding is one finding of the grader.
type GraderFinding struct {
	Severity string `json:"severity"`
	Category string `json:"category"`
	Message  string `json:"message"`
}

// GraderResult is a deliverability check result; ID and CreatedAt are set
// on stored results.
type GraderResult struct {
	Response              `json:"-"`
	ID                    string                 `json:"id,omitempty"`
	CreatedAt             *time.Time             `json:"created_at,omitempty"`
	Domain                string                 `json:"domain"`
	Score                 int                    `json:"score"`
	Grade                 string                 `json:"grade"`
	Breakdown             map[string]GraderScore `json:"breakdown"`
	Findings              []GraderFinding        `json:"findings"`
	Recommendations       []string               `json:"recommendations"`
	AuthenticationResults map[string]any         `json:"authentication_results,omitempty"`
}

// GraderCheckRequest is the public domain-only check.
type GraderCheckRequest struct {
	Domain    string   `json:"domain"`
	Selectors []string `json:"selectors,omitempty"`
}

// GraderSubmitRequest is a full email for analysis.
type GraderSubmitRequest struct {
	From         string            `json:"from,omitempty"`
	To           []string          `json:"to,omitempty"`
	Subject      string            `json:"subject,omitempty"`
	BodyText     string            `json:"body_text,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Selectors    []string          `json:"selectors,omitempty"`
	SenderIP     string            `json:"sender_ip,omitempty"`
	HELOHostname string            `json:"helo_hostname,omitempty"`
	MailFrom     string            `json:"mail_from,omitempty"`
	Raw          string            `json:"raw,omitempty"`
}

// GraderHistoryItem is one entry of the grader history.
type GraderHistoryItem struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Domain    string    `json:"domain"`
	Score     int       `json:"score"`
	Grade     string    `json:"grade"`
}

// GraderHistory is one page of the grader history.
type GraderHistory struct {
	Response `json:"-"`
	Data     []GraderHistoryItem `json:"data"`
	Page     int                 `json:"page"`
	PerPage  int                 `json:"per_page"`
	Total    int                 `json:"total"`
}
