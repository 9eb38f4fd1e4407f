// Package message writes the bytes of an outgoing message and prepares its
// HTML for tracking. Nothing here does I/O or looks DNS up.
//
// Build turns a Message (addresses, subject, text and HTML bodies, inline
// images and attachments, custom headers, List-Unsubscribe) into RFC 5322
// bytes with CRLF line endings and a MIME tree chosen by what is present,
// written with github.com/emersion/go-message; ValidateHeader checks one
// custom header field the way Build does, so the API can refuse it first.
// Errors wrap ErrHeaderName, ErrHeaderValue, ErrReservedHeader,
// ErrAddress, ErrAttachment or ErrNoBody.
//
// RewriteLinks replaces the destination of each trackable link in an HTML
// body by a click-tracking URL, and InsertPixel adds the open-tracking
// image; both change only the bytes they must (see tracking.go). Signing
// is package mta/dkim's, and the tracking URLs themselves are made by the
// caller (app).
package message
