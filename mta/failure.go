package mta

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/emersion/go-smtp"
)

// DeliveryError is why mail for a recipient was not delivered, in the shape
// of an SMTP reply: the reply a server gave, or one Mailbolt writes for a
// failure no server answered (DNS, connection, timeout), with Code 0 and an
// RFC 3463 enhanced code:
//
//	4.4.1  no connection could be made (refused, unreachable, connect timeout)
//	4.4.2  the connection broke or a reply did not come in time
//	4.4.3  DNS lookup failed (timeout, SERVFAIL)
//	4.3.5  Mailbolt is misconfigured (no resolver, bad relay address)
//	4.7.10 a relay could not be reached over verified TLS
//	5.1.2  the domain has no MX and no address records, or its mail host's
//	       every address is refused by Options.MXGuard (loopback, private…)
//	5.1.3  the address is malformed
//	5.1.10 the domain has a null MX (RFC 7505)
//	5.3.4  the message is larger than the server's SIZE
//	5.4.4  the MX hosts have no address records
//	5.6.3  an 8-bit message that cannot be made 7-bit, to a server
//	       without 8BITMIME (RFC 6152)
//	5.6.7  a non-ASCII address, or a message with a UTF-8 header, to a
//	       server without SMTPUTF8 (RFC 6531)
type DeliveryError struct {
	Code      int    // the server's reply code; 0 when no server answered
	Enhanced  string // "5.1.1", or "" when the server gave none
	Text      string // the server's text, or a description of the local failure
	Host      string // the host that answered or could not be reached; "" for routing failures
	Permanent bool   // bounce now rather than retry
}

func (e *DeliveryError) Error() string {
	s := e.Text
	if e.Enhanced != "" {
		s = e.Enhanced + " " + s
	}
	if e.Code != 0 {
		s = fmt.Sprintf("%d %s", e.Code, s)
	}
	if e.Host != "" {
		s = e.Host + ": " + s
	}
	return s
}

// Bounce classifies the failure.
func (e *DeliveryError) Bounce() Bounce { return Classify(e.Code, e.Enhanced, e.Text) }

// result is the failure as the outcome for one recipient.
func (e *DeliveryError) result(rcpt string, tls bool) RecipientResult {
	status := StatusTemporary
	if e.Permanent {
		status = StatusPermanent
	}
	return RecipientResult{
		Recipient: rcpt, Status: status, Code: e.Code, Enhanced: e.Enhanced, Text: e.Text,
		Host: e.Host, TLS: tls, Bounce: e.Bounce(),
	}
}

// isReply reports whether a server gave this answer, as opposed to a
// failure of the connection (after which the connection is unusable).
func (e *DeliveryError) isReply() bool { return e.Code != 0 }

// localError is a failure that no server reply describes.
func localError(permanent bool, enhanced, format string, args ...any) *DeliveryError {
	return &DeliveryError{Enhanced: enhanced, Text: fmt.Sprintf(format, args...), Permanent: permanent}
}

// replyError turns what go-smtp returned into a DeliveryError: an
// *smtp.SMTPError is the server's reply (permanent when 5xx); anything else
// is the connection failing, which is temporary. A timeout says so in the
// text, which classifies it as CategoryTimeout.
func replyError(host string, err error) *DeliveryError {
	var de *DeliveryError
	if errors.As(err, &de) {
		return de
	}
	var re *replyErr
	if errors.As(err, &re) {
		enhanced, text := splitReply(re.text)
		return &DeliveryError{Code: re.code, Enhanced: enhanced, Text: text, Host: host, Permanent: re.code/100 == 5}
	}
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		e := &DeliveryError{Code: se.Code, Text: se.Message, Host: host, Permanent: se.Code/100 == 5}
		if se.EnhancedCode != smtp.EnhancedCodeNotSet && se.EnhancedCode != smtp.NoEnhancedCode {
			e.Enhanced = fmt.Sprintf("%d.%d.%d", se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2])
		}
		return e
	}
	e := localError(false, "4.4.2", "connection lost: %v", err)
	if isTimeout(err) {
		e.Text = fmt.Sprintf("timed out waiting for the server: %v", err)
	}
	e.Host = host
	return e
}

// splitReply splits a reply's text into its enhanced status code and the
// rest, without the code that RFC 2034 lets each further line repeat.
func splitReply(reply string) (enhanced, text string) {
	enhanced, text = splitEnhanced(reply)
	if enhanced != "" {
		text = strings.ReplaceAll(text, "\n"+enhanced+" ", "\n")
	}
	return enhanced, text
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// summarize picks the failure to report after every hop failed: permanent
// only when every hop failed permanently (a later attempt cannot do
// better), otherwise the last temporary one.
func summarize(errs []*DeliveryError) *DeliveryError {
	if len(errs) == 0 {
		return localError(false, "4.4.4", "no host to try")
	}
	var last *DeliveryError
	for _, e := range errs {
		if !e.Permanent {
			last = e
		}
	}
	if last != nil {
		return last
	}
	return errs[len(errs)-1]
}
