package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"mailbolt/app"
	"mailbolt/storage"
)

// addressList is a list of addresses that also accepts one string.
type addressList []string

func (l *addressList) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*l = nil // none
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = addressList{one}
		return nil
	}
	if jsonKind(b) != "array" {
		return app.Validation("", "must be an address or an array of addresses")
	}
	many, err := stringItems(b)
	if err != nil {
		return err
	}
	*l = many
	return nil
}

// tagList is the tags array, whose items are refused as null rather than
// taken as the "" encoding/json makes of null and refused by the tag rule.
type tagList []string

func (l *tagList) UnmarshalJSON(b []byte) error {
	switch kind := jsonKind(b); kind {
	case "null":
		*l = nil // none
		return nil
	case "array":
	default:
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[[]string]()}
	}
	items, err := stringItems(b)
	if err != nil {
		return err
	}
	*l = items
	return nil
}

// stringItems decodes b, a JSON array, as strings; an item that is null
// (encoding/json would make it "") or not a string is an error naming it
// by its index ("[1]"), which fieldError puts the field's name in front of.
func stringItems(b []byte) ([]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, err
	}
	many := make([]string, len(items))
	for i, item := range items {
		if string(item) == "null" {
			return nil, app.Validation(fmt.Sprintf("[%d]", i), "must not be null")
		}
		if err := json.Unmarshal(item, &many[i]); err != nil {
			return nil, app.Validation(fmt.Sprintf("[%d]", i), "must be of type string, not "+jsonKind(item))
		}
	}
	return many, nil
}

// templateDataField is the template_data object: free-form, but each name
// once in each of its objects, as everywhere in a request (encoding/json
// would keep the last value of a repeat and lose the first). Its numbers
// are json.Number, as written: a float64 would round an integer beyond
// 2^53 (12345678901234567890 would render as 12345678901234567000).
type templateDataField map[string]any

func (t *templateDataField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = nil
		return nil
	}
	if jsonKind(b) != "object" {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[map[string]any]()}
	}
	if err := checkNumbers(b); err != nil {
		return err // by its path; UseNumber below would take 1e400 as it is
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if path, found := app.RepeatedName(b); found {
		return app.Validation(path, "appears more than once")
	}
	*t = m
	return nil
}

// metadataField is the metadata object, kept as sent. app checks that it
// is an object of at most app.MaxMetadataBytes; a number in it too large
// for a float64 is refused here, by its path (metadata.a: number out of
// range), where app could only say that it is not an object.
type metadataField json.RawMessage

func (m *metadataField) UnmarshalJSON(b []byte) error {
	if len(b) <= app.MaxMetadataBytes {
		if err := checkNumbers(b); err != nil {
			return err
		}
	}
	*m = append((*m)[:0], b...)
	return nil
}

// headerFields is the headers object of a message and of a grader
// submission: name to value, each name once in any case (header names are
// case-insensitive: a repeat would silently lose a value, or send the
// field twice), each value a string.
type headerFields map[string]string

func (h *headerFields) UnmarshalJSON(b []byte) error {
	switch kind := jsonKind(b); kind {
	case "null":
		*h = nil
		return nil
	case "object":
	default:
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[map[string]string]()}
	}
	// The usual object (string values, each name once) decodes in one
	// pass; anything else is taken apart below to say what is wrong.
	var fast map[string]string
	// repeatedFold compares pairs: only for as many names as a message may
	// have; more go the linear way below (and are refused by the count).
	if n, strs := flatNames(b); strs && n <= app.MaxHeaders && json.Unmarshal(b, &fast) == nil && len(fast) == n && !repeatedFold(fast) {
		*h = fast
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return err
	}
	out := headerFields{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if _, repeated := out[name]; repeated {
			return app.Validation(name, "appears more than once")
		}
		if folded := strings.ToLower(name); seen[folded] {
			return app.Validation(name, "appears more than once (header names are case-insensitive)")
		} else {
			seen[folded] = true
		}
		var value string
		if string(raw) == "null" {
			return app.Validation(name, "must not be null")
		}
		if err := json.Unmarshal(raw, &value); err != nil {
			return app.Validation(name, "must be of type string, not "+jsonKind(raw))
		}
		out[name] = value
	}
	*h = out
	return nil
}

// flatNames counts the names of a JSON object whose values are strings:
// its colons outside strings (a repeated name is one count more than the
// decoded map's length). strs is false when something other than strings
// and punctuation stands outside them: a null (which would decode as ""),
// a number, a nested value.
func flatNames(b []byte) (n int, strs bool) {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == ':':
			n++
		case c == '{' && i == 0, c == '}', c == ',', c == ' ', c == '\t', c == '\n', c == '\r':
		default:
			return n, false
		}
	}
	return n, true
}

// repeatedFold reports whether two names of m differ in case alone. m has
// at most app.MaxHeaders names (the caller sees to it): comparing each
// pair costs less than building a set of lower-cased names.
func repeatedFold(m map[string]string) bool {
	var buf [64]string
	names := buf[:0]
	for k := range m {
		for _, o := range names {
			if strings.EqualFold(k, o) {
				return true
			}
		}
		names = append(names, k)
	}
	return false
}

type attachmentRequest struct {
	Filename    string `json:"filename"`
	Content     string `json:"content"`
	ContentType string `json:"content_type"`
	ContentID   string `json:"content_id"`
}

func (a *attachmentRequest) UnmarshalJSON(b []byte) error {
	type plain attachmentRequest
	return strictNested(b, (*plain)(a))
}

type trackingRequest struct {
	Opens  *bool `json:"opens"`
	Clicks *bool `json:"clicks"`
}

func (t *trackingRequest) UnmarshalJSON(b []byte) error {
	type plain trackingRequest
	return strictNested(b, (*plain)(t))
}

// strictNested decodes a nested object as strictly as a request body; the
// error names the inner field, and fieldError puts the outer one in front.
// A value that is not an object is the outer field's own error.
func strictNested(b []byte, v any) error {
	switch kind := jsonKind(b); kind {
	case "object":
	case "null":
		return app.Validation("", "must not be null")
	default:
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeOf(v).Elem()}
	}
	if e := decodePart(b, v); e != nil {
		return e
	}
	return nil
}

type messageRequest struct {
	From            string              `json:"from"`
	To              addressList         `json:"to"`
	Cc              addressList         `json:"cc"`
	Bcc             addressList         `json:"bcc"`
	ReplyTo         addressList         `json:"reply_to"`
	Subject         *string             `json:"subject"`
	HTML            *string             `json:"html"`
	Text            *string             `json:"text"`
	Headers         headerFields        `json:"headers"`
	Attachments     []attachmentRequest `json:"attachments"`
	TemplateID      string              `json:"template_id"`
	TemplateVersion int                 `json:"template_version"`
	TemplateData    templateDataField   `json:"template_data"`
	SendAt          *time.Time          `json:"send_at"`
	CampaignID      string              `json:"campaign_id"`
	Metadata        metadataField       `json:"metadata"`
	Tags            tagList             `json:"tags"`
	Tracking        *trackingRequest    `json:"tracking"`
	IPPool          string              `json:"ip_pool"`
	Unsubscribe     *bool               `json:"unsubscribe" null:"refuse"` // nil: the stream decides
	Stream          string              `json:"stream"`
	RequireTLS      bool                `json:"require_tls"`
}

func (m messageRequest) input() app.MessageInput {
	if string(m.Metadata) == "null" {
		m.Metadata = nil // an optional object: null is left out
	}
	in := app.MessageInput{From: m.From, To: m.To, Cc: m.Cc, Bcc: m.Bcc, ReplyTo: m.ReplyTo, Subject: m.Subject,
		HTML: m.HTML, Text: m.Text, Headers: m.Headers, TemplateID: m.TemplateID, TemplateVersion: m.TemplateVersion,
		TemplateData: m.TemplateData, SendAt: m.SendAt, CampaignID: m.CampaignID, Metadata: json.RawMessage(m.Metadata),
		Tags: m.Tags, IPPool: m.IPPool, Unsubscribe: m.Unsubscribe, Stream: m.Stream, RequireTLS: m.RequireTLS}
	for _, a := range m.Attachments {
		in.Attachments = append(in.Attachments, app.AttachmentInput{Filename: a.Filename, Content: a.Content,
			ContentType: a.ContentType, ContentID: a.ContentID})
	}
	if m.Tracking != nil {
		in.Tracking = &app.TrackingInput{Opens: m.Tracking.Opens, Clicks: m.Tracking.Clicks}
	}
	return in
}

// acceptedView is the 202 answer to a send.
type acceptedView struct {
	ID        string     `json:"id"`
	Status    string     `json:"status"`
	MessageID string     `json:"message_id_header"` // the Message-ID header field
	CreatedAt time.Time  `json:"created_at"`
	SendAt    *time.Time `json:"send_at,omitempty"`
}

func viewAccepted(m storage.Message) acceptedView {
	return acceptedView{ID: m.ID, Status: m.Status, MessageID: m.HeaderID, CreatedAt: m.CreatedAt.UTC(), SendAt: utc(m.SendAt)}
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, c *call) {
	var req messageRequest
	if !s.decode(w, r, &req) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, m storage.Message) {
		w.Header().Set("Location", "/v1/messages/"+m.ID)
		writeJSON(w, http.StatusAccepted, viewAccepted(m))
	})
	m, e := s.app.SendMessage(c.Principal, req.input())
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, m)
}

type batchRequest struct {
	Messages []json.RawMessage `json:"messages"`
}

func (s *Server) sendBatch(w http.ResponseWriter, r *http.Request, c *call) {
	var req batchRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.Messages == nil {
		s.writeError(w, r, app.Validation("messages", "is required: an array of messages"))
		return
	}
	if err := app.CheckBatchSize(c.Principal, len(req.Messages)); err != nil {
		s.writeError(w, r, err)
		return
	}
	ins := make([]app.MessageInput, len(req.Messages))
	for i, raw := range req.Messages {
		at := fmt.Sprintf("messages[%d]", i)
		if kind := jsonKind(raw); kind != "object" {
			s.writeError(w, r, app.Validation(at, "must be of type object, not "+kind).With("index", i))
			return
		}
		var m messageRequest
		if err := decodePart(raw, &m); err != nil {
			s.writeError(w, r, app.AsError(err).Within(fmt.Sprintf("messages[%d].", i)).With("index", i))
			return
		}
		ins[i] = m.input()
	}
	write := answer(c, func(w http.ResponseWriter, list []storage.Message) {
		writeJSON(w, http.StatusAccepted, map[string]any{"data": mapSlice(list, viewAccepted)})
	})
	list, e := s.app.SendBatch(c.Principal, ins, true)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, list)
}

type smtpResponseView struct {
	Code     int    `json:"code"`
	Enhanced string `json:"enhanced_code"`
	Message  string `json:"message"`
}

type recipientView struct {
	Email          string            `json:"email"`
	Type           string            `json:"type"`
	Status         string            `json:"status"`
	Attempts       int               `json:"attempts"`
	LastAttemptAt  *time.Time        `json:"last_attempt_at"`
	NextAttemptAt  *time.Time        `json:"next_attempt_at"`
	LastResponse   *smtpResponseView `json:"last_response"`
	MX             string            `json:"mx,omitempty"`
	SourceIP       string            `json:"source_ip,omitempty"`
	TLS            bool              `json:"tls"`
	TLSDetails     *tlsView          `json:"tls_details,omitempty"`
	BounceType     string            `json:"bounce_type,omitempty"`
	BounceCategory string            `json:"bounce_category,omitempty"`
	DeliveredAt    *time.Time        `json:"delivered_at"`
	BouncedAt      *time.Time        `json:"bounced_at"`
}

// tlsView is the TLS session of a recipient's last attempt.
type tlsView struct {
	Version  string `json:"version,omitempty"`
	Verified bool   `json:"verified"`
	Policy   string `json:"policy,omitempty"`
}

type messageView struct {
	ID          string              `json:"id"`
	Status      string              `json:"status"`
	Mode        string              `json:"mode"`
	MessageID   string              `json:"message_id_header"`
	From        string              `json:"from"`
	To          []string            `json:"to"`
	Cc          []string            `json:"cc"`
	Bcc         []string            `json:"bcc"`
	ReplyTo     []string            `json:"reply_to"`
	Subject     string              `json:"subject"`
	CampaignID  string              `json:"campaign_id,omitempty"`
	Tags        []string            `json:"tags"`
	Metadata    json.RawMessage     `json:"metadata"`
	Template    *templateRefView    `json:"template"`
	Tracking    storage.Tracking    `json:"tracking"`
	IPPool      string              `json:"ip_pool,omitempty"`
	Stream      string              `json:"stream"`
	RequireTLS  bool                `json:"require_tls,omitempty"`
	Recipients  []recipientView     `json:"recipients"`
	CreatedAt   time.Time           `json:"created_at"`
	SendAt      *time.Time          `json:"send_at"`
	QueuedAt    *time.Time          `json:"queued_at"`
	CompletedAt *time.Time          `json:"completed_at"`
	CancelledAt *time.Time          `json:"cancelled_at,omitempty"`
	Content     *messageContentView `json:"content,omitempty"`
}

type templateRefView struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

type messageContentView struct {
	HTML        string                  `json:"html"`
	Text        string                  `json:"text"`
	Headers     map[string]string       `json:"headers"`
	Attachments []attachmentSummaryView `json:"attachments"`
}

type attachmentSummaryView struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int    `json:"size"`
	ContentID   string `json:"content_id,omitempty"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func viewMessage(m storage.Message) messageView {
	v := messageView{ID: m.ID, Status: m.Status, Mode: "live", MessageID: m.HeaderID, From: m.From,
		To: nonNil(m.To), Cc: nonNil(m.Cc), Bcc: nonNil(m.Bcc), ReplyTo: nonNil(m.ReplyTo), Subject: m.Subject,
		CampaignID: m.CampaignID, Tags: nonNil(m.Tags), Metadata: m.Metadata, Tracking: m.Tracking, IPPool: m.IPPool,
		Stream: storage.StreamOf(m), RequireTLS: m.RequireTLS, CreatedAt: m.CreatedAt.UTC(), SendAt: utc(m.SendAt), QueuedAt: utc(m.QueuedAt),
		CompletedAt: utc(m.CompletedAt), CancelledAt: utc(m.CancelledAt), Recipients: []recipientView{}}
	if m.Test {
		v.Mode = "test"
	}
	if len(v.Metadata) == 0 {
		v.Metadata = json.RawMessage("{}")
	}
	if m.Template != nil {
		v.Template = &templateRefView{ID: m.Template.ID, Version: m.Template.Version}
	}
	for _, r := range m.Recipients {
		rv := recipientView{Email: r.Email, Type: r.Kind, Status: r.Status, Attempts: r.Attempts,
			LastAttemptAt: utc(r.LastAttemptAt), NextAttemptAt: utc(r.NextAttemptAt), MX: r.MX, SourceIP: r.SourceIP,
			TLS: r.TLS, BounceType: r.BounceType, BounceCategory: r.BounceCategory,
			DeliveredAt: utc(r.DeliveredAt), BouncedAt: utc(r.BouncedAt)}
		if r.TLSVersion != "" || r.TLSPolicy != "" {
			rv.TLSDetails = &tlsView{Version: r.TLSVersion, Verified: r.TLSVerified, Policy: r.TLSPolicy}
		}
		if r.SMTPResponse != "" || r.SMTPCode != 0 {
			rv.LastResponse = &smtpResponseView{Code: r.SMTPCode, Enhanced: r.EnhancedCode, Message: r.SMTPResponse}
		}
		v.Recipients = append(v.Recipients, rv)
	}
	return v
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, c *call) {
	m, content, e := s.app.Message(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	v := viewMessage(m)
	cv := &messageContentView{HTML: content.HTML, Text: content.Text, Headers: map[string]string{},
		Attachments: []attachmentSummaryView{}}
	for _, h := range content.Headers {
		cv.Headers[h[0]] = h[1]
	}
	for _, a := range content.Attachments {
		cv.Attachments = append(cv.Attachments, attachmentSummaryView{Filename: a.Filename, ContentType: a.ContentType,
			Size: max(a.Size, len(a.Content)), ContentID: a.ContentID})
	}
	v.Content = cv
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) cancelMessage(w http.ResponseWriter, r *http.Request, c *call) {
	if !s.decodeOptional(w, r, &struct{}{}) {
		return
	}
	write := answer(c, func(w http.ResponseWriter, m storage.Message) { writeJSON(w, http.StatusOK, viewMessage(m)) })
	m, e := s.app.CancelMessage(c.Principal, c.params.ByName("id"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	write(w, m)
}

// timeParam reads an RFC 3339 query parameter.
func timeParam(q url.Values, name string) (*time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, app.Validation(name, "must be an RFC 3339 time such as 2027-01-01T00:00:00Z")
	}
	return &t, nil
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, c *call) {
	q, e := queryOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	mq := app.MessageQuery{Status: q.Get("status"), CampaignID: q.Get("campaign_id"), Tag: q.Get("tag"), Stream: q.Get("stream"),
		Recipient: strings.ToLower(strings.TrimSpace(q.Get("recipient")))}
	if mq.Status != "" && !slices.Contains(app.MessageStatuses, mq.Status) {
		s.writeError(w, r, app.Validation("status", "must be one of "+strings.Join(app.MessageStatuses, ", ")))
		return
	}
	if e := app.CheckStream("stream", mq.Stream); e != nil {
		s.writeError(w, r, e)
		return
	}
	if mq.Since, e = timeParam(q, "since"); e == nil {
		mq.Until, e = timeParam(q, "until")
	}
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Message, storage.ListResult, int, error) {
		return s.app.ListMessages(c.Principal, mq, o, isPageMode(r))
	}, viewMessage)
}

func isPageMode(r *http.Request) bool { return r.URL.Query().Get("page") != "" }

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, c *call) {
	q, e := queryOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	eq := app.EventQuery{MessageID: q.Get("message_id"), Recipient: strings.ToLower(strings.TrimSpace(q.Get("recipient")))}
	for _, t := range q["type"] {
		for _, name := range strings.Split(t, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			if _, ok := app.NormalizeEventType(name); !ok {
				s.writeError(w, r, app.Validation("type", "unknown event type "+name+"; one of "+strings.Join(app.EventTypes, ", ")))
				return
			}
			eq.Types = append(eq.Types, name)
		}
	}
	if eq.Since, e = timeParam(q, "since"); e == nil {
		eq.Until, e = timeParam(q, "until")
	}
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	serveList(s, w, r, func(o storage.ListOptions) ([]storage.Event, storage.ListResult, int, error) {
		return s.app.ListEvents(c.Principal, eq, o, isPageMode(r))
	}, func(ev storage.Event) json.RawMessage { return json.RawMessage(ev.Envelope) })
}

// getMessageRaw answers a message's source as sent to one recipient
// (app.MessageRaw), as message/rfc822.
func (s *Server) getMessageRaw(w http.ResponseWriter, r *http.Request, c *call) {
	q, e := queryOf(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	raw, e := s.app.MessageRaw(c.Principal, c.params.ByName("id"), q.Get("recipient"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "message/rfc822")
	h.Set("Content-Length", strconv.Itoa(len(raw.Data)))
	h.Set("Mailbolt-Recipient", raw.Recipient)
	h.Set("Mailbolt-Envelope-From", raw.ReturnPath)
	h.Set("Mailbolt-DKIM-Signed", strconv.FormatBool(raw.Signed))
	w.WriteHeader(http.StatusOK)
	w.Write(raw.Data)
}
