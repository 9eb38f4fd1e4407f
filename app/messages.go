package app

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/mail"
	"slices"
	"strings"
	"time"

	"mailbolt/mta/message"
	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// Message states, as the delivery queue defines them (mta/queue/state.go
// holds their transitions).
const (
	StatusScheduled  = queue.StatusScheduled
	StatusQueued     = queue.StatusQueued
	StatusSending    = queue.StatusSending
	StatusDeferred   = queue.StatusDeferred
	StatusDelivered  = queue.StatusDelivered
	StatusBounced    = queue.StatusBounced
	StatusFailed     = queue.StatusFailed
	StatusCancelled  = queue.StatusCancelled
	StatusSuppressed = queue.StatusSuppressed
)

// MessageStatuses lists every message state, for filters and the docs.
var MessageStatuses = queue.Statuses

// Limits on one message.
const (
	MaxRecipients    = 50
	MaxScheduleAhead = 30 * 24 * time.Hour
	MaxSubjectLen    = 998
	MaxTags          = 20
	MaxTagLen        = 64
	MaxCampaignIDLen = 128
	MaxMetadataBytes = 4096
	MaxHeaders       = 50
	MaxAttachments   = 20
)

// MessageInput is a message as the API receives it, before validation.
type MessageInput struct {
	From            string
	To, Cc, Bcc     []string
	ReplyTo         []string
	Subject         *string
	HTML, Text      *string
	Headers         map[string]string
	Attachments     []AttachmentInput
	TemplateID      string
	TemplateVersion int
	TemplateData    map[string]any
	SendAt          *time.Time
	CampaignID      string
	Metadata        json.RawMessage
	Tags            []string
	Tracking        *TrackingInput
	IPPool          string
	// Unsubscribe turns the List-Unsubscribe fields on or off; when nil
	// they are on for the broadcast stream only.
	Unsubscribe *bool
	// Stream is transactional (the default, when empty) or broadcast.
	Stream string
	// RequireTLS delivers only over verified TLS to servers that offer
	// REQUIRETLS, else bounces (RFC 8689).
	RequireTLS bool

	// raw is a message that arrived built (SMTP submission): set only by
	// SubmitMessage, never by the API. Its content is taken as it is.
	raw *rawInput
}

// AttachmentInput is one attachment as the API receives it: the content
// is base64 (standard alphabet, padding optional).
type AttachmentInput struct {
	Filename    string
	Content     string
	ContentType string
	ContentID   string
}

// TrackingInput turns open and click tracking on or off for one message.
type TrackingInput struct {
	Opens, Clicks *bool
}

// Accepted is the answer to one accepted message.
type Accepted struct {
	Message storage.Message
}

// prepared is a validated message ready to store, built for the wire.
type prepared struct {
	msg     storage.Message
	content storage.MessageContent
	raw     []byte
	links   []string // tracked links' targets, by index
}

// prepare validates one message and renders its template. It reads the
// store (domain, template, pool) but writes nothing.
func (a *App) prepare(p Principal, in MessageInput, now time.Time) (prepared, error) {
	var out prepared
	test := p.Test
	from, fromDomain, e := parseSender(in.From)
	if e != nil {
		return out, e
	}
	m := storage.Message{
		ID: NewID(), AccountID: p.Account.ID, Test: test, From: from, Domain: fromDomain,
		CreatedAt: now, CampaignID: in.CampaignID, IPPool: in.IPPool, RequireTLS: in.RequireTLS,
	}
	rcpts := map[string]bool{}
	for _, list := range []struct {
		field string
		in    []string
		out   *[]string
	}{{"to", in.To, &m.To}, {"cc", in.Cc, &m.Cc}, {"bcc", in.Bcc, &m.Bcc}} {
		for i, s := range list.in {
			field := fmt.Sprintf("%s[%d]", list.field, i)
			full, addr, e := parseAddress(field, s)
			if e != nil {
				return out, e
			}
			*list.out = append(*list.out, full)
			if !rcpts[addr] {
				rcpts[addr] = true
				m.Recipients = append(m.Recipients, storage.Recipient{Email: addr, Kind: list.field, Status: StatusQueued})
			}
		}
	}
	if len(in.To) == 0 && (in.raw == nil || len(m.Recipients) == 0) {
		return out, Validation("to", "is required: at least one recipient")
	}
	if n := len(in.To) + len(in.Cc) + len(in.Bcc); n > MaxRecipients {
		return out, Validation("to", fmt.Sprintf("at most %d recipients in to, cc and bcc together (got %d)", MaxRecipients, n))
	}
	for i, s := range in.ReplyTo {
		full, _, e := parseAddress(fmt.Sprintf("reply_to[%d]", i), s)
		if e != nil {
			return out, e
		}
		m.ReplyTo = append(m.ReplyTo, full)
	}
	if e := checkLabels(in); e != nil {
		return out, e
	}
	m.Tags = in.Tags
	if len(in.Metadata) > 0 {
		m.Metadata = in.Metadata
	}
	m.Tracking = storage.Tracking{Opens: p.Account.TrackOpens, Clicks: p.Account.TrackClicks}
	if in.Tracking != nil && in.Tracking.Opens != nil {
		m.Tracking.Opens = *in.Tracking.Opens
	}
	if in.Tracking != nil && in.Tracking.Clicks != nil {
		m.Tracking.Clicks = *in.Tracking.Clicks
	}
	switch in.Stream {
	case "", storage.StreamTransactional:
		m.Stream = storage.StreamTransactional
	case storage.StreamBroadcast:
		m.Stream = storage.StreamBroadcast
	default:
		return out, Validation("stream", "must be one of "+strings.Join(storage.Streams, ", "))
	}
	m.ListUnsubscribe = m.Stream == storage.StreamBroadcast
	if in.Unsubscribe != nil {
		m.ListUnsubscribe = *in.Unsubscribe
	}
	var content storage.MessageContent
	var tref *storage.TemplateRef
	if in.raw != nil {
		content = in.raw.content()
	} else if content, tref, e = a.content(p.Account.ID, in); e != nil {
		return out, e
	}
	m.Template = tref
	m.Subject = content.Subject
	templated := tref != nil || in.TemplateData != nil
	size := contentSize(content)
	if in.raw != nil {
		size = int64(in.raw.size())
	}
	if size > a.opts.MaxMessageSize {
		return out, a.messageTooLarge(templated, size)
	}
	if in.SendAt != nil {
		at := in.SendAt.UTC()
		if at.After(now.Add(MaxScheduleAhead)) {
			return out, Validation("send_at", "must be at most 30 days ahead")
		}
		if at.After(now) {
			m.SendAt = &at
		}
	}
	_, err := a.db.ViewCached(p.readAt, func(tx *storage.Tx) error {
		if !test {
			if e := a.checkSendingDomain(tx, p.Account.ID, fromDomain); e != nil {
				return e
			}
		}
		if e := a.CheckPool(tx, p.Account.ID, in.IPPool); e != nil {
			return e
		}
		return nil
	})
	if err != nil {
		return out, storageErr(err, "domain")
	}
	m.HeaderID = "<" + m.ID + "@" + fromDomain + ">"
	if in.raw != nil {
		return a.prepareRaw(m, content, in.raw)
	}
	// Build it now, once: whatever cannot become a valid message is
	// refused here rather than found out at delivery, and delivery only
	// signs and sends the stored bytes.
	wire := content
	var links []string
	wire.HTML, links = a.track(m, content.HTML)
	raw, err := queue.Build(m, wire)
	if err != nil {
		return out, Validation("message", err.Error())
	}
	if int64(len(raw)) > a.opts.MaxMessageSize {
		return out, a.messageTooLarge(templated, int64(len(raw)))
	}
	for i := range content.Attachments {
		content.Attachments[i].Content = nil // kept in raw; the record keeps the size
	}
	return prepared{msg: m, content: content, raw: raw, links: links}, nil
}

// contentSize is what a message's content weighs before it is encoded:
// its built form is at least as large.
func contentSize(c storage.MessageContent) int64 {
	n := int64(len(c.Subject) + len(c.HTML) + len(c.Text))
	for _, at := range c.Attachments {
		n += int64(len(at.Content))
	}
	return n
}

// messageTooLarge refuses a message over --max-message-size: a templated
// one as its render's failure, any other as invalid input.
func (a *App) messageTooLarge(templated bool, size int64) error {
	limit := a.opts.MaxMessageSize
	if templated {
		return NewError(CodeTemplateRenderFailed, fmt.Sprintf("the rendered message is over the limit of %d bytes", limit)).
			With("part", "message").With("reason", ReasonOutputTooLarge).With("limit", limit)
	}
	return NewError(CodeValidation, fmt.Sprintf("the message is at least %d bytes as built, over the limit of %d bytes", size, limit)).
		With("field", "message").With("reason", ReasonMessageTooLarge).With("limit", limit)
}

// parseSender checks the from address and returns it with its domain.
func parseSender(s string) (full, domain string, e error) {
	if strings.TrimSpace(s) == "" {
		return "", "", Validation("from", "is required")
	}
	full, addr, e := parseAddress("from", s)
	if e != nil {
		return "", "", e
	}
	at := strings.LastIndexByte(addr, '@')
	domain, e = NormalizeDomain("from", addr[at+1:])
	if e != nil {
		return "", "", e
	}
	return full, domain, nil
}

// parseAddress parses one address, "Name <user@example.com>" or bare,
// with net/mail; it returns the normalised full form (the name and the
// local part as given, the domain in lower-case A-labels as the header
// will carry it) and the address in the form recipients are keyed,
// suppressed and de-duplicated by (storage.AddressKey).
func parseAddress(field, s string) (full, addr string, e error) {
	if strings.ContainsAny(s, "\r\n\x00") {
		return "", "", Validation(field, "must not contain CR, LF or NUL")
	}
	if len(s) > 320 {
		return "", "", Validation(field, "must be at most 320 characters")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", "", Validation(field, fmt.Sprintf("%q is not a valid email address", s))
	}
	if len(a.Address) > 254 || !strings.Contains(a.Address, "@") {
		return "", "", Validation(field, fmt.Sprintf("%q is not a valid email address", s))
	}
	key, err := storage.AddressKey(a.Address)
	if err != nil {
		return "", "", Validation(field, fmt.Sprintf("%q: %v", s, err))
	}
	if len(key) > 254 {
		return "", "", Validation(field, fmt.Sprintf("%q is longer than 254 characters with its domain in A-labels", s))
	}
	full = a.Address[:strings.LastIndexByte(a.Address, '@')] + key[strings.LastIndexByte(key, '@'):]
	if a.Name != "" {
		full = displayName(a.Name) + " <" + full + ">"
	}
	return full, key, nil
}

// displayName writes a display name as typed when it is a plain phrase of
// ASCII atoms, else as a quoted string (Build RFC 2047-encodes non-ASCII).
func displayName(name string) string {
	plain := true
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ' ' || r > 0x7f ||
			strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r)) {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
}

// checkLabels validates the campaign id, tags and metadata.
func checkLabels(in MessageInput) error {
	if len(in.CampaignID) > MaxCampaignIDLen || headerTextProblem(in.CampaignID) {
		return Validation("campaign_id", fmt.Sprintf("must be at most %d printable characters", MaxCampaignIDLen))
	}
	if len(in.Tags) > MaxTags {
		return Validation("tags", fmt.Sprintf("at most %d tags", MaxTags))
	}
	for i, t := range in.Tags {
		if t == "" || len(t) > MaxTagLen || headerTextProblem(t) {
			return Validation(fmt.Sprintf("tags[%d]", i), fmt.Sprintf("must be 1 to %d printable characters", MaxTagLen))
		}
	}
	if len(in.Metadata) > 0 {
		if len(in.Metadata) > MaxMetadataBytes {
			return Validation("metadata", fmt.Sprintf("must be at most %d bytes of JSON", MaxMetadataBytes))
		}
		var obj map[string]any
		err := json.Unmarshal(in.Metadata, &obj)
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") {
			// An object whose number is beyond float64 (1e400): say so,
			// as the API's decoder does for JSON bodies (it names the
			// member too; encoding/json does not for a map).
			return Validation("metadata", "number out of range")
		}
		if err != nil || obj == nil {
			return Validation("metadata", "must be a JSON object")
		}
		if path, found := RepeatedName(in.Metadata); found {
			// encoding/json keeps the last value: the first would be lost.
			return Validation("metadata."+path, "appears more than once")
		}
	}
	if len(in.IPPool) > 64 {
		return Validation("ip_pool", "must be at most 64 characters")
	}
	return nil
}

func headerTextProblem(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// content renders the message's subject and bodies (from a stored
// template, an inline one, or as given) and decodes its attachments.
func (a *App) content(accountID string, in MessageInput) (storage.MessageContent, *storage.TemplateRef, error) {
	var c storage.MessageContent
	var ref *storage.TemplateRef
	switch {
	case in.TemplateID != "":
		t, v, e := a.template(accountID, in.TemplateID, in.TemplateVersion)
		if e != nil {
			if HasCode(e, CodeNotFound) {
				e = NewError(CodeInvalidTemplate, AsError(e).Message).With("field", "template_id")
			}
			return c, nil, e
		}
		r, e := render(v, in.TemplateData, a.renderLimits())
		if e != nil {
			return c, nil, e
		}
		c.Subject, c.HTML, c.Text = r.Subject, r.HTML, r.Text
		ref = &storage.TemplateRef{ID: t.ID, Version: v.Version} // the id, also when given its alias
	case in.TemplateVersion != 0:
		return c, nil, Validation("template_version", "needs template_id")
	case in.TemplateData != nil:
		// An inline template: subject, html and text are Mustache sources.
		v := storage.TemplateVersion{Subject: derefStr(in.Subject), HTML: derefStr(in.HTML), Text: derefStr(in.Text)}
		r, e := render(v, in.TemplateData, a.renderLimits())
		if e != nil {
			if HasCode(e, CodeInvalidTemplate) {
				// The part is the request's own field: name it, so that a
				// batch places it as it places every other error.
				pe := AsError(e)
				pe.With("field", pe.Details["part"])
			}
			return c, nil, e
		}
		c.Subject, c.HTML, c.Text = r.Subject, r.HTML, r.Text
		in.Subject, in.HTML, in.Text = nil, nil, nil
	}
	// Fields given with a stored template override its parts.
	if in.Subject != nil {
		c.Subject = *in.Subject
	}
	if in.HTML != nil {
		c.HTML = *in.HTML
	}
	if in.Text != nil {
		c.Text = *in.Text
	}
	if strings.ContainsAny(c.Subject, "\r\n\x00") {
		return c, nil, Validation("subject", "must not contain CR, LF or NUL")
	}
	if strings.TrimSpace(c.Subject) == "" {
		return c, nil, Validation("subject", "is required")
	}
	if len(c.Subject) > MaxSubjectLen {
		return c, nil, Validation("subject", fmt.Sprintf("must be at most %d bytes", MaxSubjectLen))
	}
	if c.HTML == "" && c.Text == "" {
		return c, nil, Validation("html", "a message needs html, text or a template that renders one of them")
	}
	if len(in.Headers) > MaxHeaders {
		return c, nil, Validation("headers", fmt.Sprintf("at most %d headers", MaxHeaders))
	}
	for _, name := range slices.Sorted(maps.Keys(in.Headers)) {
		if err := message.ValidateHeader(name, in.Headers[name]); err != nil {
			return c, nil, Validation("headers."+name, err.Error())
		}
		c.Headers = append(c.Headers, [2]string{name, in.Headers[name]})
	}
	if len(in.Attachments) > MaxAttachments {
		return c, nil, Validation("attachments", fmt.Sprintf("at most %d attachments", MaxAttachments))
	}
	for i, at := range in.Attachments {
		field := fmt.Sprintf("attachments[%d]", i)
		if strings.TrimSpace(at.Filename) == "" {
			return c, nil, Validation(field+".filename", "is required")
		}
		data, err := decodeBase64(at.Content)
		if err != nil {
			return c, nil, Validation(field+".content", "must be base64")
		}
		c.Attachments = append(c.Attachments, storage.MessageAttachment{Filename: at.Filename,
			ContentType: at.ContentType, Size: len(data), Content: data, ContentID: at.ContentID})
	}
	return c, ref, nil
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// SendMessage validates and stores one message. It answers only after the
// message, its queue entry and its message.sent event are committed.
func (a *App) SendMessage(p Principal, in MessageInput) (storage.Message, error) {
	adaptAnswer(p, func(list []storage.Message) any { return list[0] })
	out, e := a.SendBatch(p, []MessageInput{in}, false)
	if e != nil {
		return storage.Message{}, e
	}
	return out[0], nil
}

// SendBatch validates every message first and stores all of them in one
// transaction, or none: a failure names the item in details.index.
func (a *App) SendBatch(p Principal, ins []MessageInput, batch bool) ([]storage.Message, error) {
	list, sent, err := a.prepareBatch(p, ins, batch)
	if err != nil {
		return nil, err
	}
	a.db.Warm(func(tx *storage.Tx) {
		for i := range list {
			queue.WarmFile(tx, &list[i].msg)
		}
	})
	var out []storage.Message
	err = update(a, p, noAudit, &out, func(tx *storage.Tx) error {
		var err error
		out, err = fileBatch(tx, list, sent)
		return err
	})
	if err != nil {
		return nil, storageErr(err, "message")
	}
	return out, nil
}

// CheckBatchSize refuses a batch of n messages that p's plan does not
// take: none, or more than the plan's batch size. details.limit is the
// plan's batch size, for an empty batch too: the range a client must keep
// to. The web layer asks before it decodes the messages, so an oversized
// batch is not decoded whole first.
func CheckBatchSize(p Principal, n int) error {
	limit := Limits(p.Account).BatchSize
	if n == 0 {
		return Validation("messages",
			fmt.Sprintf("must hold at least one message (and at most %d on the %s plan)", limit, p.Account.Plan)).With("limit", limit)
	}
	if n > limit {
		return Validation("messages",
			fmt.Sprintf("must hold at most %d messages on the %s plan (got %d)", limit, p.Account.Plan, n)).With("limit", limit)
	}
	return nil
}

// prepareBatch authorizes p, validates and builds every message and
// accepts it for the queue (its message.sent event): all the work of a
// send that needs no transaction.
func (a *App) prepareBatch(p Principal, ins []MessageInput, batch bool) ([]prepared, []storage.Event, error) {
	if err := a.authorize(p, ScopeMessagesWrite); err != nil {
		return nil, nil, err
	}
	if batch {
		if err := CheckBatchSize(p, len(ins)); err != nil {
			return nil, nil, err
		}
	}
	now := a.Now()
	list := make([]prepared, len(ins))
	for i, in := range ins {
		pm, err := a.prepare(p, in, now)
		if err != nil {
			if batch {
				return nil, nil, AsError(err).Within(fmt.Sprintf("messages[%d].", i)).With("index", i)
			}
			return nil, nil, err
		}
		list[i] = pm
	}
	keep := a.opts.MessageRetention + a.queue.Options().QueueLifetime
	sent := make([]storage.Event, len(list))
	for i := range list {
		m := &list[i].msg
		m.ExpiresAt = now.Add(keep)
		if m.SendAt != nil {
			m.ExpiresAt = m.SendAt.Add(keep)
		}
		var err error
		if sent[i], err = a.queue.Accept(m, now); err != nil {
			return nil, nil, Internal(err)
		}
	}
	return list, sent, nil
}

// fileBatch stores prepared messages in tx: their queue entries and
// events (queue.File), the messages and their tracked links. It may run
// more than once for one transaction (group commit re-runs it), so it
// starts afresh each time and changes only tx.
func fileBatch(tx *storage.Tx, list []prepared, sent []storage.Event) ([]storage.Message, error) {
	out := make([]storage.Message, 0, len(list))
	for i := range list {
		m := list[i].msg
		m.Recipients = slices.Clone(m.Recipients)
		if err := queue.File(tx, &m, sent[i]); err != nil {
			return nil, err
		}
		if err := tx.InsertMessage(m, list[i].content, list[i].raw); err != nil {
			return nil, err
		}
		if err := tx.PutLinks(m.ID, list[i].links); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
