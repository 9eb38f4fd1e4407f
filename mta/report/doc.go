// Package report reads the machine-readable reports that mail systems send
// back about mail Mailbolt delivered: delivery status notifications
// (bounces and delay warnings, RFC 3464) and abuse feedback reports
// (complaints, RFC 5965 ARF). They are what the inbound SMTP listener (the
// --smtp-addr of serve) will hand each message it receives for the bounce
// domain; the listener is not built yet.
//
// ParseDSN and ParseARF take a whole message as received and return its
// fields plus what identifies the original message: the Message-ID and
// envelope sender found in the returned message or its headers. Mailbolt's
// envelope sender is a VERP address carrying the message id (see
// app.ReturnPath); ParseVERP reads it back. A report is matched to its
// message through a VERP address first and the original Message-ID second.
//
// Multipart structure, part headers, transfer encodings and charsets are
// read with github.com/emersion/go-message. The report bodies (the
// delivery-status and feedback-report parts, header-like groups of fields)
// and the header blocks (the report's own and the returned message's) are
// read here by a reader more forgiving than a message header parser: mail
// from real MTAs folds, mixes line endings and breaks the syntax in small
// ways, and a report that can still be understood is not refused.
// Anything that is not a report of the asked kind is ErrNotDSN or
// ErrNotARF, never a panic.
package report
