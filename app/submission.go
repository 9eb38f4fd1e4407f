package app

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"net/mail"
	"strings"
	"time"

	"mailbolt/mta/message"
	"mailbolt/storage"
)

// A message submitted over SMTP (RFC 6409) is already MIME. It goes
// through the same acceptance as POST /v1/messages (prepare, then
// SendBatch's transaction): the From domain checked, recipients limited,
// labels validated, suppressions, events, the sandbox. What differs is
// only how its bytes are made: the API builds them from fields; here the
// submitted bytes are kept, with the X-Mailbolt-* fields taken out, a
// Message-ID and Date added when missing, and the HTML parts rewritten in
// place for tracking (prepareRaw). The stored message is the same kind of
// record with its built bytes, so delivery does not know the difference.

// Header fields of a submitted message that set what the API's fields
// set; every X-Mailbolt-* field is removed before sending.
const (
	HeaderTags     = "X-Mailbolt-Tags"     // comma-separated
	HeaderCampaign = "X-Mailbolt-Campaign" // campaign_id
	HeaderStream   = "X-Mailbolt-Stream"   // transactional or broadcast
	HeaderMetadata = "X-Mailbolt-Metadata" // a JSON object
	HeaderIPPool   = "X-Mailbolt-Ip-Pool"  // ip_pool
	headerPrefix   = "X-Mailbolt-"
)

// SMTPSubmission is one message as an SMTP client handed it over.
type SMTPSubmission struct {
	From string   // MAIL FROM: replaced by the bounce address on delivery
	To   []string // RCPT TO: they, not the header, decide who gets it
	Data []byte   // the message, as received
	// RequireTLS is the REQUIRETLS MAIL parameter (RFC 8689): delivered
	// as the API's require_tls.
	RequireTLS bool
}

// rawInput is a submitted message read for acceptance.
type rawInput struct {
	fields    []message.Field // the header to send, X-Mailbolt-* and Bcc removed
	body      []byte
	messageID string // the valid Message-ID it carries; "" for none
	hasDate   bool
	// unsubscribe: the message carries its own List-Unsubscribe, so
	// Mailbolt adds none.
	unsubscribe bool
	subject     string // decoded, for the record
	data        []byte // the whole message as received, for its summary
}

func (r *rawInput) size() int {
	if r == nil {
		return 0
	}
	return len(r.data)
}

// content is what the record keeps of a submitted message, for display:
// the subject and the first text and HTML bodies; its bytes are the
// built message.
func (r *rawInput) content() storage.MessageContent {
	sum := message.Summarize(r.data)
	c := storage.MessageContent{Subject: r.subject, Text: sum.Text, HTML: sum.HTML}
	for _, at := range sum.Attachments {
		c.Attachments = append(c.Attachments, storage.MessageAttachment{Filename: at.Filename,
			ContentType: at.ContentType, Size: at.Size, ContentID: at.ContentID})
	}
	return c
}

// readSubmission turns a submitted message into the input of a send: the
// header's From, the envelope's recipients (each marked to, cc or bcc by
// the header's To and Cc), and the X-Mailbolt-* fields as the API's
// labels. What it cannot read is a VALIDATION_ERROR naming the field.
func readSubmission(sub SMTPSubmission) (MessageInput, error) {
	var in MessageInput
	data := message.CRLF(sub.Data)
	fields, body, err := message.SplitFields(data)
	if err != nil {
		return in, Validation("message", err.Error())
	}
	if body == nil {
		body = []byte{}
	}
	raw := &rawInput{body: body, data: data}
	var from []string
	kinds := map[string]string{}
	dec := new(mime.WordDecoder)
	for _, f := range fields {
		v := f.Value()
		switch {
		case len(f.Name) > len(headerPrefix) && strings.EqualFold(f.Name[:len(headerPrefix)], headerPrefix):
			if d, err := dec.DecodeHeader(v); err == nil {
				v = d
			}
			switch {
			case f.Is(HeaderTags):
				for _, t := range strings.Split(v, ",") {
					if t = strings.TrimSpace(t); t != "" {
						in.Tags = append(in.Tags, t)
					}
				}
			case f.Is(HeaderCampaign):
				in.CampaignID = v
			case f.Is(HeaderStream):
				in.Stream = strings.ToLower(v)
			case f.Is(HeaderMetadata):
				in.Metadata = json.RawMessage(v)
			case f.Is(HeaderIPPool):
				in.IPPool = v
			}
			continue // never sent
		case f.Is("Bcc"):
			continue // the envelope carries Bcc recipients; the header must not
		case f.Is("Return-Path"):
			continue // added by the final delivery (RFC 5321 §4.4), never by the sender
		case f.Is("List-Unsubscribe"):
			raw.unsubscribe = true
		case f.Is("From"):
			from = append(from, v)
		case f.Is("To"), f.Is("Cc"):
			kind := strings.ToLower(f.Name)
			if list, err := mail.ParseAddressList(v); err == nil {
				for _, a := range list {
					if k := recipientKey(a.Address); kinds[k] == "" {
						kinds[k] = kind
					}
				}
			}
		case f.Is("Subject"):
			raw.subject = v
			if d, err := dec.DecodeHeader(v); err == nil {
				raw.subject = d
			}
			raw.subject = strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f {
					return ' '
				}
				return r
			}, raw.subject)
		case f.Is("Date"):
			raw.hasDate = true
		case f.Is("Message-ID"):
			if validMessageID(v) && raw.messageID == "" {
				raw.messageID = v
			} else {
				continue // replaced by one of ours
			}
		}
		raw.fields = append(raw.fields, f)
	}
	switch len(from) {
	case 0:
		return in, Validation("from", "the message has no From field")
	case 1:
		in.From = from[0]
	default:
		return in, Validation("from", "the message has more than one From field")
	}
	for _, to := range sub.To {
		switch kinds[recipientKey(to)] {
		case "to":
			in.To = append(in.To, to)
		case "cc":
			in.Cc = append(in.Cc, to)
		default:
			in.Bcc = append(in.Bcc, to)
		}
	}
	in.raw = raw
	return in, nil
}

// recipientKey is an address of a submission, from its envelope or its
// header, in the form recipients are matched in (storage.AddressKey), so
// that either spelling of an IDN domain, in any case, is one recipient.
// The envelope's addresses were checked at RCPT; one of the header that is
// no valid address keeps its lower case and matches only itself.
func recipientKey(addr string) string {
	k, _ := storage.AddressKey(addr)
	return k
}

// validMessageID accepts a msg-id (RFC 5322 §3.6.4) as "<left@right>"
// without blanks or control characters, of a sane length.
func validMessageID(v string) bool {
	if len(v) < 5 || len(v) > 250 || v[0] != '<' || v[len(v)-1] != '>' || !strings.Contains(v, "@") {
		return false
	}
	for _, r := range v[1 : len(v)-1] {
		if r <= ' ' || r == 0x7f || r == '<' || r == '>' {
			return false
		}
	}
	return true
}

// prepareRaw finishes prepare for a submitted message: its own
// Message-ID kept (or ours added), a Date added when missing, and its
// HTML parts rewritten for tracking. The rest of its bytes are kept.
func (a *App) prepareRaw(m storage.Message, content storage.MessageContent, raw *rawInput) (prepared, error) {
	fields := append([]message.Field(nil), raw.fields...)
	if raw.unsubscribe {
		m.ListUnsubscribe = false
	}
	if raw.messageID != "" {
		m.HeaderID = raw.messageID
	} else {
		fields = append(fields, message.NewField("Message-ID", m.HeaderID))
	}
	if !raw.hasDate {
		fields = append(fields, message.NewField("Date", m.CreatedAt.Format(time.RFC1123Z)))
	}
	body := raw.body
	var links []string
	if m.Tracking.Opens || m.Tracking.Clicks {
		var err error
		parts := 0
		fields, body, _, err = message.RewriteHTML(fields, body, func(html string) string {
			out, l := a.trackFrom(m, html, len(links), parts == 0) // the pixel in the first part only
			parts++
			links = append(links, l...)
			return out
		})
		if err != nil {
			return prepared{}, Validation("message", err.Error())
		}
	}
	out := message.JoinFields(fields, body)
	if int64(len(out)) > a.opts.MaxMessageSize {
		return prepared{}, a.messageTooLarge(false, int64(len(out)))
	}
	return prepared{msg: m, content: content, raw: out, links: links}, nil
}

// SubmitMessage accepts one message submitted over SMTP, as SendMessage
// accepts one from the API: the same checks, the same transaction, and
// the answer only once it is committed. p is the session's principal.
func (a *App) SubmitMessage(p Principal, sub SMTPSubmission) (storage.Message, error) {
	in, err := readSubmission(sub)
	if err != nil {
		if e := a.authorize(p, ScopeMessagesWrite); e != nil {
			return storage.Message{}, e
		}
		return storage.Message{}, err
	}
	in.RequireTLS = sub.RequireTLS
	return a.SendMessage(p, in)
}

// submissionFingerprint identifies a submission for the SMTP form of
// idempotency: its envelope (the recipients in their normal form) and its
// bytes.
func submissionFingerprint(sub SMTPSubmission) []byte {
	h := sha256.New()
	fmt.Fprintf(h, "smtp\x00%s\x00", sub.From)
	if sub.RequireTLS {
		h.Write([]byte("requiretls\x00"))
	}
	for _, to := range sub.To {
		fmt.Fprintf(h, "%s\x00", recipientKey(to))
	}
	h.Write(message.CRLF(sub.Data))
	return h.Sum(nil)
}
