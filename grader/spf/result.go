package spf

import "errors"

// Result is the outcome of check_host() (RFC 7208 §2.6), spelled as in
// Received-SPF and Authentication-Results headers.
type Result string

// The seven results of RFC 7208 §2.6.
const (
	None      Result = "none"      // no record, or no usable domain (§2.6.1)
	Neutral   Result = "neutral"   // the record states nothing about ip (§2.6.2)
	Pass      Result = "pass"      // ip is authorized (§2.6.3)
	Fail      Result = "fail"      // ip is not authorized (§2.6.4)
	SoftFail  Result = "softfail"  // probably not authorized (§2.6.5)
	TempError Result = "temperror" // transient DNS trouble (§2.6.6)
	PermError Result = "permerror" // the published records are broken (§2.6.7)
)

// Errors that explain a TempError or PermError. The error Check returns
// wraps one of them (errors.Is), together with the term or name at fault.
var (
	// ErrDNS: a lookup failed without an answer (TempError). It also wraps
	// the Resolver's own error.
	ErrDNS = errors.New("spf: DNS lookup failed")
	// ErrSyntax: a record or macro string breaks the grammar (PermError).
	ErrSyntax = errors.New("spf: syntax error")
	// ErrMultipleRecords: more than one v=spf1 record at a name (§4.5).
	ErrMultipleRecords = errors.New("spf: more than one v=spf1 record")
	// ErrNoRecord: an include or redirect target publishes no record.
	ErrNoRecord = errors.New("spf: target has no SPF record")
	// ErrTooManyLookups: more than 10 DNS-querying terms (§4.6.4).
	ErrTooManyLookups = errors.New("spf: more than 10 DNS lookups")
	// ErrTooManyVoidLookups: too many lookups answered with nothing (§4.6.4).
	ErrTooManyVoidLookups = errors.New("spf: too many void DNS lookups")
	// ErrTooManyMX: an "mx" target has more than 10 MX records (§4.6.4).
	ErrTooManyMX = errors.New("spf: more than 10 MX records")
	// ErrInvalidIP: the client address given to Check is not an IP address.
	// It is the caller's mistake, so the result that goes with it is None.
	ErrInvalidIP = errors.New("spf: invalid client IP address")
)
