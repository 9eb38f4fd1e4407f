package app

import (
	"strings"

	"mailbolt/mta/queue"
	"mailbolt/storage"
)

// RawMessage is a message's source as built for one recipient: the bytes
// of its SMTP DATA, and the envelope sender (VERP return path) of that
// recipient's copy, which is not part of the bytes.
type RawMessage struct {
	Recipient  string
	ReturnPath string
	Data       []byte
	// Signed says Data starts with the DKIM-Signature field of the
	// recipient's latest attempt; false before the first live attempt,
	// for test-mode messages, and when that attempt was not signed.
	Signed bool
}

// MessageRaw answers a message's source exactly as it was (or will be)
// sent to one recipient: the DKIM-Signature of the recipient's latest
// attempt, when it was signed, then the recipient's own List-Unsubscribe
// fields, when the message has them, then the message as built at
// acceptance. recipient may be empty when the message has exactly one.
// An unknown recipient is 400 VALIDATION_ERROR (field recipient); another
// account's message, or one of the other mode, 404; a cancelled one 410.
func (a *App) MessageRaw(p Principal, id, recipient string) (RawMessage, error) {
	if err := a.authorize(p, ScopeMessagesRead); err != nil {
		return RawMessage{}, err
	}
	var m storage.Message
	var raw []byte
	err := a.db.View(func(tx *storage.Tx) error {
		var err error
		if m, err = tx.Message(p.Account.ID, id); err != nil {
			return err
		}
		if m.Test != p.Test {
			return storage.ErrNotFound
		}
		if raw = tx.MessageRaw(p.Account.ID, id); raw != nil {
			return nil
		}
		// Stored before built messages were kept: delivery builds it
		// again the same way (queue.Build is deterministic).
		c, err := tx.MessageContent(p.Account.ID, id)
		if err != nil {
			return err
		}
		raw, err = queue.Build(m, c)
		return err
	})
	if e := storageErr(err, "message"); e != nil {
		return RawMessage{}, e
	}
	if m.Status == StatusCancelled {
		return RawMessage{}, gone(m)
	}
	i, e := rawRecipient(m, recipient)
	if e != nil {
		return RawMessage{}, e
	}
	r := m.Recipients[i]
	out := RawMessage{Recipient: r.Email, ReturnPath: queue.ReturnPath(a.returnPathKey, m, i), Signed: r.DKIMSignature != ""}
	unsigned := queue.Unsigned(m, i, raw, a.unsubscribeHeaders)
	out.Data = append(append(make([]byte, 0, len(r.DKIMSignature)+len(unsigned)), r.DKIMSignature...), unsigned...)
	return out, nil
}

// rawRecipient is the index in m.Recipients of the recipient the raw
// source is asked for: the one named (any case, either spelling of an IDN
// domain), or the only one.
func rawRecipient(m storage.Message, recipient string) (int, error) {
	if strings.TrimSpace(recipient) == "" {
		if len(m.Recipients) == 1 {
			return 0, nil
		}
		return 0, Validation("recipient", "is required: the message has several recipients, and each gets its own copy")
	}
	for i, r := range m.Recipients {
		if sameRecipient(recipient, r.Email) {
			return i, nil
		}
	}
	return 0, Validation("recipient", "is not a recipient (to, cc or bcc) of this message")
}
