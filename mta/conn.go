package mta

import (
	"net"
	"net/textproto"
	"time"

	"github.com/emersion/go-smtp"
)

// smtpConn is an SMTP session with one host, past EHLO (and STARTTLS and
// AUTH), between transactions.
//
// go-smtp runs the handshake (client); the transactions that follow are
// run here (transaction.go), pipelined when the server offers it.
type smtpConn struct {
	d      *Deliverer
	pool   *hostPool
	key    connKey
	host   string
	raw    net.Conn // the TCP connection under any TLS
	conn   net.Conn // the session's connection: raw, or TLS over it
	client *smtp.Client
	text   *textproto.Reader // replies on conn, after the handshake
	wbuf   []byte            // commands or the message being written
	// lastCode and lastText are the last reply read.
	lastCode int
	lastText string
	tls      bool
	// tlsVersion names the negotiated TLS version when tls is set;
	// verified says its certificate was verified (security.go).
	tlsVersion string
	verified   bool
	uses       int         // transactions run
	timer      *time.Timer // closes the connection when idle too long; guarded by pool.mu
	// clean says the last transaction ended with the reply to its final
	// dot, so the session is ready for MAIL FROM without RSET; idleAt is
	// when it was put back in the pool.
	clean  bool
	idleAt time.Time
	// unprobed says this use skipped the RSET liveness probe: a MAIL FROM
	// that fails without a reply is then a stale connection, not a failure.
	unprobed bool
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
