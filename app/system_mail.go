package app

import (
	"fmt"
	"time"

	"mailbolt/storage"
)

// SendSystemRaw queues one message from --system-from to an address, with
// bytes that build makes (given the From field, the Message-ID and the
// date): mail whose MIME structure the message API cannot express, such as
// a TLS report's multipart/report (RFC 8460). It goes through the normal
// queue, sent by the account that has the system sender's domain verified,
// so delivery signs it with that domain's DKIM key. subject and text are
// what the message record shows. It answers the message id.
func (a *App) SendSystemRaw(to, subject, text string, tags []string, build func(from, messageID string, date time.Time) ([]byte, error)) (string, error) {
	sender, why := a.invitationSender()
	if sender.ID == "" {
		return "", fmt.Errorf("no system sender (%s): set --system-from to an address of a verified domain", why)
	}
	off := false
	in := MessageInput{From: a.opts.SystemFrom, To: []string{to}, Subject: &subject, Text: &text, Unsubscribe: &off, Tags: tags}
	list, sent, err := a.prepareBatch(operatorIn(sender), []MessageInput{in}, false)
	if err != nil {
		return "", err
	}
	m := list[0].msg
	raw, err := build(m.From, m.HeaderID, m.CreatedAt)
	if err != nil {
		return "", err
	}
	if int64(len(raw)) > a.opts.MaxMessageSize {
		return "", fmt.Errorf("system message of %d bytes exceeds --max-message-size", len(raw))
	}
	list[0].raw = raw
	err = a.db.Update(func(tx *storage.Tx) error {
		_, err := fileBatch(tx, list, sent)
		return err
	})
	if err != nil {
		return "", Internal(err)
	}
	return m.ID, nil
}
