package mta

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// After the handshake (greeting, EHLO, STARTTLS, AUTH, done by go-smtp) a
// session's commands and replies go through here. go-smtp's client is
// lock-step: it sends a command and waits for its reply before the next,
// even when the server offers PIPELINING. With PIPELINING (RFC 2920) a
// transaction here is two round trips: MAIL FROM, every RCPT TO and DATA in
// one write, then the message and its final dot in another.

// transact runs one mail transaction: MAIL FROM, RCPT TO for each
// recipient, DATA once for those accepted. It reports whether the session
// can be used again. A nil result means a session taken from the pool
// without a probe turned out to be gone before anything was accepted: the
// caller goes again on a probed or new one.
func (c *smtpConn) transact(ctx context.Context, env Envelope, rcpts []string) ([]RecipientResult, bool) {
	stop := context.AfterFunc(ctx, func() { c.raw.Close() })
	defer stop()
	results := make([]RecipientResult, len(rcpts))
	failAll := func(idx []int, e *DeliveryError) {
		for _, i := range idx {
			results[i] = e.result(rcpts[i], c.tls)
		}
	}
	all := make([]int, len(rcpts))
	for i := range all {
		all[i] = i
	}
	// fail turns an error into a result; the session survives a reply
	// other than 421 (RFC 5321 §3.8: the server is closing).
	fail := func(err error) (*DeliveryError, bool) {
		if ctx.Err() != nil {
			e := localError(false, "4.4.2", "delivery canceled: %v", ctx.Err())
			e.Host = c.host
			return e, false
		}
		e := replyError(c.host, err)
		return e, e.isReply() && e.Code != 421
	}

	utf8 := needsSMTPUTF8(env.From, rcpts)
	if utf8 && !c.has("SMTPUTF8") {
		e := localError(true, "5.6.7", "non-ASCII address, and %s does not offer SMTPUTF8", c.host)
		e.Host = c.host
		failAll(all, e)
		return results, true
	}
	if env.UTF8 && !c.has("SMTPUTF8") {
		// RFC 6531 §3.2: a message that needs SMTPUTF8 is not sent to a
		// server that does not offer it; it bounces.
		e := localError(true, "5.6.7", "the message header holds UTF-8, and %s does not offer SMTPUTF8", c.host)
		e.Host = c.host
		failAll(all, e)
		return results, true
	}
	utf8 = utf8 || env.UTF8
	data := env.Data
	if env.SevenBit != nil && !c.has("8BITMIME") {
		// RFC 6152 §3: 8-bit data only to a server that offers 8BITMIME;
		// to any other, the message converted to 7-bit (and signed anew).
		var err error
		if data, err = env.SevenBit(); err != nil {
			e := localError(true, "5.6.3", "8-bit message, %s does not offer 8BITMIME, and it cannot be converted: %v", c.host, err)
			e.Host = c.host
			failAll(all, e)
			return results, true
		}
	}
	if limit, ok := c.client.MaxMessageSize(); ok && limit > 0 && len(data) > limit {
		e := localError(true, "5.3.4", "message of %d bytes exceeds the %d bytes %s accepts", len(data), limit, c.host)
		e.Host = c.host
		failAll(all, e)
		return results, true
	}

	c.clean = false
	cmds := make([]string, 0, len(rcpts)+2)
	mail := c.mailCommand(env.From, len(data), utf8)
	if env.RequireTLS {
		mail += " REQUIRETLS" // RFC 8689 §4.1; the hop was checked to offer it
	}
	cmds = append(cmds, mail)
	for _, to := range rcpts {
		cmds = append(cmds, "RCPT TO:<"+to+">")
	}
	cmds = append(cmds, "DATA")
	// Lock-step sends each command after the previous reply; with
	// PIPELINING they all go at once and the replies are read in order.
	group := 1
	if c.has("PIPELINING") {
		group = len(cmds)
	}
	// Each reply must be of the class its command expects: 354 to DATA,
	// 2xx to the rest; anything else takes the session out of step.
	expect := func(i int) int {
		if i == len(cmds)-1 {
			return 3
		}
		return 2
	}
	replies := make([]error, 0, len(cmds))
	gone := false // a reply was missing or 421: the session cannot be reused
read:
	for len(replies) < len(cmds) {
		n := min(group, len(cmds)-len(replies))
		if err := c.send(cmds[len(replies) : len(replies)+n]...); err != nil {
			e, ok := fail(err)
			if c.unprobed && len(replies) == 0 && ctx.Err() == nil {
				return nil, false
			}
			failAll(all, e)
			return results, ok
		}
		for range n {
			err := c.reply(c.d.commandTimeout(), expect(len(replies)))
			replies = append(replies, err)
			if err != nil && (!isReplyErr(err) || c.lastCode == 421) {
				gone = true
				break read // no more replies come, or they cannot be trusted
			}
		}
		if group == 1 && (replies[0] != nil || len(replies) == len(cmds)-1 && !anyNil(replies[1:])) {
			break // MAIL FROM or every RCPT TO refused: nothing more to send
		}
	}
	// With PIPELINING the server may have taken DATA although nothing can
	// be sent (RFC 2920 §3.1).
	dataTaken := len(replies) == len(cmds) && replies[len(cmds)-1] == nil

	if err := replies[0]; err != nil {
		e, ok := fail(err)
		if c.unprobed && (!e.isReply() || e.Code == 421) && ctx.Err() == nil {
			// The server closed the idle session (or is closing it):
			// nothing was accepted.
			return nil, false
		}
		failAll(all, e)
		return results, ok && !gone && c.endData(dataTaken)
	}
	var accepted []int
	for i, to := range rcpts {
		err := replies[1+i]
		if err == nil {
			accepted = append(accepted, i)
			continue
		}
		e, ok := fail(err)
		if !ok {
			// The session is gone: every recipient not refused yet
			// shares its fate.
			failAll(append(accepted, all[i:]...), e)
			return results, false
		}
		results[i] = e.result(to, c.tls)
	}
	if len(accepted) == 0 {
		return results, !gone && c.endData(dataTaken) // the next use starts with RSET
	}
	if err := replies[len(cmds)-1]; err != nil {
		e, ok := fail(err)
		failAll(accepted, e)
		return results, ok
	}
	if err := c.sendData(data); err != nil {
		e, ok := fail(err)
		failAll(accepted, e)
		return results, ok
	}
	if err := c.reply(c.d.dataTimeout(), 2); err != nil {
		e, ok := fail(err)
		failAll(accepted, e)
		c.clean = ok // a reply to the final dot ends the transaction
		return results, ok
	}
	c.clean = true
	enhanced, text := splitReply(c.lastText)
	for _, i := range accepted {
		results[i] = RecipientResult{
			Recipient: rcpts[i], Status: StatusDelivered, Code: 250, Enhanced: enhanced, Text: text,
			Host: c.host, TLS: c.tls,
		}
	}
	return results, true
}

func anyNil(errs []error) bool {
	for _, e := range errs {
		if e == nil {
			return true
		}
	}
	return false
}

// endData settles a DATA that the server took although nothing can be
// sent (MAIL FROM or every RCPT TO refused): the empty message is ended at
// once and its reply ignored. It reports whether the session is still in
// step.
func (c *smtpConn) endData(taken bool) bool {
	if !taken {
		return true
	}
	if err := c.send("."); err != nil {
		return false
	}
	err := c.reply(c.d.commandTimeout(), 2)
	return err == nil || isReplyErr(err) && c.lastCode != 421
}

// has reports an extension the server offered in its EHLO reply.
func (c *smtpConn) has(ext string) bool {
	ok, _ := c.client.Extension(ext)
	return ok
}

// mailCommand is MAIL FROM with the parameters the server offers: the
// message size (RFC 1870), 8BITMIME (RFC 6152) and SMTPUTF8 (RFC 6531).
func (c *smtpConn) mailCommand(from string, size int, utf8 bool) string {
	var b strings.Builder
	b.WriteString("MAIL FROM:<")
	b.WriteString(from)
	b.WriteByte('>')
	if c.has("8BITMIME") {
		b.WriteString(" BODY=8BITMIME")
	}
	if c.has("SIZE") {
		b.WriteString(" SIZE=")
		b.WriteString(strconv.Itoa(size))
	}
	if utf8 {
		b.WriteString(" SMTPUTF8")
	}
	return b.String()
}

// send writes commands in one write, each ended by CRLF.
func (c *smtpConn) send(cmds ...string) error {
	c.wbuf = c.wbuf[:0]
	for _, cmd := range cmds {
		c.wbuf = append(c.wbuf, cmd...)
		c.wbuf = append(c.wbuf, '\r', '\n')
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.d.commandTimeout()))
	_, err := c.conn.Write(c.wbuf)
	return err
}

// sendData writes a message as the DATA content: every line ended by CRLF
// (a bare LF becomes CRLF), a line that starts with a dot gets a second
// one (RFC 5321 §4.5.2), then the final dot, all in one write.
func (c *smtpConn) sendData(data []byte) error {
	c.wbuf = dotStuff(c.wbuf[:0], data)
	c.conn.SetWriteDeadline(time.Now().Add(c.d.dataTimeout()))
	_, err := c.conn.Write(c.wbuf)
	return err
}

// dotStuff appends data to dst as SMTP DATA content, final dot included.
func dotStuff(dst, data []byte) []byte {
	for len(data) > 0 {
		line := data
		next := []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, next = data[:i], data[i+1:]
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > 0 && line[0] == '.' {
			dst = append(dst, '.')
		}
		dst = append(dst, line...)
		dst = append(dst, '\r', '\n')
		data = next
	}
	return append(dst, '.', '\r', '\n')
}

// reply reads one reply within timeout. A reply of the class expected (2
// for 2xx, 3 for 3xx) is nil, its code and text kept in lastCode and
// lastText; a 4xx or 5xx reply is a *replyErr; a 2xx or 3xx reply the
// command did not call for, or none at all, is an error of the session
// (the client and the server are out of step).
func (c *smtpConn) reply(timeout time.Duration, class int) error {
	c.conn.SetReadDeadline(time.Now().Add(timeout))
	code, msg, err := c.text.ReadResponse(0)
	c.lastCode, c.lastText = code, msg
	switch {
	case err != nil:
		return err // ReadResponse(0) checks no code: this is the connection
	case code >= 400:
		return &replyErr{code: code, text: msg}
	case code/100 != class:
		return fmt.Errorf("unexpected reply %d %s", code, msg)
	}
	return nil
}

// replyErr is a 4xx or 5xx reply.
type replyErr struct {
	code int
	text string
}

func (e *replyErr) Error() string { return strconv.Itoa(e.code) + " " + e.text }

func isReplyErr(err error) bool {
	var re *replyErr
	return errors.As(err, &re)
}

// reset prepares a reused session for a new transaction: RSET both ends
// any previous transaction and proves the server still listens.
func (c *smtpConn) reset(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { c.raw.Close() })
	defer stop()
	if err := c.send("RSET"); err != nil {
		return err
	}
	return c.reply(c.d.commandTimeout(), 2)
}

// quit ends the session with QUIT, not waiting long for the answer.
func (c *smtpConn) quit() {
	if c.send("QUIT") == nil {
		c.reply(min(c.d.commandTimeout(), 5*time.Second), 2)
	}
	c.raw.Close()
}

// newText reads the replies of a session after its handshake.
func newText(c *smtpConn) *textproto.Reader {
	return textproto.NewReader(bufio.NewReaderSize(c.conn, 1024))
}
