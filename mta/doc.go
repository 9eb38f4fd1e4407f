// Package mta is Mailbolt's outbound SMTP client and its bounce
// classification.
//
// A Deliverer hands a message to the next hop: a relay (--relay) or the
// recipient domain's MX hosts (never at an address of netguard's refused
// ranges unless Options.MXGuard allows it), with opportunistic STARTTLS, pipelining,
// one transaction per recipient domain, and connections kept open and
// capped per host (deliver.go states the failure rules). Each recipient
// gets a RecipientResult; a failure carries its Bounce, which Classify
// reads from the reply's codes and text with the tables of bounce.go
// (printed in docs/bounces.md).
//
// The rest of the mail side lives in subpackages: mta/dns (the resolver
// everything shares), mta/dkim (keys and signing), mta/message (MIME
// building, link and pixel tracking), mta/inbound (the inbound listener and
// the DSN/ARF/VERP parsers) and mta/queue (the delivery worker that drives
// a Deliverer). This package imports only mta/dns and netguard of ours.
package mta
