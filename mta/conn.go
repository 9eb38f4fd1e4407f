package mta

import (
	"context"
	"net"
	"time"

	"github.com/emersion/go-smtp"
)

// smtpConn is an SMTP session with one host, past EHLO (and STARTTLS and
// AUTH), between transactions.
//
// go-smtp's client is lock-step: it sends a command and reads its reply
// before the next, even when the server offers PIPELINING (RFC 2920), so a
// transaction costs one round trip per command. It also forgets the EHLO
// after RSET and says EHLO again before the next MAIL FROM.
type smtpConn struct {
	d      *Deliverer
	pool   *hostPool
	key    connKey
	host   string
	raw    net.Conn // the TCP connection under any TLS
	client *smtp.Client
	tls    bool
	uses   int         // transactions run
	timer  *time.Timer // closes the connection when idle too long; guarded by pool.mu
	// clean says the last transaction ended with the reply to its final
	// dot, so the session is ready for MAIL FROM without RSET; idleAt is
	// when it was put back in the pool.
	clean  bool
	idleAt time.Time
	// unprobed says this use skipped the RSET liveness probe: a MAIL FROM
	// that fails without a reply is then a stale connection, not a failure.
	unprobed bool
}

// transact runs one mail transaction: MAIL FROM, RCPT TO for each
// recipient, DATA once for those accepted. It reports whether the session
// can be used again.
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

	opts := &smtp.MailOptions{Size: int64(len(env.Data))} // sent when SIZE is offered (RFC 1870)
	if limit, ok := c.client.MaxMessageSize(); ok && limit > 0 && len(env.Data) > limit {
		e := localError(true, "5.3.4", "message of %d bytes exceeds the %d bytes %s accepts", len(env.Data), limit, c.host)
		e.Host = c.host
		failAll(all, e)
		return results, true
	}
	if needsSMTPUTF8(env.From, rcpts) {
		if ok, _ := c.client.Extension("SMTPUTF8"); !ok {
			e := localError(true, "5.6.7", "non-ASCII address, and %s does not offer SMTPUTF8", c.host)
			e.Host = c.host
			failAll(all, e)
			return results, true
		}
		opts.UTF8 = true
	}

	c.clean = false
	if err := c.client.Mail(env.From, opts); err != nil {
		e, ok := fail(err)
		if c.unprobed && (!e.isReply() || e.Code == 421) && ctx.Err() == nil {
			// The server closed the idle session (or is closing it):
			// nothing was sent; the caller goes again on a probed one.
			return nil, false
		}
		failAll(all, e)
		return results, ok
	}
	var accepted []int
	for i, to := range rcpts {
		err := c.client.Rcpt(to, nil)
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
		return results, true // the next use starts with RSET
	}
	w, err := c.client.Data()
	if err != nil {
		e, ok := fail(err)
		failAll(accepted, e)
		return results, ok
	}
	// go-smtp bounds replies but not the writes of the message body.
	c.raw.SetDeadline(time.Now().Add(c.d.dataTimeout()))
	_, err = w.Write(env.Data)
	var resp *smtp.DataResponse
	if err == nil {
		resp, err = w.CloseWithResponse()
	}
	if err != nil {
		e, ok := fail(err)
		failAll(accepted, e)
		c.clean = ok && e.isReply() // a reply to the final dot ends the transaction
		return results, ok
	}
	c.clean = true
	enhanced, text := splitEnhanced(resp.StatusText)
	for _, i := range accepted {
		results[i] = RecipientResult{
			Recipient: rcpts[i], Status: StatusDelivered, Code: 250, Enhanced: enhanced, Text: text,
			Host: c.host, TLS: c.tls,
		}
	}
	return results, true
}

// reset prepares a reused session for a new transaction.
func (c *smtpConn) reset(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { c.raw.Close() })
	defer stop()
	return c.client.Reset()
}

// quit ends the session with QUIT, not waiting long for the answer.
func (c *smtpConn) quit() {
	c.client.CommandTimeout = min(c.client.CommandTimeout, 5*time.Second)
	if err := c.client.Quit(); err != nil {
		c.raw.Close()
	}
}

// needsSMTPUTF8 reports an envelope address outside ASCII (RFC 6531).
func needsSMTPUTF8(from string, rcpts []string) bool {
	for _, s := range append([]string{from}, rcpts...) {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return true
			}
		}
	}
	return false
}
