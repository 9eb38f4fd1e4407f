// Package inbound is the receiving side of Mailbolt's mail: the SMTP
// listener of serve's --smtp-addr (NewServer) and the parsers of what
// arrives there, the machine-readable reports that mail systems send back
// about mail Mailbolt delivered: delivery status notifications (bounces
// and delay warnings, RFC 3464) and abuse feedback reports (complaints,
// RFC 5965 ARF).
//
// The listener never relays and offers no AUTH. It takes mail only for
// the recipients its Handler accepts (app.Inbound takes VERP return paths
// whose MAC verifies, the feedback-loop address, unsubscribe addresses, and
// the routed addresses of verified inbound domains) and refuses the rest
// with 550 5.7.1, or with the Reply the Handler chose (550 5.1.1 for an
// unrouted address, 452 over a quota); it hands each whole message to
// Handler.Deliver, with the Envelope (client address, HELO name,
// reverse-path), and acknowledges it once Deliver returns.
// Options.MaxMessageSize is the SIZE the EHLO answer advertises (RFC 1870);
// messages over it are refused with 552 5.3.4, at MAIL FROM when SIZE=
// declares it and at the end of DATA otherwise (with DATA, one of exactly
// the limit too: see NewServer), and the connection of one that goes on
// past about four times the limit is closed.
//
// ParseReceived reads a message received for an inbound domain into its
// header fields, decoded addresses and subject, text and HTML bodies and
// attachments (charsets decoded by this parser alone), never failing. What a report
// means for a message (a late bounce, a complaint, an unsubscribe) is
// decided by app and mta/queue; this package only reads.
//
// ParseDSN and ParseARF take a whole message as received and return its
// fields plus what identifies the original message: the Message-ID and
// envelope sender found in the returned message or its headers. Mailbolt's
// envelope sender is a VERP address of one recipient, carrying the message
// id, the recipient's index and a MAC (see queue.ReturnPath in mta/queue);
// ParseVERP reads it back and leaves the MAC to be checked by its caller.
// app.Inbound matches a report to its message and recipient through that
// address alone: the envelope recipient, or for the feedback-loop address
// the returned message's Return-Path.
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
package inbound
