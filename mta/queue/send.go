package queue

import (
	"context"
	"crypto"
	"fmt"
	"net"
	"net/mail"
	"sync"
	"time"

	"mailbolt/mta"
	"mailbolt/mta/dkim"
	"mailbolt/mta/message"
	"mailbolt/storage"
)

// Sender hands one message to the next hop: *mta.Deliverer in production.
type Sender interface {
	Send(ctx context.Context, env mta.Envelope) []mta.RecipientResult
}

// deliver makes one attempt for a claimed message and records the outcome.
func (q *Queue) deliver(ctx context.Context, j job) {
	var results []mta.RecipientResult
	var sigs map[string]string
	if j.msg.Test {
		results = sandboxResults(j.rcpts)
	} else {
		results, sigs = q.sendLive(ctx, j)
	}
	if err := q.record(j, results, sigs, ctx.Err() != nil); err != nil {
		q.log.Error("recording a delivery attempt failed", "message_id", j.msg.ID, "err", err)
	}
}

// sendLive builds, signs and sends a live message: one build and one DKIM
// signature per message, whatever the number of recipients, and one SMTP
// transaction per recipient, since each has its own VERP return path
// (ReturnPath). A message with List-Unsubscribe fields gets one copy and
// signature per recipient, as each has its own link. It also returns the
// DKIM-Signature field each recipient's copy was sent with (none for a
// recipient whose copy was not signed), which record keeps on the
// recipient so the raw source (GET /v1/messages/{id}/raw) is the bytes
// sent.
func (q *Queue) sendLive(ctx context.Context, j job) ([]mta.RecipientResult, map[string]string) {
	fail := func(rcpts []string, err error) []mta.RecipientResult {
		out := make([]mta.RecipientResult, len(rcpts))
		for i, r := range rcpts {
			out[i] = mta.RecipientResult{Recipient: r, Status: mta.StatusPermanent, Enhanced: "5.3.0",
				Text: "message could not be prepared: " + err.Error(), Bounce: mta.Classify(554, "5.3.0", err.Error())}
		}
		return out
	}
	sender := q.opts.Sender
	if sender == nil {
		out := make([]mta.RecipientResult, len(j.rcpts))
		for i, r := range j.rcpts {
			out[i] = mta.RecipientResult{Recipient: r, Status: mta.StatusTemporary, Enhanced: "4.4.0", Text: "no outbound delivery configured"}
		}
		return out, nil
	}
	raw := j.raw
	if raw == nil {
		var err error
		if raw, err = Build(j.msg, j.content); err != nil {
			return fail(j.rcpts, err), nil
		}
	}
	selector, key, signed := SigningKey(j.domain)
	var signer crypto.Signer
	if signed {
		var err error
		if signer, err = q.signer(j.domain.ID, selector, key); err != nil {
			return fail(j.rcpts, err), nil
		}
	}
	sign := func(data []byte) ([]byte, error) {
		if !signed {
			return data, nil
		}
		return dkim.Sign(data, j.domain.Name, selector, signer)
	}
	// signature is the field Sign put before data in out.
	signature := func(out, data []byte) string {
		if !signed {
			return ""
		}
		return string(out[:len(out)-len(data)])
	}
	sigs := map[string]string{}
	perRecipient := j.msg.ListUnsubscribe && q.opts.UnsubscribeHeaders != nil
	var shared []byte // one signed copy for every recipient
	if !perRecipient {
		var err error
		if shared, err = sign(raw); err != nil {
			return fail(j.rcpts, err), nil
		}
	}
	utf8, seven := wireNeeds(raw)
	var sharedSeven func() ([]byte, error) // the 7-bit form of shared, signed once
	if seven != nil && !perRecipient {
		sharedSeven = sync.OnceValues(func() ([]byte, error) {
			s, err := seven()
			if err != nil {
				return nil, err
			}
			return sign(s)
		})
	}
	var out []mta.RecipientResult
	for _, rcpt := range j.rcpts {
		i := recipientIndex(j.msg, rcpt)
		data := shared
		if !perRecipient {
			sigs[rcpt] = signature(shared, raw)
		} else {
			var err error
			unsigned := Unsigned(j.msg, i, raw, q.opts.UnsubscribeHeaders)
			if data, err = sign(unsigned); err != nil {
				out = append(out, fail([]string{rcpt}, err)...)
				continue
			}
			sigs[rcpt] = signature(data, unsigned)
		}
		env := mta.Envelope{From: ReturnPath(q.opts.ReturnPathKey, j.msg, i), To: []string{rcpt}, Data: data, HELO: j.src.Hostname,
			UTF8: utf8, SevenBit: sharedSeven, RequireTLS: j.msg.RequireTLS}
		if seven != nil && perRecipient {
			env.SevenBit = func() ([]byte, error) {
				s, err := seven()
				if err != nil {
					return nil, err
				}
				return sign(Unsigned(j.msg, i, s, q.opts.UnsubscribeHeaders))
			}
		}
		if j.src.Addr != "" {
			env.SourceIP = net.ParseIP(j.src.Addr)
		}
		start := time.Now()
		res := sender.Send(ctx, env)
		took := time.Since(start)
		for i := range res {
			res[i].Duration = took
		}
		out = append(out, res...)
	}
	return out, sigs
}

// Unsigned is the copy recipient i of m is sent, before its
// DKIM-Signature field: the recipient's List-Unsubscribe fields, when the
// message has them (unsubscribe makes them), then the built message.
// Delivery and the raw source (GET /v1/messages/{id}/raw) both take it
// from here, so the raw source is the bytes sent.
func Unsigned(m storage.Message, i int, built []byte, unsubscribe func(storage.Message, int) []byte) []byte {
	if !m.ListUnsubscribe || unsubscribe == nil {
		return built
	}
	return append(unsubscribe(m, i), built...)
}

// wireNeeds reads what a built message needs of the next hop: SMTPUTF8
// for a header in UTF-8 (RFC 6532), and for an 8-bit body a conversion
// to 7-bit (nil when the body is 7-bit, as every message the API builds
// is) for a hop without 8BITMIME. The conversion runs at most once, and
// only if such a hop is met; it comes before signing, which covers the
// body as sent (RFC 6152 §3, RFC 6376 §5.3).
func wireNeeds(raw []byte) (utf8 bool, seven func() ([]byte, error)) {
	fields, body, err := message.SplitFields(raw)
	if err != nil {
		return message.Has8Bit(raw), nil
	}
	if !message.Has8Bit(body) {
		return message.HeaderHas8Bit(fields), nil
	}
	return message.HeaderHas8Bit(fields), sync.OnceValues(func() ([]byte, error) {
		f, b, err := message.To7Bit(fields, body)
		if err != nil {
			return nil, err
		}
		return message.JoinFields(f, b), nil
	})
}

func recipientIndex(m storage.Message, email string) int {
	for i, r := range m.Recipients {
		if r.Email == email {
			return i
		}
	}
	return 0
}

// SigningKey is the selector and key that sign a verified domain's mail:
// its active key.
func SigningKey(d storage.Domain) (string, dkim.Key, bool) {
	k, ok := d.ActiveKey()
	if !ok {
		return "", dkim.Key{}, false
	}
	return k.Selector, dkim.Key{Algorithm: k.Algorithm, PrivateDER: k.PrivateKey, PublicB64: k.PublicKey}, true
}

// signer returns the parsed DKIM key of a domain, parsing it once.
func (q *Queue) signer(domainID, selector string, key dkim.Key) (crypto.Signer, error) {
	k := domainID + "/" + selector
	if s, ok := q.signers.Load(k); ok {
		return s.(crypto.Signer), nil
	}
	s, err := key.Signer()
	if err != nil {
		return nil, fmt.Errorf("DKIM key of selector %s: %w", selector, err)
	}
	q.signers.Store(k, s)
	return s, nil
}

// Build writes a stored message and its content as RFC 5322 bytes: at
// acceptance, and at delivery for messages stored before their built form
// was kept.
func Build(m storage.Message, c storage.MessageContent) ([]byte, error) {
	out := message.Message{
		From: address(m.From), Subject: c.Subject, Text: c.Text, HTML: c.HTML,
		Headers: c.Headers, MessageID: m.HeaderID, Date: m.CreatedAt,
	}
	if m.SendAt != nil {
		out.Date = *m.SendAt
	}
	for _, s := range m.To {
		out.To = append(out.To, address(s))
	}
	for _, s := range m.Cc {
		out.Cc = append(out.Cc, address(s))
	}
	for _, s := range m.ReplyTo {
		out.ReplyTo = append(out.ReplyTo, address(s))
	}
	for _, at := range c.Attachments {
		out.Attachments = append(out.Attachments, message.Attachment{Filename: at.Filename, ContentType: at.ContentType,
			Content: at.Content, ContentID: at.ContentID})
	}
	return message.Build(out)
}

func address(s string) message.Address {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return message.Address{Email: s}
	}
	return message.Address{Name: a.Name, Email: a.Address}
}
