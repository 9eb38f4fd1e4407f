package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"mailbolt/app"
	"mailbolt/storage"
)

// sourceShown caps the raw source shown on a page; the download link
// gives all of it.
const sourceShown = 256 << 10

// messageEvents caps the events listed on a message page (a message has a
// few per recipient; opens and clicks may add many).
const messageEvents = 200

// eventRow is one event of a message, its data shown as indented JSON.
type eventRow struct {
	ID, Type, Recipient, At, Data string
}

// recipientTimeline is one recipient's delivery state with its events,
// oldest first.
type recipientTimeline struct {
	storage.Recipient
	SourceLink string // the page showing this recipient's raw source
	RawLink    string // its download
	Events     []eventRow
}

// messageData is what the message page shows.
type messageData struct {
	Message    storage.Message
	Content    storage.MessageContent
	Recipients []recipientTimeline
	Others     []eventRow // events naming no single recipient (opens, clicks: per message)
	EventsOK   bool       // the role reads events
	EventsMore bool       // more than messageEvents events
}

// eventRowOf is ev for the page: its data field indented.
func eventRowOf(ev storage.Event) eventRow {
	row := eventRow{ID: ev.ID, Type: ev.Type, Recipient: ev.Recipient, At: ev.Timestamp.UTC().Format("2006-01-02 15:04:05")}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(ev.Envelope, &env) == nil && len(env.Data) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, env.Data, "", "  ") == nil {
			row.Data = buf.String()
		}
	}
	return row
}

func messageLink(id, what, recipient string) string {
	return "/dashboard/messages/" + url.PathEscape(id) + what + "?" + url.Values{"recipient": {recipient}}.Encode()
}

// messagePage shows one message: each recipient's delivery state (the
// latest attempt's MX, source IP, TLS and SMTP reply) and events, and
// links to each recipient's raw source.
func (s *Server) messagePage(w http.ResponseWriter, r *http.Request, sess app.Session) {
	m, content, err := s.app.Message(sess.Principal, r.PathValue("id"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := messageData{Message: m, Content: content, EventsOK: app.HasScope(sess.Principal.Scopes, app.ScopeEventsRead)}
	byRcpt := map[string]int{}
	for i, rc := range m.Recipients {
		byRcpt[rc.Email] = i
		d.Recipients = append(d.Recipients, recipientTimeline{Recipient: rc,
			SourceLink: messageLink(m.ID, "/source", rc.Email), RawLink: messageLink(m.ID, "/raw", rc.Email)})
	}
	if d.EventsOK {
		evs, res, _, err := s.app.ListEvents(sess.Principal, app.EventQuery{MessageID: m.ID}, storage.ListOptions{Limit: messageEvents}, false)
		if err != nil {
			s.fail(w, sess, err)
			return
		}
		d.EventsMore = res.HasMore
		slices.Reverse(evs) // oldest first: a timeline
		for _, ev := range evs {
			if i, ok := byRcpt[ev.Recipient]; ok {
				d.Recipients[i].Events = append(d.Recipients[i].Events, eventRowOf(ev))
			} else {
				d.Others = append(d.Others, eventRowOf(ev))
			}
		}
	}
	s.render(w, http.StatusOK, "message", s.pageOf(sess, "Message "+m.ID, page{Data: d}))
}

// sourceData is what the source page shows.
type sourceData struct {
	ID         string
	Raw        app.RawMessage
	Text       string // the source, up to sourceShown bytes
	Cut        bool   // Text is only the start
	Size       int
	RawLink    string
	MessageURL string
}

// messageSource shows one recipient's raw source (app.MessageRaw) as text:
// html/template escapes it, so markup in a message is shown, never run.
func (s *Server) messageSource(w http.ResponseWriter, r *http.Request, sess app.Session) {
	id := r.PathValue("id")
	q, err := queryOf(r)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	raw, err := s.app.MessageRaw(sess.Principal, id, q.Get("recipient"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	d := sourceData{ID: id, Raw: raw, Size: len(raw.Data), RawLink: messageLink(id, "/raw", raw.Recipient),
		MessageURL: "/dashboard/messages/" + url.PathEscape(id)}
	text := raw.Data
	if len(text) > sourceShown {
		text, d.Cut = text[:sourceShown], true
	}
	d.Text = string(text)
	s.render(w, http.StatusOK, "source", s.pageOf(sess, "Source of "+id, page{Data: d}))
}

// messageRawDownload answers one recipient's raw source as a .eml
// attachment, as GET /v1/messages/{id}/raw does for the API.
func (s *Server) messageRawDownload(w http.ResponseWriter, r *http.Request, sess app.Session) {
	id := r.PathValue("id")
	q, err := queryOf(r)
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	raw, err := s.app.MessageRaw(sess.Principal, id, q.Get("recipient"))
	if err != nil {
		s.fail(w, sess, err)
		return
	}
	h := w.Header()
	noCache(h)
	h.Set("Content-Type", "message/rfc822")
	h.Set("Content-Length", strconv.Itoa(len(raw.Data)))
	// The id is a UUID (app.Message found it), so the name needs no quoting.
	h.Set("Content-Disposition", `attachment; filename="`+id+`.eml"`)
	h.Set("Mailbolt-Recipient", raw.Recipient)
	h.Set("Mailbolt-Envelope-From", raw.ReturnPath)
	h.Set("Mailbolt-DKIM-Signed", strconv.FormatBool(raw.Signed))
	w.WriteHeader(http.StatusOK)
	w.Write(raw.Data)
}
